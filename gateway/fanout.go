package gateway

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/search"
)

// wingsToolName is the gateway's own tool.
const wingsToolName = toolspec.WingsTool

// unavailableWing reports a wing left out of a cross-wing answer.
type unavailableWing = toolspec.UnavailableWing

// queryOf decodes, checks and tokenizes a cross-wing search's arguments,
// once, with the search tool's own spec: a structural refusal is the one a
// wing would give. The size limits are the wings' (search.ServeRank).
func (g *Gateway) queryOf(args []byte) (search.Query, error) {
	var a search.Args
	if err := g.searchSpec.Decode(args, &a); err != nil {
		return search.Query{}, err
	}
	return a.Tokenized(), nil
}

// fanoutQuery runs a search over every wing the caller may read, every wing
// in parallel (the protocol is in search/protocol.go):
//
//  1. grants and statistics: the caller's capabilities in each wing
//     (minting if needed) and, where they may read, the wing's statistics
//     of the query's terms, from the replica when it holds them at the
//     wing's current generation, else asked (Stats), then summed;
//  2. rank: each wing's best keys and scores under the global statistics,
//     and its number of matching notes, from its index alone; a wing whose
//     generation moved answers Stale with fresh statistics, and every wing
//     ranks again with the new sum (at most twice; the last time taking
//     the statistics as they come);
//  3. fetch: after merging (search.Merge) and cutting to the limit, each
//     wing holding final hits renders those hits, and only those.
//
// The hits are returned in merged order, each one's bytes as its shard
// rendered them. total is the sum of the wings' numbers of matching notes.
// A failing wing is listed under "unavailable" (only to a caller holding a
// grant there) and never fails the query. The whole search is bounded by
// limits.fanout_timeout (step 1 by half of it): a wing that has not
// answered by then is listed under "unavailable" with the others' results,
// and the audit outcome is "partial".
func (g *Gateway) fanoutQuery(ctx context.Context, ci *callInfo, args []byte, rec *auditRecord) *mcp.CallToolResult {
	q, err := g.queryOf(args)
	if err != nil {
		return g.fail(rec, classify(err, ""))
	}
	bound := min(g.cfg.Limits.FanoutTimeout, g.cfg.Shards.CallTimeout)
	fctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	f := &fanout{g: g, ci: ci, q: q, ctx: ctx, fctx: fctx, bound: bound, start: time.Now()}
	if e := f.gather(); e != nil {
		rec.Missing = wingNames(f.failed)
		return g.fail(rec, e)
	}
	if res := f.rank(rec); res != nil {
		return res
	}
	f.fetch()
	return f.answer(rec)
}

// fanout is one cross-wing search, step by step (fanoutQuery).
type fanout struct {
	g     *Gateway
	ci    *callInfo
	q     search.Query
	ctx   context.Context // the caller's
	fctx  context.Context // ctx bounded by limits.fanout_timeout
	bound time.Duration
	start time.Time

	failed []unavailableWing // wings left out, named to the caller
	// Of the wings the caller may read (step 1 on):
	readable []*wing
	errs     []error        // each one's failure in the current step
	stats    []search.Stats // each one's statistics of the terms
	gens     []uint64       // the generation of each one's statistics
	ranks    []search.WingRank
	picks    []search.Pick // merged and cut to the limit (step 2)
	answered []bool
	rendered []map[string][]byte // each one's rendered hits by key (steps 2 and 3)
}

// late is a wing's failure within the search: past the search's deadline,
// timeout (and the results leave it out).
func (f *fanout) late(w *wing, err error) *Error {
	if errors.Is(err, context.DeadlineExceeded) && f.ctx.Err() == nil {
		return newError(brain.CodeTimeout, ErrTimeout, "wing %q did not answer within limits.fanout_timeout (%s); the results leave it out", w.name, f.bound)
	}
	return classifyShard(err, w)
}

// leaveOut lists a wing under "unavailable".
func (f *fanout) leaveOut(w *wing, err error) {
	e := classify(err, w.name)
	f.failed = append(f.failed, unavailableWing{Wing: w.name, Code: e.Code, Error: e.Message})
}

