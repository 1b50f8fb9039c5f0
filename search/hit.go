package search

import (
	"slices"
	"strconv"

	"github.com/brainstem/brainstem/brain/injection"
	"github.com/brainstem/brainstem/internal/jsontext"
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
func RenderHit(h Hit) []byte { return AppendHit(make([]byte, 0, hitSize(h)), h) }

// hitSize is about the bytes of h encoded: its names and punctuation, and
// its strings with a little room for escapes.
func hitSize(h Hit) int {
	n := 128 + len(h.ID) + len(h.Wing) + len(h.Hall) + len(h.Title) + len(h.Snippet) + len(h.Path) + len(h.ContentHash)
	for _, f := range h.Flags {
		n += 24 + len(f.Rule) + len(f.Why)
	}
	return n + n/16
}

// AppendHit appends h as brain.Marshal encodes it (field order and
// omissions of Hit, no HTML escaping), written by hand: a search renders
// every hit it answers, and encoding/json's reflection was most of that.
// A score that is not a finite number, which the index never gives, is
// written as null.
func AppendHit(dst []byte, h Hit) []byte {
	dst = appendFields(dst, `{"id":`, h.ID, `,"wing":`, h.Wing, `,"hall":`, h.Hall, `,"title":`, h.Title)
	dst = jsontext.AppendFloat(append(dst, `,"score":`...), h.Score)
	dst = appendFields(dst, `,"snippet":`, h.Snippet, `,"path":`, h.Path, `,"content_hash":`, h.ContentHash)
	if h.Unreviewed {
		dst = append(dst, `,"unreviewed":true`...)
	}
	if len(h.Flags) > 0 {
		dst = append(dst, `,"flags":[`...)
		for i, f := range h.Flags {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(appendFields(dst, `{"rule":`, f.Rule, `,"why":`, f.Why), '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendFields appends pairs of a key, as it is (punctuation and name), and
// a value, as a JSON string.
func appendFields(dst []byte, kv ...string) []byte {
	for i := 0; i+1 < len(kv); i += 2 {
		dst = jsontext.AppendString(append(dst, kv[i]...), kv[i+1], false)
	}
	return dst
}

// AppendAnswer appends the answer to q of a search whose result in one
// wing is r, as brain.Marshal encodes Result: {"hits":[…],"total":N}, and
// for a call in the predecessor's shape (Query.Legacy) the hits again
// after them as "results", the predecessor's name for them. The shard
// writes it without reflection.
func (r Result) AppendAnswer(dst []byte, q Query) []byte {
	n := 40
	for _, h := range r.Hits {
		n += hitSize(h)
	}
	if q.Legacy {
		n *= 2
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, `{"hits":`...)
	dst = appendHits(dst, r.Hits)
	dst = append(dst, `,"total":`...)
	dst = strconv.AppendInt(dst, r.Total, 10)
	if q.Legacy {
		dst = append(dst, `,"results":`...)
		dst = appendHits(dst, r.Hits)
	}
	return append(dst, '}')
}

func appendHits(dst []byte, hits []Hit) []byte {
	if hits == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, h := range hits {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendHit(dst, h)
	}
	return append(dst, ']')
}
