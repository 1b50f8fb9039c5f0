package gateway

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/gateway/rpc"
)

// /mcp is the edge's checks (gateway/edge: origin, protocol version,
// authentication, body, JSON-RPC id, session owner, rate limit), then the
// call info into the request context, then the lean path (unless a test
// switched it off) or mcp-go.

// mcpCall is one request to /mcp on its way through the chain.
type mcpCall struct {
	edge.Request
	ci   callInfo    // handed to the tool handlers through ctx
	msg  rpc.Message // the JSON-RPC envelope of a POST body, parsed once
	lean *rpc.Lean   // a plain tools/call body, walked once (envelope.go); nil otherwise
	ctx  context.Context
}

// serveMCP serves /mcp: the edge's checks, then the chain.
func (g *Gateway) serveMCP(w http.ResponseWriter, r *http.Request) {
	q := &mcpCall{Request: edge.Request{Rec: edge.StatusRecorder{ResponseWriter: w}, R: r}}
	q.Identity = &q.ci.ID
	defer g.edge.Count(&q.Request)
	if g.edge.Admit(&q.Request, q) {
		g.withCallInfo(q)
	}
}

// Envelope implements edge.Envelope: the body's JSON-RPC envelope, parsed
// once for the edge, the lean path and the tool handlers.
func (q *mcpCall) Envelope(body []byte) string {
	if lb, ok := rpc.ParseLean(body); ok {
		q.lean, q.msg = &lb, lb.Msg
	} else if json.Unmarshal(body, &q.msg) != nil {
		q.msg = rpc.Message{}
	}
	return q.msg.Method
}

// RPCID implements edge.Envelope.
func (q *mcpCall) RPCID() []byte { return q.msg.ID }

// withCallInfo puts the call info in the request context: mcp-go builds a
// tool handler's context from it, so the identity, the request id and a
// logger carrying both reach the handlers; then serveCall (traced when
// tracing is on).
func (g *Gateway) withCallInfo(q *mcpCall) {
	q.ci.Key, q.ci.Base = route.KeyOf(q.ci.ID), g.log
	q.ci.RequestID, q.ci.method = q.RequestID, q.Method
	q.ctx = context.WithValue(q.R.Context(), callInfoKey{}, &q.ci)
	if g.tracer != nil {
		g.traced(q)
		return
	}
	g.serveCall(q)
}

// serveCall ends the chain: a tools/call on the lean path (unless a test
// switched it off), and everything else (or a call the lean path declines)
// through mcp-go.
func (g *Gateway) serveCall(q *mcpCall) {
	if q.ci.method == "tools/call" && !g.test.noLeanPath && g.serveLeanCall(q) {
		return
	}
	g.serveMCPGo(q)
}

// serveLeanCall answers q (a tools/call) on the lean path (gateway/rpc) if
// it is a well-formed call of a registered tool, stateless (2026-07-28) or
// on a session mcp-go served lately, leaving the scan of its arguments in
// the call info. It reports whether it answered.
func (g *Gateway) serveLeanCall(q *mcpCall) bool {
	c, ok := g.leanPath.Check(q.R.Header, &q.msg, q.lean)
	if !ok {
		return false
	}
	q.ci.args, q.ci.scanned = c.Args, true
	g.leanPath.Serve(q.ctx, &q.Rec, q.R.Header, c)
	return true
}

// serveMCPGo hands the request to mcp-go's Streamable HTTP server.
func (g *Gateway) serveMCPGo(q *mcpCall) {
	switch q.ci.method {
	case "tools/list":
		g.refresh.ensure(q.R.Context())
	case "resources/list", "resources/read", "prompts/get":
		var ok bool
		if q.ctx, ok = g.surfaces.Prepare(q.ctx, &q.Request, &q.msg); !ok {
			return // answered an error
		}
	}
	g.mcpHTTP.ServeHTTP(&q.Rec, q.R.WithContext(q.ctx))
	if q.R.Method == http.MethodPost {
		g.leanPath.SessionServed(q.R.Header, q.Rec.Header(), q.Rec.Status())
	}
}