// gather is step 1, per wing and concurrently, within half the bound (a
// stuck wing does not spend the others' time; the rank step ends at three
// quarters of it, the fetch step with it): the caller's capabilities
// there (minting if needed), then, where they may read, the statistics of
// the query's terms, from the replica or asked. It fails when the caller
// can read no wing that answered.
func (f *fanout) gather() *Error {
	g := f.g
	p1ctx, cancel := context.WithTimeout(f.fctx, f.bound/2)
	defer cancel()
	n := len(g.wings)
	canRead, all, gens, errs := make([]bool, n), make([]search.Stats, n), make([]uint64, n), make([]error, n)
	// What the grant cache and the replica hold is taken here; only the
	// wings that need a mint or their statistics asked are asked, together.
	key, ask := keyOf(f.ci.id), make([]error, n)
	for i, w := range g.wings {
		gr, ok, err := g.grants.lookup(key, w)
		if !ok {
			continue
		}
		ask[i], errs[i] = errSkip, err
		if canRead[i] = err == nil && gr.caps.Has(brain.CapRead); canRead[i] {
			var held bool
			if all[i], gens[i], held = f.replicaStats(w); !held {
				ask[i] = nil
			}
		}
	}
	g.eachWing(g.wings, ask, func(i int, w *wing) {
		if !canRead[i] { // the grant was not in the cache
			gr, _, err := g.grants.getKey(p1ctx, f.ci.id, key, w, f.ci.requestID)
			if err != nil {
				errs[i] = err
				return
			}
			if canRead[i] = gr.caps.Has(brain.CapRead); !canRead[i] {
				return
			}
		}
		all[i], gens[i], errs[i] = f.wingStats(p1ctx, w)
	})
	hidden := 0 // wings that failed for a caller holding no grant there: not named
	for i, w := range g.wings {
		switch {
		case canRead[i]:
			f.readable = append(f.readable, w)
			var e error
			if errs[i] != nil {
				e = f.late(w, errs[i])
			}
			f.errs = append(f.errs, e)
			f.stats = append(f.stats, all[i])
			f.gens = append(f.gens, gens[i])
		case g.disclosable(f.ci, w, errs[i]):
			if e := f.late(w, errs[i]); e.Code != brain.CodeForbidden {
				f.failed = append(f.failed, unavailableWing{Wing: w.name, Code: e.Code, Error: e.Message})
			}
		case errs[i] != nil && !errors.Is(errs[i], errNotAdmitted):
			hidden++
		}
	}
	if len(f.readable) > 0 {
		return nil
	}
	switch {
	case len(f.failed) > 0:
		return newError(brain.CodeUnavailable, ErrUnavailable, "no wing you can read is reachable right now: %s", joinFailures(f.failed))
	case hidden > 0:
		// Some wing could not be asked whether the caller may read it; it
		// is not named (least disclosure).
		return newError(brain.CodeUnavailable, ErrUnavailable, "no wing you can read answered; retry shortly")
	}
	return newError(brain.CodeForbidden, ErrForbidden, "you cannot read any wing; ask a wing's curators for access")
}

// replicaStats is a wing's statistics of the query's terms when the
// replica holds them.
func (f *fanout) replicaStats(w *wing) (search.Stats, uint64, bool) {
	st, gen, ok := f.g.replica.Lookup(f.slot(w), f.q.Terms)
	if ok {
		f.g.metrics.statsReused.Inc()
	}
	return st, gen, ok
}

// wingStats is a wing's statistics of the query's terms: the replica's,
// when it holds them, else asked (and put in the replica).
func (f *fanout) wingStats(ctx context.Context, w *wing) (search.Stats, uint64, error) {
	if st, gen, ok := f.replicaStats(w); ok {
		return st, gen, nil
	}
	ctx, span := shardSpan(ctx, search.Tool+" stats", w)
	resp, err := w.client.Stats(ctx, &proto.StatsRequest{RequestID: f.ci.requestID, StatsRequest: search.StatsRequest{Terms: f.q.Terms, Scope: f.q.Scope}})
	endShardSpan(span, err)
	if err != nil {
		return search.Stats{}, 0, err
	}
	w.markReached()
	f.g.replica.Put(f.slot(w), resp.Generation, resp.Stats)
	return resp.Stats, resp.Generation, nil
}

// slot is the replica's slot of a wing's statistics over the search's
// scope: each scope's statistics are a wing's own.
func (f *fanout) slot(w *wing) int { return w.idx*len(search.Scopes()) + search.ScopeIndex(f.q.Scope) }

// global sums the statistics of the wings still in the search.
func (f *fanout) global() *search.Stats {
	sum := &search.Stats{DocFreq: map[string]int64{}}
	for i := range f.readable {
		if f.errs[i] == nil {
			sum.Add(f.stats[i])
		}
	}
	return sum
}

