package search

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
)

// Wing is one wing as a search across wings asks it: the gateway
// implements it over proto, with the caller's shard token, and returns a
// failure already described for the caller (a wing that failed is left out
// of the search, and the failure is the gateway's to name: Left).
type Wing interface {
	Name() string // as the answer names it
	Stats(ctx context.Context, req *StatsRequest) (*StatsResponse, error)
	Rank(ctx context.Context, req *RankRequest) (*RankResponse, error)
	Fetch(ctx context.Context, req *FetchRequest) (*FetchResponse, error)
	// Left is how the answer names the wing, left out for the failure
	// err; named is false for a failure the caller must not be told of.
	Left(err error) (left toolspec.UnavailableWing, named bool)
}

// DecodeQuery decodes, checks and tokenizes a search's arguments once, with
// the search tool's spec (Spec): a structural refusal is the one a wing
// would give.
func DecodeQuery(spec *toolspec.Spec, args []byte) (Query, error) {
	var a Args
	if err := spec.Decode(args, &a); err != nil {
		return Query{}, err
	}
	return a.Tokenized(), nil
}

// Fanout is one search across the wings the caller may read (protocol.go):
// the statistics step (Gather, from Replica or asked), the rank and fetch
// steps, the merged hits and the answer, with the wings left out. The
// gateway decides which wings the caller may read, and how a failure is
// told (Wing.Left).
type Fanout struct {
	Query Query
	Wings []Wing
	// Replica holds the wings' statistics between searches; Index is each
	// wing's index among the gateway's wings, its place there.
	Replica *Replica
	Index   []int
	// Of each wing: its statistics of the query's terms and the generation
	// they are of; Errs is its failure, nil while it is in the search.
	Stats []Stats
	Gens  []uint64
	Errs  []error
	// Refused is a wing's refusal of the query (its tool error document),
	// from the rank step.
	Refused [][]byte
	// Answered: the wing ranked, and is in the answer.
	Answered []bool
	// Each runs fn for every wing whose errs entry is nil, concurrently
	// (the gateway bounds how many at once), and returns when all have.
	Each func(errs []error, fn func(i int))
	// Left are the wings left out, as the caller is told, in the order they
	// were: the gateway's (a wing it could not ask), Rank's, then Fetch's.
	Left []toolspec.UnavailableWing

	ranks    []WingRank
	picks    []Pick              // merged and cut to the limit
	rendered []map[string][]byte // each wing's rendered hits by key
}

// Gather is the statistics step, within ctx: each wing's statistics of
// the query's terms and the generation they are of, from Replica when it
// holds them, else asked (Stats) and put there. reused counts the wings
// Replica answered for.
func (f *Fanout) Gather(ctx context.Context) (reused int) {
	n := len(f.Wings)
	f.Stats, f.Gens, f.Errs = make([]Stats, n), make([]uint64, n), make([]error, n)
	for i := range f.Wings {
		var held bool
		if f.Stats[i], f.Gens[i], held = f.Replica.Lookup(f.slot(i), f.Query.Terms); held {
			f.Errs[i] = errNotAsked
			reused++
		}
	}
	if reused < n {
		f.Each(f.Errs, func(i int) {
			resp, err := f.Wings[i].Stats(ctx, &StatsRequest{Terms: f.Query.Terms, Scope: f.Query.Scope})
			if err != nil {
				f.Errs[i] = err
				return
			}
			f.Stats[i], f.Gens[i] = resp.Stats, resp.Generation
			f.Replica.Put(f.slot(i), resp.Generation, resp.Stats)
		})
	}
	for i, err := range f.Errs {
		if err == errNotAsked {
			f.Errs[i] = nil
		}
	}
	return reused
}

// slot is a wing's place in Replica for the query's scope: each scope's
// statistics are a wing's own.
func (f *Fanout) slot(i int) int {
	return f.Index[i]*len(Scopes()) + ScopeIndex(f.Query.Scope)
}

// Global sums the statistics of the wings still in the search.
func (f *Fanout) Global() *Stats {
	sum := &Stats{DocFreq: map[string]int64{}}
	for i := range f.Wings {
		if f.Errs[i] == nil {
			sum.Add(f.Stats[i])
		}
	}
	return sum
}

