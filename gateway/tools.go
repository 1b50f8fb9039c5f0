package gateway

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sync/singleflight"

	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/route"
)

// wingsTool is brain_wings' descriptor, from its one declaration
// (toolspec.Wings, which docs/tools.md is generated from too).
func wingsTool() mcp.Tool {
	sp := toolspec.Wings()
	t := mcp.NewToolWithRawSchema(sp.Name, sp.Description, sp.Schema())
	t.RawOutputSchema = sp.OutputSchema()
	openWorld := false
	t.Annotations = mcp.ToolAnnotation{Title: sp.Title, ReadOnlyHint: &sp.ReadOnly, DestructiveHint: &sp.Destructive,
		IdempotentHint: &sp.Idempotent, OpenWorldHint: &openWorld}
	return t
}

// refresher fetches the wings' tool descriptors and registers their union
// with mcp-go: at start, every shards.refresh_interval (faster while a wing
// has never answered), and on demand (a tools/list while a wing's tools are
// unknown; a shard answering unknown_tool).
type refresher struct {
	g             *Gateway
	flight        singleflight.Group
	kick          chan struct{}
	mu            sync.Mutex
	lastSig       string
	lastPromptSig string // under mu
}

// trigger asks the background loop for a refresh soon.
func (r *refresher) trigger() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// ensure makes sure tools/list has descriptors to filter. When no wing's
// tools are known yet (a cold start) it refreshes now, sharing a running
// refresh and waiting at most a short while; when only some are missing it
// asks the background loop and does not wait. Wings known to be down do
// not count as missing.
func (r *refresher) ensure(ctx context.Context) {
	missing, haveAny := false, false
	for _, w := range r.g.wings {
		switch {
		case w.Tools.Load() != nil:
			haveAny = true
		case !w.Down():
			missing = true
		}
	}
	if !missing {
		return
	}
	if haveAny {
		r.trigger()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, min(r.g.cfg.Shards.CallTimeout, 5*time.Second))
	defer cancel()
	ch := r.flight.DoChan("refresh", func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.g.cfg.Shards.CallTimeout)
		defer cancel()
		r.refresh(rctx)
		return nil, nil
	})
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// refresh fetches every wing's tools and prompts (route.FetchDescriptors)
// and re-registers the catalog if it changed, and the prompts
// (gateway/surfaces, which serves prompts/list and prompts/get) if they did.
func (r *refresher) refresh(ctx context.Context) {
	route.FetchDescriptors(ctx, r.g.wings, r.g.cfg.Limits.FanoutConcurrency, r.g.log)
	r.register()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastPromptSig = r.g.surfaces.RegisterPrompts(r.lastPromptSig, r.g.mcp.SetPrompts)
}

// register builds the catalog and hands it to mcp-go when it changed.
func (r *refresher) register() {
	g := r.g
	r.mu.Lock()
	defer r.mu.Unlock()
	cat := route.BuildCatalog(g.wings, g.log)
	sig := cat.Signature()
	if string(sig) == r.lastSig && g.cat.Load() != nil {
		return
	}
	tools := []server.ServerTool{{Tool: wingsTool(), Handler: g.wingsTool}}
	for _, t := range cat.Tools {
		tools = append(tools, server.ServerTool{Tool: t.MCPTool(), Handler: g.shardToolHandler(t.Name)})
	}
	g.cat.Store(cat)
	g.mcp.SetTools(tools...)
	r.lastSig = string(sig)
	g.log.Info("tools registered", "count", len(tools), "names", cat.Names())
}

// loop refreshes periodically until ctx ends; while a wing has never
// answered it retries sooner (1s, doubling up to refresh_interval).
func (r *refresher) loop(ctx context.Context) {
	backoff := time.Second
	for {
		wait := r.g.cfg.Shards.RefreshInterval
		if slices.ContainsFunc(r.g.wings, func(w *route.Wing) bool { return !w.Reached.Load() }) {
			wait = min(backoff, wait)
			backoff = min(backoff*2, r.g.cfg.Shards.RefreshInterval)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-r.kick:
			t.Stop()
		}
		rctx, cancel := context.WithTimeout(ctx, r.g.cfg.Shards.CallTimeout)
		_, _, _ = r.flight.Do("refresh", func() (any, error) {
			r.refresh(rctx)
			return nil, nil
		})
		cancel()
	}
}

// filterTools is mcp-go's tool filter. For tools/list it keeps the tools the
// caller can use in at least one wing that offers them (plus brain_wings);
// at call time it keeps everything, so a call the caller may not make is
// answered by the shard (or the gateway) with a forbidden tool error rather
// than "tool not found".
func (g *Gateway) filterTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	ci := callInfoFrom(ctx)
	if ci == nil {
		return nil
	}
	if ci.method != "tools/list" {
		return tools
	}
	cat := g.cat.Load()
	caps, _ := g.surfaces.Caps(ctx, ci.Caller)
	out := tools[:0:0]
	for _, t := range tools {
		var e *route.Entry[route.ToolDescriptor]
		if cat != nil {
			e = cat.By[t.Name]
		}
		if t.Name == toolspec.WingsTool || e != nil && e.FirstWith(caps, e.Desc.Spec.Needs) >= 0 {
			out = append(out, t)
		}
	}
	return out
}
