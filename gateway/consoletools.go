package gateway

import (
	"context"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/console"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/surfaces"
)

// consoleTools is the console's one way to the brain: a tool call made as
// the signed-in person goes through the same handlers as a tools/call on
// /mcp (routing, the grant cache and its mints, the shard's capability
// check, the per-email rate limit, audit and metrics), so the console can
// do nothing an agent of the same person could not.
type consoleTools struct{ g *Gateway }

// Call runs one tool as id and returns its text content and whether it is
// a tool error, exactly as /mcp would answer it.
func (t consoleTools) Call(ctx context.Context, id auth.Identity, tool string, args []byte) console.Result {
	g := t.g
	// The request carried a verified session: its connection no longer
	// counts against limits.max_unauthenticated_conns, as after /mcp's.
	edge.MarkAuthenticated(ctx)
	ci := &callInfo{Caller: route.Caller{ID: id, Key: route.KeyOf(id), RequestID: edge.RequestID(""), Base: g.log.With("client", "console")}, method: "tools/call"}
	if lim := g.edge.EmailLimiter(id.Email); !lim.AllowN(g.now(), 1) {
		g.metrics.rateLimited.WithLabelValues("email").Inc()
		e := edge.NewError(brain.CodeRateLimited, edge.ErrRateLimited, "too many calls for %s; wait a second and try again", id.Email)
		return console.Result{Text: brain.EncodeError(e.Code, e.Message), IsError: true}
	}
	ctx = context.WithValue(ctx, callInfoKey{}, ci)
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.RawArguments = tool, args
	var res *mcp.CallToolResult
	if tool == toolspec.WingsTool {
		res, _ = g.wingsTool(ctx, req)
	} else if g.cat.Load().Spec(tool).Known {
		res, _ = g.shardToolHandler(tool)(ctx, req)
	} else {
		start := time.Now()
		rec := auditRecord{Record: surfaces.Record{Tool: tool, BytesIn: len(args), Args: args}}
		res = g.fail(&rec, edge.NewError(brain.CodeUnknownTool, edge.ErrInvalidArgument, "no tool %q", tool))
		g.finish(ctx, ci, &rec, res, start)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return console.Result{Text: []byte(text.String()), IsError: res.IsError}
}

// startConsole builds the curators' console on the public listener, a
// first-party client of the facade; it needs the authorization server.
func (g *Gateway) startConsole() error {
	c, err := console.New(console.Options{
		PublicURL: strings.TrimRight(g.cfg.PublicURL, "/"), Facade: g.facade, Tools: consoleTools{g},
		Logger: g.log.With("component", "console"), Now: g.now})
	if err != nil {
		return err
	}
	g.console = c
	return nil
}

// ConsoleURL is the URL of the curators' console, or "" when it is off
// (it needs the authorization server: oauth.enabled).
func (g *Gateway) ConsoleURL() string {
	if g.console == nil {
		return ""
	}
	return g.console.URL()
}
