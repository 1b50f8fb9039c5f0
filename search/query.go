package search

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
)

// Limits bound a query. A zero field takes its default; the gateway, which
// does not know a shard's limits, decodes with NoLimits and leaves them to
// the shards (ServeRank applies them with Check).
type Limits struct {
	MaxQueryBytes int // default 1,024
	MaxQueryTerms int // searchable words, duplicates counted; default 32
}

// DefaultLimits returns the limits a zero Limits stands for.
func DefaultLimits() Limits { return Limits{MaxQueryBytes: 1024, MaxQueryTerms: 32} }

// WithDefaults fills zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.MaxQueryBytes <= 0 {
		l.MaxQueryBytes = d.MaxQueryBytes
	}
	if l.MaxQueryTerms <= 0 {
		l.MaxQueryTerms = d.MaxQueryTerms
	}
	return l
}

// NoLimits returns the limits of a decoder that leaves the size of a query
// to the shards: the gateway decodes a cross-wing query with them.
func NoLimits() Limits { return Limits{MaxQueryBytes: -1, MaxQueryTerms: -1} }

// Query is brain_query's arguments decoded, checked and tokenized once.
type Query struct {
	Text   string
	Terms  []string // the distinct terms, in order of first appearance (Terms)
	Tokens int      // the searchable words, duplicates counted, for MaxQueryTerms
	Hall   string   // "" for every hall
	Scope  string   // ScopeWiki, ScopeInbox or ScopeAll
	Limit  int
	// Legacy marks a call in the predecessor's shape (Spec's Legacy): its
	// answer carries the hits again as "results" (Result.Answer,
	// EnvelopeFor). The wings need not know it: it is not sent to them.
	Legacy bool
}

// The scopes of a search: the curated notes, the notes waiting in the
// inbox for a curator (their hits marked unreviewed), or both.
const (
	ScopeWiki  = "wiki"
	ScopeInbox = "inbox"
	ScopeAll   = "all"
)

// Scopes returns the scopes, in a fixed order.
func Scopes() []string { return []string{ScopeWiki, ScopeInbox, ScopeAll} }

// ScopeIndex is the position of scope in Scopes (0 for an unknown one).
func ScopeIndex(scope string) int { return max(slices.Index(Scopes(), scope), 0) }

// Args are brain_query's arguments as the JSON carries them.
type Args struct {
	Query string `json:"query"`
	Wing  string `json:"wing"`
	Hall  string `json:"hall"`
	Scope string `json:"scope"`
	Limit int    `json:"limit"`
	// Legacy is set by the decode of a call in the predecessor's shape.
	Legacy bool `json:"-"`
}

// legacyArgs are brain_query's arguments in the predecessor's shape.
type legacyArgs struct {
	Query string `json:"query"`
	Limit int    `json:"limit"`
}

// LegacyDefaultLimit is the predecessor's default number of hits.
const LegacyDefaultLimit = 5

// Tokenized tokenizes the arguments once into the query they ask for.
func (a *Args) Tokenized() Query {
	toks := Tokenize(a.Query)
	q := Query{Text: a.Query, Tokens: len(toks), Hall: a.Hall, Scope: cmp.Or(a.Scope, ScopeWiki), Limit: a.Limit, Legacy: a.Legacy}
	for _, t := range toks {
		if len(q.Terms) < MaxQueryTerms && !slices.Contains(q.Terms, t) {
			q.Terms = append(q.Terms, t)
		}
	}
	return q
}

// Check applies the limits to a query: its bytes and its searchable words.
// Its refusals are those of brain_query on one wing, word for word.
func Check(q Query, lim Limits) error {
	if lim == NoLimits() {
		return nil
	}
	lim = lim.WithDefaults()
	if len(q.Text) > lim.MaxQueryBytes {
		return brain.Errorf(brain.CodeTooLarge, "query is %d bytes, over the %d-byte limit: use fewer, more specific words", len(q.Text), lim.MaxQueryBytes)
	}
	if q.Tokens > lim.MaxQueryTerms {
		return brain.Errorf(brain.CodeTooLarge, "query has %d searchable words, the limit is %d: use fewer, more specific words", q.Tokens, lim.MaxQueryTerms)
	}
	return nil
}

