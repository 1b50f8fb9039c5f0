package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
	"github.com/brainstem/brainstem/gateway/surfaces"
	"github.com/brainstem/brainstem/proto"
)

// shardToolHandler returns the mcp-go handler of a shard tool: route, call,
// return the shard's bytes unchanged.
func (g *Gateway) shardToolHandler(name string) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ci := callInfoFrom(ctx)
		if ci == nil {
			return edge.ToolErrorResult(edge.NewError(brain.CodeInternal, edge.ErrNoIdentity, "the request reached the tool without an identity")), nil
		}
		args := []byte(req.Params.RawArguments)
		if len(args) == 0 {
			args = []byte("{}")
		}
		res, spec := g.callShardTool(ctx, ci, name, name, args)
		structure(spec.Structured, res)
		return res, nil
	}
}

// callShardTool runs a shard tool for ci, with its audit line and metrics
// under method (the tool, or the surface's method that calls it). The
// tool's spec is read from the catalog once per call and passed down.
func (g *Gateway) callShardTool(ctx context.Context, ci *callInfo, method, tool string, args []byte) (*mcp.CallToolResult, route.Spec) {
	start := time.Now()
	rec := auditRecord{Record: surfaces.Record{Tool: method, BytesIn: len(args), Args: args}}
	spec := g.cat.Load().Spec(tool)
	res := g.runShardTool(ctx, ci, tool, spec, args, &rec)
	g.finish(ctx, ci, &rec, res, start)
	return res, spec
}

// runShardTool routes and sends one call of a shard tool whose spec the
// caller looked up (route.Catalog.Spec).
func (g *Gateway) runShardTool(ctx context.Context, ci *callInfo, name string, spec route.Spec, args []byte, rec *auditRecord) *mcp.CallToolResult {
	a, err := g.argsOf(ci, args)
	if err != nil {
		return g.fail(rec, edge.Classify(err, ""))
	}
	meta := spec.Meta
	wingName, ok, err := a.Route(meta.Routes)
	if err != nil {
		return g.fail(rec, edge.Classify(err, ""))
	}
	if !ok && meta.Fanout == toolspec.FanoutSearch {
		rec.Wing = "*"
		return g.fanoutQuery(ctx, ci, args, rec)
	}
	if !ok && g.cfg.DefaultWing != "" {
		wingName, ok = g.cfg.DefaultWing, true
	}
	if !ok {
		return g.fail(rec, edge.NewError(brain.CodeInvalidArgument, edge.ErrInvalidArgument,
			"no wing: pass \"wing\" or a note \"id\" (<wing>/<hall>/<slug>) or a \"path\" (wiki/<wing>/… or inbox/<wing>/…); brain_wings lists your wings"))
	}
	rec.Wing = wingName
	w, ok := g.byName[wingName]
	if !ok {
		return g.fail(rec, g.surfaces.NoWing(ctx, ci.Caller, wingName))
	}
	req := &proto.CallRequest{RequestID: ci.RequestID, Tool: name, Args: args}
	if meta.Writes() {
		req.IdempotencyKey = route.IdempotencyKey(a.AgentKey())
	}
	resp, err := g.shards.Call(ctx, ci.Caller, w, req, spec.Writes())
	if errors.Is(err, route.ErrWingHidden) {
		ci.Logger().Debug("wing not disclosed to the caller", "wing", w.Name, "err", err)
		return g.fail(rec, g.surfaces.NoWing(ctx, ci.Caller, wingName))
	}
	if err != nil {
		e := edge.Classify(err, w.Name)
		if e.Code == brain.CodeUnknownTool {
			g.refresh.trigger()
		}
		return g.fail(rec, e)
	}
	rec.Outcome = "ok"
	if resp.IsError {
		rec.Outcome = "tool_error"
	} else if meta.CrossLinks != nil {
		resp.Result = g.surfaces.CrossLinks(ctx, meta.CrossLinks, w, resp.Result)
	}
	return edge.ShardResult(resp)
}

