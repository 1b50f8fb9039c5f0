package gateway

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/search"
)

// wingsToolName is the gateway's own tool.
const wingsToolName = toolspec.WingsTool

// unavailableWing reports a wing left out of a cross-wing answer.
type unavailableWing = toolspec.UnavailableWing

// queryOf decodes, checks and tokenizes a cross-wing search's arguments,
// once, with the search tool's own spec (search.DecodeQuery). The size
// limits are the wings' (search.ServeRank).
func (g *Gateway) queryOf(args []byte) (search.Query, error) {
	return search.DecodeQuery(g.searchSpec, args)
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
		return g.fail(rec, edge.Classify(err, ""))
	}
	bound := min(g.cfg.Limits.FanoutTimeout, g.cfg.Shards.CallTimeout)
	fctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	f := &fanout{g: g, ci: ci, q: q, ctx: ctx, fctx: fctx, bound: bound, start: time.Now()}
	f.search = search.Fanout{Query: q, Each: func(errs []error, fn func(i int)) {
		g.eachWing(f.readable, errs, func(i int, _ *route.Wing) { fn(i) })
	}}
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
	// Of the wings the caller may read (step 1 on), and their search
	// (search.Fanout: steps 2 and 3 and the merge).
	readable []*route.Wing
	search   search.Fanout
}

// late is a wing's failure within the search: past the search's deadline,
// timeout (and the results leave it out).
func (f *fanout) late(w *route.Wing, err error) *edge.Error {
	if errors.Is(err, context.DeadlineExceeded) && f.ctx.Err() == nil {
		return edge.NewError(brain.CodeTimeout, edge.ErrTimeout, "wing %q did not answer within limits.fanout_timeout (%s); the results leave it out", w.Name, f.bound)
	}
	return route.ClassifyShard(err, w)
}

// leaveOut lists a wing under "unavailable".
func (f *fanout) leaveOut(w *route.Wing, err error) {
	e := edge.Classify(err, w.Name)
	f.failed = append(f.failed, unavailableWing{Wing: w.Name, Code: e.Code, Error: e.Message})
}