// Spec is brain_query's declaration, with the limits its description
// gives (NoLimits: the gateway's copy, whose text no one reads).
func Spec(lim Limits) *toolspec.Spec {
	if lim != NoLimits() {
		lim = lim.WithDefaults()
	}
	return &toolspec.Spec{
		Name: Tool, Title: "Search the brain", Needs: brain.CapRead, ReadOnly: true, Idempotent: true, Fanout: toolspec.FanoutSearch,
		Result: Result{},
		Description: "Full-text (BM25) search over the curated notes of the team brain. Use it first whenever you need " +
			"what the team already knows, decided or learned (facts, decisions, failures, hypotheses, sources) before " +
			"answering or writing. Returns {hits:[{id, wing, hall, title, score, snippet, path, content_hash, unreviewed?}], total}, " +
			"best first; total is the number of notes that match (in every wing searched), however many hits are returned. " +
			"With scope inbox or all it also searches the notes waiting for a curator: their hits have unreviewed: true and " +
			"no id (read them by path). Fetch a hit's full text with brain_get. Without wing, the gateway searches every wing you can read.",
		Args: []toolspec.Arg{
			{Name: "query", Type: toolspec.String, Required: true, Min: toolspec.Int(1),
				Desc: fmt.Sprintf("Words to search for (at most %d bytes and %d searchable words; case and common English stop words are ignored).", lim.MaxQueryBytes, lim.MaxQueryTerms)},
			{Name: "wing", Type: toolspec.String, Route: toolspec.RouteWing,
				Desc: "The wing to act on. Optional: this shard serves exactly one wing, and a different value is an error. Through the gateway it picks the shard."},
			{Name: "hall", Type: toolspec.String, Enum: brain.Halls(), Missing: "one of " + brain.HallList, Desc: "Only search notes of this hall."},
			{Name: "scope", Type: toolspec.String, Enum: Scopes(), Desc: "What to search: the curated notes (wiki, the default), the inbox of notes waiting for review (inbox), or both (all)."},
			{Name: "limit", Type: toolspec.Integer, Min: toolspec.Int(1), Max: toolspec.Int(MaxLimit), Default: DefaultLimit, Desc: "Maximum number of hits."},
		},
		Legacy: legacyShape(lim),
	}
}

// legacyShape is the predecessor's brain_query: {query, limit}, searching
// the inbox and the wiki, 5 hits by default, the hits again as results.
func legacyShape(lim Limits) *toolspec.Legacy {
	return toolspec.LegacyShape([]toolspec.Arg{
		{Name: "query", Type: toolspec.String, Required: true, Min: toolspec.Int(1),
			Desc: fmt.Sprintf("Words to search for (at most %d bytes and %d searchable words).", lim.MaxQueryBytes, lim.MaxQueryTerms)},
		{Name: "limit", Type: toolspec.Integer, Min: toolspec.Int(1), Max: toolspec.Int(MaxLimit), Default: LegacyDefaultLimit, Desc: "Maximum number of hits."},
	}, fmt.Sprintf("A call naming only `query` and `limit` is the predecessor's: it searches the inbox and the wiki (scope `all`), "+
		"returns at most %d hits by default, and its answer carries the hits again as `results`, the predecessor's name for them "+
		"(through the gateway, after the cross-wing envelope's other fields). Name `wing`, `hall` or `scope` for this tool's own "+
		"defaults (the wiki, %d hits) and answer.", LegacyDefaultLimit, DefaultLimit),
		func(l *legacyArgs, a *Args) error {
			a.Query, a.Limit, a.Scope, a.Legacy = l.Query, l.Limit, ScopeAll, true
			return nil
		})
}