// structure gives a successful answer of a tool that declares an
// outputSchema (structured) its JSON as structuredContent too: the text
// content's very bytes (every answer is a JSON object; MCP 2025-06-18 and
// later).
func structure(structured bool, res *mcp.CallToolResult) {
	if res.IsError || !structured {
		return
	}
	if text, ok := rpc.PlainText(res); ok {
		res.RawStructuredContent = json.RawMessage(text)
	}
}

// argsOf returns the fields of the call's arguments: the lean path's scan
// of them when it made one, else a scan now.
func (g *Gateway) argsOf(ci *callInfo, args []byte) (rpc.Args, error) {
	if ci.scanned {
		return ci.args, ci.args.Err(args)
	}
	g.countParse()
	return rpc.ParseArgs(args)
}

// fail records a gateway error and renders it as a tool error.
func (g *Gateway) fail(rec *auditRecord, e *edge.Error) *mcp.CallToolResult {
	return edge.ToolErrorResult(rec.Fail(e))
}

// finish writes the audit line and the metrics of one tool call.
func (g *Gateway) finish(ctx context.Context, ci *callInfo, rec *auditRecord, res *mcp.CallToolResult, start time.Time) {
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			rec.BytesOut += len(t.Text)
		}
	}
	g.finishRecord(ctx, ci, rec, start)
}

// finishRecord writes the audit line and the metrics of one request whose
// record is complete but for its time, caller and latency: a tool call,
// or a resources or prompts request (rec.Tool is then the method).
func (g *Gateway) finishRecord(ctx context.Context, ci *callInfo, rec *auditRecord, start time.Time) {
	lat := time.Since(start)
	rec.Time, rec.RequestID, rec.Email, rec.Latency = g.now(), ci.RequestID, ci.ID.Email, lat
	rec.Outcome = cmp.Or(rec.Outcome, "ok")
	g.metrics.call(rec.Tool, g.wingLabel(rec.Wing), rec.Outcome, lat)
	if g.tracer != nil {
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			g.spanRecord(span, rec)
		}
	}
	g.audit.write(rec)
	if rec.Err != nil && (rec.Err.Code == brain.CodeInternal) {
		ci.Logger().Error("tool call failed", "tool", rec.Tool, "wing", rec.Wing, "code", rec.Err.Code, "err", rec.Err.Err)
	} else if rec.Err != nil {
		ci.Logger().Debug("tool call refused", "tool", rec.Tool, "wing", rec.Wing, "code", rec.Err.Code, "message", rec.Err.Message)
	}
}

// wingsTool answers brain_wings: the wings the caller can reach and the
// capabilities they hold there.
func (g *Gateway) wingsTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ci := callInfoFrom(ctx)
	if ci == nil {
		return edge.ToolErrorResult(edge.NewError(brain.CodeInternal, edge.ErrNoIdentity, "the request reached the tool without an identity")), nil
	}
	start := time.Now()
	rec := auditRecord{Record: surfaces.Record{Tool: toolspec.WingsTool, Wing: "*", BytesIn: len(req.Params.RawArguments), Args: req.Params.RawArguments}}
	caps, errs := g.surfaces.Caps(ctx, ci.Caller)
	out := toolspec.WingsAnswer{Wings: []toolspec.WingCaps{}} // declared with the tool, which derives its outputSchema from it
	for i, c := range caps {
		if c != 0 {
			out.Wings = append(out.Wings, toolspec.WingCaps{Wing: g.wings[i].Name, Capabilities: c.Strings()})
			continue
		}
		if g.grants.Disclosable(ci.Key, g.wings[i], errs[i]) {
			out.Unavailable = append(out.Unavailable, route.Unavailable(errs[i], g.wings[i]))
		}
	}
	body, err := brain.Marshal(out)
	if err != nil {
		return g.fail(&rec, edge.Classify(err, "")), nil
	}
	res := mcp.NewToolResultText(string(body))
	structure(true, res) // brain_wings declares its outputSchema
	rec.Outcome = "ok"
	g.finish(ctx, ci, &rec, res, start)
	return res, nil
}

// wingLabel bounds the metrics' wing label to configured wings.
func (g *Gateway) wingLabel(name string) string {
	if name == "*" || name == "" {
		return name
	}
	if _, ok := g.byName[name]; ok {
		return name
	}
	return "unknown"
}