// maxRankRounds bounds how often a search ranks again because a wing
// changed meanwhile; the last round takes each wing as it is.
const maxRankRounds = 3

// rank is step 2: each readable wing ranks its notes with the global
// statistics, again while some wing answers that it changed (Stale); the
// hits are merged and cut to the limit. When no wing answered it returns
// the search's answer: the first refusal unchanged if every wing refused
// the query (as a wing-scoped call would answer), else unavailable.
func (f *fanout) rank(rec *auditRecord) *mcp.CallToolResult {
	f.ranks, f.answered = make([]search.WingRank, len(f.readable)), make([]bool, len(f.readable))
	refused := make([][]byte, len(f.readable))
	// The rank step ends at three quarters of the bound, so a wing stuck in
	// it leaves the others time to render their hits.
	rctx, cancel := context.WithDeadline(f.fctx, f.start.Add(f.bound*3/4))
	defer cancel()
	for round := 1; round <= maxRankRounds && f.rankRound(rctx, round == maxRankRounds, refused); round++ {
		f.g.metrics.rankAgain.Inc()
	}
	var firstRefusal []byte
	for i, w := range f.readable {
		switch {
		case errors.Is(f.errs[i], errWingHidden): // the caller lost its grant meanwhile: not named
		case f.errs[i] != nil:
			f.leaveOut(w, f.errs[i])
		case refused[i] != nil:
			if firstRefusal == nil {
				firstRefusal = refused[i]
			}
			code, msg := parseToolError(refused[i])
			f.failed = append(f.failed, unavailableWing{Wing: w.name, Code: code, Error: msg})
		default:
			f.answered[i] = true
		}
	}
	if !slices.Contains(f.answered, true) {
		if firstRefusal != nil {
			rec.Outcome = "tool_error"
			return shardResult(&proto.CallResponse{Result: firstRefusal, IsError: true})
		}
		rec.Missing = wingNames(f.failed)
		if len(f.failed) == 0 { // every wing was lost meanwhile, none may be named
			return f.g.fail(rec, newError(brain.CodeUnavailable, ErrUnavailable, "no wing you can read answered; retry shortly"))
		}
		return f.g.fail(rec, newError(brain.CodeUnavailable, ErrUnavailable, "no wing answered: %s", joinFailures(f.failed)))
	}
	f.picks = search.Merge(f.ranks, f.answered, f.q.Limit)
	return nil
}