// rankRounds bounds how often a search ranks again because a wing changed
// meanwhile; the last round takes each wing as it is.
const rankRounds = 3

// Rank is the rank step: each wing still in the search ranks its notes with
// the global statistics, again while some wing answers that it changed
// (Stale), at most rankRounds times, the last round taking each wing as it
// is. The wings that ranked are Answered, and their hits merged and cut to
// the limit; those that failed or refused the query are Left. again is how
// many rounds were run again.
func (f *Fanout) Rank(ctx context.Context) (again int) {
	f.ranks, f.Answered = make([]WingRank, len(f.Wings)), make([]bool, len(f.Wings))
	f.Refused = make([][]byte, len(f.Wings))
	for round := 1; round <= rankRounds && f.rankRound(ctx, round == rankRounds); round++ {
		again++
	}
	for i, w := range f.Wings {
		f.Answered[i] = f.Errs[i] == nil && f.Refused[i] == nil
		switch {
		case f.Errs[i] != nil:
			f.leave(w, f.Errs[i])
		case f.Refused[i] != nil:
			code, msg := refusal(f.Refused[i])
			f.Left = append(f.Left, toolspec.UnavailableWing{Wing: w.Name(), Code: code, Error: msg})
		}
	}
	if slices.Contains(f.Answered, true) {
		f.picks = Merge(f.ranks, f.Answered, f.Query.Limit)
	}
	return again
}

// rankRound asks every wing still in the search to rank with the current
// global statistics, assuming the generations they are of (unless last).
// It reports whether some wing was stale: its fresh statistics are taken,
// and the round must be run again.
func (f *Fanout) rankRound(ctx context.Context, last bool) (again bool) {
	global := f.Global()
	stale := make([]bool, len(f.Wings))
	f.rendered = make([]map[string][]byte, len(f.Wings))
	f.Each(f.Errs, func(i int) {
		req := &RankRequest{Query: f.Query, Stats: global, Render: renderAhead(f.Query.Limit, f.Stats[i].Docs, global.Docs)}
		if !last {
			req.Generation = f.Gens[i]
		}
		resp, err := f.Wings[i].Rank(ctx, req)
		switch {
		case err != nil:
			f.Errs[i] = err
		case resp.Refused != nil:
			f.Refused[i] = resp.Refused
		case resp.Stale && resp.Stats != nil:
			stale[i] = true
			f.Stats[i], f.Gens[i] = *resp.Stats, resp.Generation
			f.Replica.Put(f.slot(i), resp.Generation, *resp.Stats)
		default:
			f.ranks[i] = WingRank{Ranked: resp.Ranked, Total: resp.Total}
			f.rendered[i] = hitsByKey(rankedKeys(resp.Ranked, len(resp.Hits)), resp.Hits)
		}
	})
	return slices.Contains(stale, true)
}

// renderAhead is how many of its best hits a wing renders in the rank
// step: its expected share of the final hits (its share of the notes)
// plus one, so that most searches need no fetch step, at the cost of a
// few hits rendered that the merge throws away.
func renderAhead(limit int, docs, total int64) int {
	if total <= 0 {
		return limit
	}
	return min(limit, int((int64(limit)*docs+total-1)/total)+1)
}

// rankedKeys are the keys of the first n ranked hits, and every later
// one: a wing renders its hits in rank order, leaving out those that went,
// so a hit may belong to a key beyond the first n.
func rankedKeys(ranked []Ranked, n int) []string {
	if n == 0 {
		return nil
	}
	keys := make([]string, len(ranked))
	for i, r := range ranked {
		keys[i] = r.Key
	}
	return keys
}

// errNotAsked marks a wing a step does not ask.
var errNotAsked = errors.New("search: wing not asked")

