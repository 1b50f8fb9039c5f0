package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
	"github.com/brainstem/brainstem/gateway/surfaces"
	"github.com/brainstem/brainstem/proto"
)

// Prompts, as tools: the shards declare them (toolspec.Prompt, in their
// ListTools answer), the gateway advertises their union filtered by the
// caller's capabilities (prompts/list), and a prompts/get goes to the
// shard of the wing its arguments route to (proto.PromptCall), which
// validates the arguments with the same rules as a tool's and renders the
// messages. A prompt no argument routes (search_before_task without a
// wing) is asked of the first wing, in config order, that declares it and
// where the caller holds its capability: its messages do not depend on
// the wing.

// registerPrompts hands the prompt catalog to mcp-go when it changed.
func (r *refresher) registerPrompts() {
	g := r.g
	r.mu.Lock()
	defer r.mu.Unlock()
	cat := surfaces.BuildPromptCatalog(g.wings)
	type entry struct {
		Prompt mcp.Prompt
		Wings  []int
	}
	sigOf := make([]entry, 0, len(cat.Prompts))
	prompts := make([]server.ServerPrompt, 0, len(cat.Prompts))
	for _, p := range cat.Prompts {
		sigOf = append(sigOf, entry{p.MCPPrompt(), cat.By[p.Name].Wings})
		prompts = append(prompts, server.ServerPrompt{Prompt: p.MCPPrompt(), Handler: preparedPrompt})
	}
	sig, _ := json.Marshal(sigOf)
	if string(sig) == r.lastPromptSig && g.promptCat.Load() != nil {
		return
	}
	g.promptCat.Store(cat)
	g.mcp.SetPrompts(prompts...)
	r.lastPromptSig = string(sig)
}

// filterPrompts is mcp-go's prompt filter: the prompts the caller holds
// the capability of in at least one wing declaring them.
func (g *Gateway) filterPrompts(ctx context.Context, prompts []mcp.Prompt) []mcp.Prompt {
	ci := callInfoFrom(ctx)
	cat := g.promptCat.Load()
	if ci == nil || cat == nil {
		return nil
	}
	caps, _ := g.capsAll(ctx, ci)
	out := prompts[:0:0]
	for _, p := range prompts {
		if e, ok := cat.By[p.Name]; ok && surfaces.PromptWing(g.wings, e, caps) != nil {
			out = append(out, p)
		}
	}
	return out
}

// preparedPrompt is mcp-go's handler of every prompt: it returns what
// preparePrompt got from the shard.
func preparedPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if ci := callInfoFrom(ctx); ci != nil && ci.prepared != nil && ci.prepared.prompt != nil {
		return ci.prepared.prompt, nil
	}
	return nil, fmt.Errorf("prompt %q was not prepared by the gateway: %w", req.Params.Name, server.ErrPromptNotFound)
}

// promptParams are prompts/get's params, the arguments kept raw for the
// shard (MCP: an object of strings).
type promptParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// preparePrompt serves the gateway's part of prompts/get: it routes the
// prompt, asks the shard, and leaves the result for mcp-go (or answers an
// error itself, returning false). A prompt the caller may not see is left
// to mcp-go, which answers it as unknown.
func (g *Gateway) preparePrompt(q *mcpCall) bool {
	var p promptParams
	if q.msg.ID == nil || len(q.msg.Params) == 0 || json.Unmarshal(q.msg.Params, &p) != nil {
		return true
	}
	cat := g.promptCat.Load()
	if cat == nil || cat.By[p.Name] == nil {
		return true
	}
	res, err := g.getPrompt(q.ctx, &q.ci, cat.By[p.Name], p)
	if err != nil {
		if errors.Is(err, errPromptHidden) {
			return true
		}
		e := edge.Classify(err, "")
		edge.WriteRPCError(&q.Rec, q.msg.ID, edge.RPCCodeOf(e, mcp.IsModernProtocol(q.R.Header.Get(mcp.HeaderProtocolVersion))), e)
		return false
	}
	q.ci.prepared = &prepared{prompt: res}
	return true
}

// errPromptHidden: the caller holds the prompt's capability in no wing
// declaring it, so for them it does not exist.
var errPromptHidden = errors.New("gateway: the prompt is not the caller's")

// getPrompt asks the routed (or first suitable) wing for the prompt.
func (g *Gateway) getPrompt(ctx context.Context, ci *callInfo, e *route.Entry[route.PromptDescriptor], p promptParams) (*mcp.GetPromptResult, error) {
	start := time.Now()
	args := []byte(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	rec := auditRecord{Tool: string(mcp.MethodPromptsGet) + " " + e.Desc.Name, BytesIn: len(args), Args: args}
	defer g.finishRecord(ctx, ci, &rec, start)
	fail := func(err *edge.Error) (*mcp.GetPromptResult, error) {
		rec.Outcome, rec.err = string(err.Code), err
		return nil, err
	}
	a, err := rpc.ParseArgs(args)
	if err != nil {
		return fail(edge.NewError(brain.CodeInvalidArgument, edge.ErrBadParams, "the arguments of prompt %q must be a JSON object of strings: %s", e.Desc.Name, edge.Classify(err, "").Message))
	}
	wingName, routed, err := a.Route(e.Desc.Spec.Routes)
	if err != nil {
		return fail(edge.Classify(err, ""))
	}
	// A prompt prompts/list does not show the caller does not exist for
	// them, whatever the arguments.
	caps, _ := g.capsAll(ctx, ci)
	w := surfaces.PromptWing(g.wings, e, caps)
	if w == nil {
		rec.Outcome = string(brain.CodeNotFound)
		return nil, errPromptHidden
	}
	if routed {
		if w = g.byName[wingName]; w == nil || !slices.Contains(e.Wings, w.Idx) {
			return fail(g.noWing(ctx, ci, wingName))
		}
	}
	rec.Wing = w.Name
	resp, err := g.callWing(ctx, ci, w, &proto.CallRequest{RequestID: ci.requestID, Tool: proto.PromptCall + e.Desc.Name, Args: args}, true) // no catalog tool: counted as a write
	if errors.Is(err, errWingHidden) {
		return fail(g.noWing(ctx, ci, wingName))
	}
	if err != nil {
		return fail(edge.Classify(err, w.Name))
	}
	rec.BytesOut = len(resp.Result)
	if resp.IsError {
		code, msg, _ := brain.DecodeError(resp.Result)
		return fail(&edge.Error{Code: code, Message: msg, Err: edge.ErrShardAnswer})
	}
	var pr toolspec.PromptResult
	if err := json.Unmarshal(resp.Result, &pr); err != nil {
		return fail(edge.NewError(brain.CodeInternal, errors.Join(edge.ErrShardAnswer, err), "wing %q answered prompt %q with unreadable messages", w.Name, e.Desc.Name))
	}
	res := &mcp.GetPromptResult{Description: pr.Description, Messages: make([]mcp.PromptMessage, len(pr.Messages))}
	for i, m := range pr.Messages {
		res.Messages[i] = mcp.PromptMessage{Role: mcp.Role(m.Role), Content: mcp.NewTextContent(m.Content.Text)}
	}
	rec.Outcome = "ok"
	return res, nil
}