// rankRound asks every wing still in the search to rank with the current
// global statistics, assuming the generations they are of (unless last).
// It reports whether some wing was stale: its fresh statistics are taken
// (and put in the replica), and the round must be run again.
func (f *fanout) rankRound(ctx context.Context, last bool, refused [][]byte) (again bool) {
	global := f.global()
	stale := make([]bool, len(f.readable))
	f.rendered = make([]map[string][]byte, len(f.readable))
	f.g.eachWing(f.readable, f.errs, func(i int, w *wing) {
		req := &proto.RankRequest{RequestID: f.ci.requestID, RankRequest: search.RankRequest{Query: f.q, Stats: global,
			Render: renderAhead(f.q.Limit, f.stats[i].Docs, global.Docs)}}
		if !last {
			req.Generation = f.gens[i]
		}
		var resp *proto.RankResponse
		err := f.g.withToken(ctx, f.ci, w, shardOp{what: search.Tool + " rank", send: func(ctx context.Context, token string) (err error) {
			req.Token = token
			resp, err = w.client.Rank(ctx, req)
			return err
		}})
		switch {
		case err != nil:
			f.errs[i] = f.late(w, err)
		case resp.Refused != nil:
			refused[i] = resp.Refused
		case resp.Stale && resp.Stats != nil:
			stale[i] = true
			f.stats[i], f.gens[i] = *resp.Stats, resp.Generation
			f.g.replica.Put(f.slot(w), resp.Generation, *resp.Stats)
		default:
			f.ranks[i] = search.WingRank{Ranked: resp.Ranked, Total: resp.Total}
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
func rankedKeys(ranked []search.Ranked, n int) []string {
	if n == 0 {
		return nil
	}
	keys := make([]string, len(ranked))
	for i, r := range ranked {
		keys[i] = r.Key
	}
	return keys
}

// fetch is step 3: the wings holding final hits they did not render ahead
// render those hits, and only those. A wing that fails here is left out
// altogether: its hits and its notes' count.
func (f *fanout) fetch() {
	keys := make([][]string, len(f.readable))
	for _, p := range f.picks {
		if _, ok := f.rendered[p.Wing][p.Key]; !ok {
			keys[p.Wing] = append(keys[p.Wing], p.Key)
		}
	}
	errs := make([]error, len(f.readable))
	for i := range f.readable {
		if len(keys[i]) == 0 {
			errs[i] = errSkip
		}
	}
	global := f.global()
	f.g.eachWing(f.readable, errs, func(i int, w *wing) {
		req := &proto.FetchRequest{RequestID: f.ci.requestID, FetchRequest: search.FetchRequest{Query: f.q, Keys: keys[i], Stats: global}}
		var resp *proto.FetchResponse
		err := f.g.withToken(f.fctx, f.ci, w, shardOp{what: search.Tool + " fetch", send: func(ctx context.Context, token string) (err error) {
			req.Token = token
			resp, err = w.client.Fetch(ctx, req)
			return err
		}})
		if err != nil {
			errs[i] = f.late(w, err)
			return
		}
		if f.rendered[i] == nil {
			f.rendered[i] = map[string][]byte{}
		}
		maps.Copy(f.rendered[i], hitsByKey(keys[i], resp.Hits))
	})
	for i, w := range f.readable {
		if errs[i] == nil || errs[i] == errSkip {
			continue
		}
		if !errors.Is(errs[i], errWingHidden) {
			f.leaveOut(w, errs[i])
		}
		f.answered[i], f.ranks[i].Total = false, 0
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

// answer is the search's answer: the final hits in merged order, each one's
// bytes as its shard rendered them (a hit whose note changed or went
// between the steps is left out), the total, the wings that answered and
// those left out.
func (f *fanout) answer(rec *auditRecord) *mcp.CallToolResult {
	var hits [][]byte
	for _, p := range f.picks {
		if !f.answered[p.Wing] {
			continue
		}
		if raw, ok := f.rendered[p.Wing][p.Key]; ok {
			hits = append(hits, raw)
		}
	}
	var total int64
	var names []string
	for i, w := range f.readable {
		if f.answered[i] {
			total += f.ranks[i].Total
			names = append(names, w.name)
		}
	}
	rec.Missing = wingNames(f.failed)
	rec.Outcome = "ok"
	if len(f.failed) > 0 {
		rec.Outcome = outcomePartial
	}
	failed := f.failed
	if failed == nil {
		failed = []unavailableWing{}
	}
	fj, _ := brain.Marshal(failed)
	return mcp.NewToolResultText(string(search.EnvelopeFor(f.q, hits, total, names, fj)))
}

// outcomePartial is the audit outcome of a cross-wing search that left
// wings out (listed in the audit line's missing_wings).
const outcomePartial = "partial"

// joinFailures is every failure's message, for an error that names them all.
func joinFailures(ws []unavailableWing) string {
	msgs := make([]string, len(ws))
	for i, w := range ws {
		msgs[i] = w.Error
	}
	return strings.Join(msgs, "; ")
}

func wingNames(ws []unavailableWing) []string {
	if len(ws) == 0 {
		return nil
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Wing
	}
	return out
}

// errSkip marks a wing a step does not ask.
var errSkip = errors.New("gateway: wing not asked")

// fanoutWorkers is how many goroutines of cross-wing steps the gateway
// keeps waiting for the next step (internal/workers).
const fanoutWorkers = 64

// eachWing runs fn for every wing whose errs entry is nil, at most
// limits.fanout_concurrency at a time, and returns when all have. They run
// on the gateway's kept goroutines (internal/workers), the last one on the
// caller's own: a fresh goroutine would grow its stack on every exchange.
func (g *Gateway) eachWing(wings []*wing, errs []error, fn func(i int, w *wing)) {
	last := -1
	for i := range wings {
		if errs[i] == nil {
			last = i
		}
	}
	slots := make(chan struct{}, g.cfg.Limits.FanoutConcurrency)
	var wg sync.WaitGroup
	for i, w := range wings {
		if errs[i] != nil {
			continue
		}
		slots <- struct{}{}
		if i == last {
			fn(i, w)
			<-slots
			break
		}
		wg.Add(1)
		g.fanoutWorkers.Go(func() {
			defer wg.Done()
			defer func() { <-slots }()
			fn(i, w)
		})
	}
	wg.Wait()
}

// parseToolError reads a shard's tool error document (brain.DecodeError).
func parseToolError(result []byte) (brain.Code, string) {
	if code, msg, ok := brain.DecodeError(result); ok {
		return code, msg
	}
	return brain.CodeInternal, "the wing answered an error without a code"
}