// gather is step 1, per wing and concurrently, within half the bound (a
// stuck wing does not spend the others' time; the rank step ends at three
// quarters of it, the fetch step with it): the caller's capabilities
// there (minting if needed), then, where they may read, the statistics of
// the query's terms, from the replica or asked. It fails when the caller
// can read no wing that answered.
func (f *fanout) gather() *edge.Error {
	g := f.g
	p1ctx, cancel := context.WithTimeout(f.fctx, f.bound/2)
	defer cancel()
	n := len(g.wings)
	canRead, all, gens, errs := make([]bool, n), make([]search.Stats, n), make([]uint64, n), make([]error, n)
	// What the grant cache and the replica hold is taken here; only the
	// wings that need a mint or their statistics asked are asked, together.
	key, ask := route.KeyOf(f.ci.id), make([]error, n)
	for i, w := range g.wings {
		gr, ok, err := g.grants.Lookup(key, w)
		if !ok {
			continue
		}
		ask[i], errs[i] = errSkip, err
		if canRead[i] = err == nil && gr.Caps.Has(brain.CapRead); canRead[i] {
			var held bool
			if all[i], gens[i], held = f.replicaStats(w); !held {
				ask[i] = nil
			}
		}
	}
	g.eachWing(g.wings, ask, func(i int, w *route.Wing) {
		if !canRead[i] { // the grant was not in the cache
			gr, _, err := g.grants.GetKey(p1ctx, f.ci.id, key, w, f.ci.requestID)
			if err != nil {
				errs[i] = err
				return
			}
			if canRead[i] = gr.Caps.Has(brain.CapRead); !canRead[i] {
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
			fs := &f.search
			fs.Wings, fs.Errs = append(fs.Wings, f.wing(w)), append(fs.Errs, e)
			fs.Stats, fs.Gens = append(fs.Stats, all[i]), append(fs.Gens, gens[i])
		case g.disclosable(f.ci, w, errs[i]):
			if e := f.late(w, errs[i]); e.Code != brain.CodeForbidden {
				f.failed = append(f.failed, unavailableWing{Wing: w.Name, Code: e.Code, Error: e.Message})
			}
		case errs[i] != nil && !errors.Is(errs[i], route.ErrNotAdmitted):
			hidden++
		}
	}
	if len(f.readable) > 0 {
		return nil
	}
	switch {
	case len(f.failed) > 0:
		return edge.NewError(brain.CodeUnavailable, edge.ErrUnavailable, "no wing you can read is reachable right now: %s", joinFailures(f.failed))
	case hidden > 0:
		// Some wing could not be asked whether the caller may read it; it
		// is not named (least disclosure).
		return edge.NewError(brain.CodeUnavailable, edge.ErrUnavailable, "no wing you can read answered; retry shortly")
	}
	return edge.NewError(brain.CodeForbidden, edge.ErrForbidden, "you cannot read any wing; ask a wing's curators for access")
}

// replicaStats is a wing's statistics of the query's terms when the
// replica holds them.
func (f *fanout) replicaStats(w *route.Wing) (search.Stats, uint64, bool) {
	st, gen, ok := f.g.replica.Lookup(f.slot(w), f.q.Terms)
	if ok {
		f.g.metrics.statsReused.Inc()
	}
	return st, gen, ok
}

// wingStats is a wing's statistics of the query's terms: the replica's,
// when it holds them, else asked (and put in the replica).
func (f *fanout) wingStats(ctx context.Context, w *route.Wing) (search.Stats, uint64, error) {
	if st, gen, ok := f.replicaStats(w); ok {
		return st, gen, nil
	}
	resp, err := f.wing(w).Stats(ctx, &search.StatsRequest{Terms: f.q.Terms, Scope: f.q.Scope})
	if err != nil {
		return search.Stats{}, 0, err
	}
	return resp.Stats, resp.Generation, nil
}

// wing is w as the search asks it (route.SearchWing).
func (f *fanout) wing(w *route.Wing) route.SearchWing {
	return route.SearchWing{Sender: f.g.shards, Caller: f.ci.caller(), Wing: w, Replica: f.g.replica, Slot: f.slot(w), Late: f.late}
}

// slot is the replica's slot of a wing's statistics over the search's
// scope: each scope's statistics are a wing's own.
func (f *fanout) slot(w *route.Wing) int {
	return w.Idx*len(search.Scopes()) + search.ScopeIndex(f.q.Scope)
}

// maxRankRounds bounds how often a search ranks again because a wing
// changed meanwhile; the last round takes each wing as it is.
const maxRankRounds = 3

// rank is step 2 (search.Fanout.Rank), within three quarters of the bound,
// so a wing stuck in it leaves the others time to render their hits; the
// wings that failed or refused the query are named. When no wing answered
// it returns the search's answer: the first refusal unchanged if every
// wing refused the query (as a wing-scoped call would answer), else
// unavailable.
func (f *fanout) rank(rec *auditRecord) *mcp.CallToolResult {
	rctx, cancel := context.WithDeadline(f.fctx, f.start.Add(f.bound*3/4))
	defer cancel()
	fs := &f.search
	f.g.metrics.rankAgain.Add(float64(fs.Rank(rctx, maxRankRounds)))
	var firstRefusal []byte
	for i, w := range f.readable {
		switch {
		case errors.Is(fs.Errs[i], errWingHidden): // the caller lost its grant meanwhile: not named
		case fs.Errs[i] != nil:
			f.leaveOut(w, fs.Errs[i])
		case fs.Refused[i] != nil:
			if firstRefusal == nil {
				firstRefusal = fs.Refused[i]
			}
			code, msg := parseToolError(fs.Refused[i])
			f.failed = append(f.failed, unavailableWing{Wing: w.Name, Code: code, Error: msg})
		}
	}
	if slices.Contains(fs.Answered, true) {
		return nil
	}
	if firstRefusal != nil {
		rec.Outcome = "tool_error"
		return edge.ShardResult(&proto.CallResponse{Result: firstRefusal, IsError: true})
	}
	rec.Missing = wingNames(f.failed)
	if len(f.failed) == 0 { // every wing was lost meanwhile, none may be named
		return f.g.fail(rec, edge.NewError(brain.CodeUnavailable, edge.ErrUnavailable, "no wing you can read answered; retry shortly"))
	}
	return f.g.fail(rec, edge.NewError(brain.CodeUnavailable, edge.ErrUnavailable, "no wing answered: %s", joinFailures(f.failed)))
}

// fetch is step 3 (search.Fanout.Fetch), within the bound; a wing that
// fails here is named, unless the caller lost its grant meanwhile.
func (f *fanout) fetch() {
	for i, err := range f.search.Fetch(f.fctx) {
		if err != nil && !errors.Is(err, errWingHidden) {
			f.leaveOut(f.readable[i], err)
		}
	}
}

// answer is the search's answer: the final hits in merged order, each one's
// bytes as its shard rendered them (search.Fanout.Hits), the total, the
// wings that answered and those left out.
func (f *fanout) answer(rec *auditRecord) *mcp.CallToolResult {
	hits, total := f.search.Hits()
	var names []string
	for i, w := range f.readable {
		if f.search.Answered[i] {
			names = append(names, w.Name)
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
// limits.fanout_concurrency at a time, on the gateway's kept goroutines
// (route.EachWing).
func (g *Gateway) eachWing(wings []*route.Wing, errs []error, fn func(i int, w *route.Wing)) {
	route.EachWing(g.fanoutWorkers, g.cfg.Limits.FanoutConcurrency, wings, errs, fn)
}

// parseToolError reads a shard's tool error document (brain.DecodeError).
func parseToolError(result []byte) (brain.Code, string) {
	if code, msg, ok := brain.DecodeError(result); ok {
		return code, msg
	}
	return brain.CodeInternal, "the wing answered an error without a code"
}
