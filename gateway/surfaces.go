package gateway

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/surfaces"
)

// newSurfaces builds the resources, prompts, cross links and change
// notifications (gateway/surfaces) over the wings, the grant cache and
// the metrics; New adds the cursor signer.
func (g *Gateway) newSurfaces() *surfaces.Surfaces {
	l, m := g.cfg.Limits, g.metrics
	return &surfaces.Surfaces{Gateway: surfaceCalls{g}, Wings: g.wings, ByName: g.byName, Shards: g.shards, Grants: g.grants,
		Catalog: &g.cat, Workers: g.fanoutWorkers, PageSize: l.ResourcesPageSize, FanoutConcurrency: l.FanoutConcurrency,
		FanoutTimeout: l.FanoutTimeout, CallTimeout: g.cfg.Shards.CallTimeout, WatchInterval: g.cfg.Shards.WatchInterval,
		Changes: m.watchChanges, Notified: m.notified, Dropped: m.notifyDropped}
}

// surfaceCalls is the gateway as the surfaces ask it (surfaces.Gateway),
// for the caller of the call info in the context.
type surfaceCalls struct{ g *Gateway }

func (s surfaceCalls) Caller(ctx context.Context) (route.Caller, bool) {
	if ci := callInfoFrom(ctx); ci != nil {
		return ci.Caller, true
	}
	return route.Caller{}, false
}

func (s surfaceCalls) Tool(ctx context.Context, method, tool string, args []byte) *mcp.CallToolResult {
	res, _ := s.g.callShardTool(ctx, callInfoFrom(ctx), method, tool, args)
	return res
}

func (s surfaceCalls) Audit(ctx context.Context, r *surfaces.Record, start time.Time) {
	s.g.finishRecord(ctx, callInfoFrom(ctx), &auditRecord{Record: *r}, start)
}
