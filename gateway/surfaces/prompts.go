package surfaces

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

// promptCatalog is the union of the wings' prompts: by name, the first
// wing (in config order) wins when two disagree.
type promptCatalog struct {
	by map[string]*route.Entry[route.PromptDescriptor]
}

// RegisterPrompts takes the union of the prompts the wings declare now
// and, when it changed since the one of signature last, hands it to set
// (mcp-go's SetPrompts, every prompt's handler PreparedPrompt). It
// returns the union's signature.
func (s *Surfaces) RegisterPrompts(last string, set func(...server.ServerPrompt)) string {
	ps, by := route.Union(s.Wings, func(w *route.Wing) *[]route.PromptDescriptor { return w.Prompts.Load() },
		func(p route.PromptDescriptor) string { return p.Name }, nil)
	type entry struct {
		Prompt mcp.Prompt
		Wings  []int
	}
	sigOf := make([]entry, 0, len(ps))
	prompts := make([]server.ServerPrompt, 0, len(ps))
	for _, p := range ps {
		sigOf = append(sigOf, entry{p.MCPPrompt(), by[p.Name].Wings})
		prompts = append(prompts, server.ServerPrompt{Prompt: p.MCPPrompt(), Handler: preparedPrompt})
	}
	sig, _ := json.Marshal(sigOf)
	if string(sig) == last && s.prompts.Load() != nil {
		return last
	}
	s.prompts.Store(&promptCatalog{by: by})
	set(prompts...)
	return string(sig)
}

// promptWing is the first of wings declaring the prompt e where caps hold
// its capability, nil if none.
func promptWing(wings []*route.Wing, e *route.Entry[route.PromptDescriptor], caps []brain.Caps) *route.Wing {
	if wi := e.FirstWith(caps, e.Desc.Spec.Needs); wi >= 0 {
		return wings[wi]
	}
	return nil
}

// FilterPrompts is mcp-go's prompt filter: the prompts the caller holds
// the capability of in at least one wing declaring them.
func (s *Surfaces) FilterPrompts(ctx context.Context, prompts []mcp.Prompt) []mcp.Prompt {
	cat := s.prompts.Load()
	c, ok := s.Gateway.Caller(ctx)
	if !ok || cat == nil {
		return nil
	}
	caps, _ := s.Caps(ctx, c)
	out := prompts[:0:0]
	for _, p := range prompts {
		if e, ok := cat.by[p.Name]; ok && promptWing(s.Wings, e, caps) != nil {
			out = append(out, p)
		}
	}
	return out
}

// preparedPrompt is mcp-go's handler of every prompt: it returns what
// Prepare got from the shard.
func preparedPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if p := preparedFrom(ctx).prompt; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("prompt %q was not prepared by the gateway: %w", req.Params.Name, server.ErrPromptNotFound)
}

// promptParams are prompts/get's params, the arguments kept raw for the
// shard (MCP: an object of strings).
type promptParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// preparePrompt routes the prompt of prompts/get and asks the shard. A
// prompt the caller may not see is left to mcp-go, which answers it as
// unknown.
func (s *Surfaces) preparePrompt(ctx context.Context, params []byte) (*prepared, error) {
	var p promptParams
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return nil, nil
	}
	cat := s.prompts.Load()
	if cat == nil || cat.by[p.Name] == nil {
		return nil, nil
	}
	res, err := s.getPrompt(ctx, cat.by[p.Name], p)
	if errors.Is(err, errPromptHidden) {
		return nil, nil
	}
	return &prepared{prompt: res}, err
}

// errPromptHidden: the caller holds the prompt's capability in no wing
// declaring it, so for them it does not exist.
var errPromptHidden = errors.New("gateway: the prompt is not the caller's")

// getPrompt asks the routed (or first suitable) wing for the prompt.
func (s *Surfaces) getPrompt(ctx context.Context, e *route.Entry[route.PromptDescriptor], p promptParams) (*mcp.GetPromptResult, error) {
	start := time.Now()
	args := []byte(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	rec := Record{Tool: string(mcp.MethodPromptsGet) + " " + e.Desc.Name, BytesIn: len(args), Args: args}
	defer s.Gateway.Audit(ctx, &rec, start)
	a, err := rpc.ParseArgs(args)
	if err != nil {
		return nil, rec.Fail(edge.NewError(brain.CodeInvalidArgument, edge.ErrBadParams, "the arguments of prompt %q must be a JSON object of strings: %s", e.Desc.Name, edge.Classify(err, "").Message))
	}
	wingName, routed, err := a.Route(e.Desc.Spec.Routes)
	if err != nil {
		return nil, rec.Fail(edge.Classify(err, ""))
	}
	// A prompt prompts/list does not show the caller does not exist for
	// them, whatever the arguments.
	c, _ := s.Gateway.Caller(ctx)
	caps, _ := s.Caps(ctx, c)
	w := promptWing(s.Wings, e, caps)
	if w == nil {
		rec.Outcome = string(brain.CodeNotFound)
		return nil, errPromptHidden
	}
	if routed {
		if w = s.ByName[wingName]; w == nil || !slices.Contains(e.Wings, w.Idx) {
			return nil, rec.Fail(s.NoWing(ctx, c, wingName))
		}
	}
	rec.Wing = w.Name
	resp, err := s.Shards.Call(ctx, c, w, &proto.CallRequest{RequestID: c.RequestID, Tool: proto.PromptCall + e.Desc.Name, Args: args}, true) // no catalog tool: counted as a write
	if errors.Is(err, route.ErrWingHidden) {
		return nil, rec.Fail(s.NoWing(ctx, c, wingName))
	}
	if err != nil {
		return nil, rec.Fail(edge.Classify(err, w.Name))
	}
	rec.BytesOut = len(resp.Result)
	if resp.IsError {
		code, msg, _ := brain.DecodeError(resp.Result)
		return nil, rec.Fail(&edge.Error{Code: code, Message: msg, Err: edge.ErrShardAnswer})
	}
	var pr toolspec.PromptResult
	if err := json.Unmarshal(resp.Result, &pr); err != nil {
		return nil, rec.Fail(edge.NewError(brain.CodeInternal, errors.Join(edge.ErrShardAnswer, err), "wing %q answered prompt %q with unreadable messages", w.Name, e.Desc.Name))
	}
	res := &mcp.GetPromptResult{Description: pr.Description, Messages: make([]mcp.PromptMessage, len(pr.Messages))}
	for i, m := range pr.Messages {
		res.Messages[i] = mcp.PromptMessage{Role: mcp.Role(m.Role), Content: mcp.NewTextContent(m.Content.Text)}
	}
	rec.Outcome = "ok"
	return res, nil
}
