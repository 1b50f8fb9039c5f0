package search

import (
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
)

// Tool is the name of the search tool, the one tool the gateway runs
// across wings (its Spec's Fanout is toolspec.FanoutSearch).
const Tool = "brain_query"

// The limit argument: the default, and the most hits one call returns, in
// one wing or merged across wings. Both sides apply them (Spec).
const (
	DefaultLimit = 10
	MaxLimit     = 50
)

// SnippetRunes bounds a hit's snippet.
const SnippetRunes = 200

// Hit is one hit of a result, its fields in this order:
// {"id","wing","hall","title","score","snippet","path","content_hash"}
// and, for a note of the inbox, "unreviewed":true after them, and for a
// note the injection audit flags, "flags":[{"rule","why"}] last (a hook
// leaves such a hit out of what it injects). A cross-wing search carries
// each wing's hit bytes unchanged.
type Hit struct {
	ID          string  `json:"id"` // "" for an inbox note
	Wing        string  `json:"wing"`
	Hall        string  `json:"hall"`
	Title       string  `json:"title"`
	Score       float64 `json:"score"`
	Snippet     string  `json:"snippet"`
	Path        string  `json:"path"`
	ContentHash string  `json:"content_hash"`
	Unreviewed  bool    `json:"unreviewed,omitempty"`
	// Flags are the injection audit's findings on the note's bytes
	// (brain/injection), omitted when there are none.
	Flags []injection.Flag `json:"flags,omitempty"`
}

// Result is a search's answer in one wing: {"hits":[…],"total"}, total
// being the number of matching notes however many hits are returned.
type Result struct {
	Hits  []Hit `json:"hits"`
	Total int64 `json:"total"`
}

// LegacyResult is a search's answer in one wing to a call in the
// predecessor's shape (Query.Legacy): Result, and the hits again as
// "results", the predecessor's name for them.
type LegacyResult struct {
	Result
	Results []Hit `json:"results"`
}

// Answer is the answer to q of a search whose result in one wing is r.
func (r Result) Answer(q Query) any {
	if q.Legacy {
		return LegacyResult{Result: r, Results: r.Hits}
	}
	return r
}

// Ranked is a hit of the rank step: its key (the note id, or the path of an
// inbox note) and its score under the statistics ranked with.
type Ranked struct {
	Key   string
	Score float64
}

// Less orders hits for a result: higher score first, then smaller key.
func (a Ranked) Less(b Ranked) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Key < b.Key
}

// RenderHit encodes one hit as a result carries it.
func RenderHit(h Hit) ([]byte, error) { return brain.Marshal(h) }