// Fetch is the fetch step: the wings holding final hits they did not
// render ahead render those hits, and only those. A wing that fails here is
// left out altogether, its hits and its notes' count, and Left.
func (f *Fanout) Fetch(ctx context.Context) {
	keys := make([][]string, len(f.Wings))
	for _, p := range f.picks {
		if _, ok := f.rendered[p.Wing][p.Key]; !ok {
			keys[p.Wing] = append(keys[p.Wing], p.Key)
		}
	}
	errs := make([]error, len(f.Wings))
	for i := range f.Wings {
		if len(keys[i]) == 0 {
			errs[i] = errNotAsked
		}
	}
	global := f.Global()
	f.Each(errs, func(i int) {
		resp, err := f.Wings[i].Fetch(ctx, &FetchRequest{Query: f.Query, Keys: keys[i], Stats: global})
		if err != nil {
			errs[i] = err
			return
		}
		if f.rendered[i] == nil {
			f.rendered[i] = map[string][]byte{}
		}
		maps.Copy(f.rendered[i], hitsByKey(keys[i], resp.Hits))
	})
	for i, w := range f.Wings {
		if errs[i] != nil && errs[i] != errNotAsked {
			f.Answered[i], f.ranks[i].Total = false, 0
			f.leave(w, errs[i])
		}
	}
}

// hitsByKey matches a wing's rendered hits with the keys asked for. The
// wing answers them in the order asked, leaving out the ones that went or
// no longer match, so each hit belongs to the first key left whose quoted
// form it carries as a value (a key is a note id or a brain path, which
// JSON quotes alike): no hit is decoded.
func hitsByKey(keys []string, hits [][]byte) map[string][]byte {
	out := make(map[string][]byte, len(hits))
	var needle []byte
	quoted := func(key string) []byte {
		needle = strconv.AppendQuote(append(needle[:0], ':'), key)
		return needle
	}
	k := 0
	for _, h := range hits {
		for k < len(keys) && !bytes.Contains(h, quoted(keys[k])) {
			k++
		}
		if k < len(keys) {
			out[keys[k]] = h
			k++
		}
	}
	return out
}

// Hits are the search's final hits in merged order, each one's bytes as its
// wing rendered them (a hit whose note changed or went between the steps
// is left out), and the sum of the answered wings' numbers of matching
// notes.
func (f *Fanout) Hits() (hits [][]byte, total int64) {
	for _, p := range f.picks {
		if !f.Answered[p.Wing] {
			continue
		}
		if raw, ok := f.rendered[p.Wing][p.Key]; ok {
			hits = append(hits, raw)
		}
	}
	for i := range f.Wings {
		if f.Answered[i] {
			total += f.ranks[i].Total
		}
	}
	return hits, total
}

// Answer is the search's answer (EnvelopeFor): the final hits in merged
// order, each one's bytes as its wing rendered them (Hits), the total, the
// wings that answered and those Left.
func (f *Fanout) Answer() []byte {
	hits, total := f.Hits()
	var names []string
	for i, w := range f.Wings {
		if f.Answered[i] {
			names = append(names, w.Name())
		}
	}
	var left []byte
	if len(f.Left) > 0 {
		left, _ = brain.Marshal(f.Left)
	}
	return EnvelopeFor(f.Query, hits, total, names, left)
}

// Refusal is the first wing's refusal of the query (Refused), nil when no
// wing refused it.
func (f *Fanout) Refusal() []byte {
	if i := slices.IndexFunc(f.Refused, func(r []byte) bool { return r != nil }); i >= 0 {
		return f.Refused[i]
	}
	return nil
}

// leave lists a wing's failure in Left, as the wing names it.
func (f *Fanout) leave(w Wing, err error) {
	if left, named := w.Left(err); named {
		f.Left = append(f.Left, left)
	}
}

// LeftNames are the names of the wings Left (nil when none).
func (f *Fanout) LeftNames() []string {
	if len(f.Left) == 0 {
		return nil
	}
	out := make([]string, len(f.Left))
	for i, w := range f.Left {
		out[i] = w.Wing
	}
	return out
}

// LeftErrors is every Left wing's message, for an error that names them
// all.
func (f *Fanout) LeftErrors() string {
	msgs := make([]string, len(f.Left))
	for i, w := range f.Left {
		msgs[i] = w.Error
	}
	return strings.Join(msgs, "; ")
}

// refusal reads a wing's tool error document (brain.DecodeError).
func refusal(result []byte) (brain.Code, string) {
	if code, msg, ok := brain.DecodeError(result); ok {
		return code, msg
	}
	return brain.CodeInternal, "the wing answered an error without a code"
}
