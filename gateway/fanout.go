package gateway

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/search"
)

// fanoutQuery runs a search over every wing the caller may read, every wing
// in parallel, in the steps of search.Fanout (search/protocol.go): grants
// (searchable) and statistics, rank, fetch. A failing wing is listed under
// "unavailable" (only to a caller holding a grant there) and never fails
// the query. The whole search is bounded by limits.fanout_timeout (step 1
// by half of it, the rank step by three quarters): a wing that has not
// answered by then is listed under "unavailable" with the others' results,
// and the audit outcome is "partial".
func (g *Gateway) fanoutQuery(ctx context.Context, ci *callInfo, args []byte, rec *auditRecord) *mcp.CallToolResult {
	q, err := search.DecodeQuery(g.searchSpec, args) // the size limits are the wings' (search.ServeRank)
	if err != nil {
		return g.fail(rec, edge.Classify(err, ""))
	}
	bound := min(g.cfg.Limits.FanoutTimeout, g.cfg.Shards.CallTimeout)
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	// late is a wing's failure within the search: past the search's
	// deadline, timeout (and the results leave it out).
	late := func(w *route.Wing, err error) *edge.Error {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return edge.NewError(brain.CodeTimeout, edge.ErrTimeout, "wing %q did not answer within limits.fanout_timeout (%s); the results leave it out", w.Name, bound)
		}
		return route.ClassifyShard(err, w)
	}
	var readable []*route.Wing
	fs := &search.Fanout{Query: q, Replica: g.replica, Each: func(errs []error, fn func(i int)) {
		route.EachWing(g.fanoutWorkers, g.cfg.Limits.FanoutConcurrency, readable, errs, func(i int, _ *route.Wing) { fn(i) })
	}}
	p1ctx, cancel1 := context.WithTimeout(fctx, bound/2)
	defer cancel1()
	if readable, err = g.searchable(p1ctx, ci, fs, late); err != nil {
		rec.Missing = fs.LeftNames()
		return g.fail(rec, edge.Classify(err, ""))
	}
	g.metrics.statsReused.Add(float64(fs.Gather(p1ctx)))
	rctx, cancel2 := context.WithDeadline(fctx, start.Add(bound*3/4))
	defer cancel2()
	g.metrics.rankAgain.Add(float64(fs.Rank(rctx)))
	if !slices.Contains(fs.Answered, true) { // as a wing-scoped call would answer: the refusal, else unavailable
		if r := fs.Refusal(); r != nil {
			rec.Outcome = "tool_error"
			return edge.ShardResult(&proto.CallResponse{Result: r, IsError: true})
		}
		rec.Missing = fs.LeftNames()
		if len(fs.Left) == 0 { // every wing was lost meanwhile, none may be named
			return g.fail(rec, edge.NewError(brain.CodeUnavailable, edge.ErrUnavailable, "no wing you can read answered; retry shortly"))
		}
		return g.fail(rec, edge.NewError(brain.CodeUnavailable, edge.ErrUnavailable, "no wing answered: %s", fs.LeftErrors()))
	}
	fs.Fetch(fctx)
	rec.Missing, rec.Outcome = fs.LeftNames(), "ok"
	if len(fs.Left) > 0 {
		rec.Outcome = outcomePartial
	}
	return mcp.NewToolResultText(string(fs.Answer()))
}

// searchable is step 1's grants, within ctx: the wings the caller may read
// join the search, minted for together where the grant cache holds no
// grant; the others that failed are Left only when the caller holds a
// grant there (route.GrantCache.Disclosable). It fails when the caller
// can read no wing.
func (g *Gateway) searchable(ctx context.Context, ci *callInfo, fs *search.Fanout, late func(*route.Wing, error) *edge.Error) ([]*route.Wing, error) {
	n := len(g.wings)
	canRead, errs, ask := make([]bool, n), make([]error, n), make([]error, n)
	key := ci.Key
	for i, w := range g.wings {
		if gr, ok, err := g.grants.Lookup(key, w); ok {
			ask[i], errs[i], canRead[i] = route.ErrNotAsked, err, err == nil && gr.Caps.Has(brain.CapRead)
		}
	}
	route.EachWing(g.fanoutWorkers, g.cfg.Limits.FanoutConcurrency, g.wings, ask, func(i int, w *route.Wing) {
		gr, _, err := g.grants.GetKey(ctx, ci.ID, key, w, ci.RequestID)
		errs[i], canRead[i] = err, err == nil && gr.Caps.Has(brain.CapRead)
	})
	readable, hidden := make([]*route.Wing, 0, n), 0 // hidden: failed for a caller holding no grant there, not named
	fs.Wings, fs.Index = make([]search.Wing, 0, n), make([]int, 0, n)
	for i, w := range g.wings {
		switch {
		case canRead[i]:
			readable = append(readable, w)
			fs.Wings, fs.Index = append(fs.Wings, route.SearchWing{Sender: g.shards, Caller: ci.Caller, Wing: w, Late: late}), append(fs.Index, w.Idx)
		case g.grants.Disclosable(key, w, errs[i]):
			if e := late(w, errs[i]); e.Code != brain.CodeForbidden {
				fs.Left = append(fs.Left, toolspec.UnavailableWing{Wing: w.Name, Code: e.Code, Error: e.Message})
			}
		case errs[i] != nil && !errors.Is(errs[i], route.ErrNotAdmitted):
			hidden++
		}
	}
	switch {
	case len(readable) > 0:
		return readable, nil
	case len(fs.Left) > 0:
		return nil, edge.NewError(brain.CodeUnavailable, edge.ErrUnavailable, "no wing you can read is reachable right now: %s", fs.LeftErrors())
	case hidden > 0: // some wing could not be asked whether the caller may read it (least disclosure)
		return nil, edge.NewError(brain.CodeUnavailable, edge.ErrUnavailable, "no wing you can read answered; retry shortly")
	}
	return nil, edge.NewError(brain.CodeForbidden, edge.ErrForbidden, "you cannot read any wing; ask a wing's curators for access")
}

// outcomePartial is the audit outcome of a cross-wing search that left
// wings out (listed in the audit line's missing_wings).
const outcomePartial = "partial"

// fanoutWorkers is how many goroutines of cross-wing steps the gateway
// keeps waiting for the next step (internal/workers).
const fanoutWorkers = 64
