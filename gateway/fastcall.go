package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// The lean path for stateless tool calls.
//
// mcp-go's Streamable HTTP handler is general: for every POST it parses the
// body five times, builds an ephemeral session, starts a goroutine to forward
// server-to-client notifications and reflects over the result, about 130 µs
// of CPU around a call the gateway itself answers in about 20. A tools/call
// under the stateless revision 2026-07-28 needs none of that: there is no
// session to find or touch, the server sends nothing but the answer, and the
// answer is one JSON object.
//
// serveStatelessCall serves exactly that request and nothing else. It checks
// it with mcp-go's own exported validators, looks the tool up in mcp-go's own
// registry, calls the same handler and stamps the result the way mcp-go does
// for that revision. Whenever a request is anything else (an older revision
// with its Mcp-Session-Id, a header mismatch, an unknown tool, a body mcp-go
// would refuse) it returns false having written nothing, and mcp-go serves
// the request, errors included. fastcall_test.go sends the same requests
// through both paths and requires byte-identical answers.

// rpcMessage is the JSON-RPC envelope of a POST body, parsed once by the
// middleware.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// serveStatelessCall answers msg (the body of r, a tools/call) without
// mcp-go's transport if the request is a well-formed stateless 2026-07-28
// call of a registered tool. It reports whether it answered.
func (g *Gateway) serveStatelessCall(ctx context.Context, w http.ResponseWriter, r *http.Request, msg *rpcMessage) bool {
	h := r.Header
	version := h.Get(mcp.HeaderProtocolVersion)
	if g.disableLeanPath || !mcp.IsModernProtocol(version) || h.Get(mcp.HeaderLastEventID) != "" ||
		msg.JSONRPC != mcp.JSONRPC_VERSION || msg.Method != string(mcp.MethodToolsCall) ||
		msg.Result != nil || msg.Error != nil || !isJSONMediaType(h.Get("Content-Type")) {
		return false
	}
	id, ok := requestIDValue(msg.ID)
	if !ok {
		return false
	}
	var params mcp.CallToolParams
	if len(msg.Params) == 0 || json.Unmarshal(msg.Params, &params) != nil {
		return false
	}
	// 2026-07-28 carries its version (equal to the header's) and the client's
	// capabilities in _meta on every request.
	if params.Meta.ProtocolVersion() != version || params.Meta.ClientCapabilities() == nil {
		return false
	}
	if mcp.ValidateStandardHeaders(h.Get, version, mcp.MethodToolsCall, msg.Params) != nil {
		return false
	}
	st := g.mcp.GetTool(params.Name)
	if st == nil || st.Handler == nil || st.Tool.Execution != nil ||
		mcp.ValidateParamHeadersLookup(firstHeader(h), &st.Tool, msg.Params) != nil {
		return false
	}

	g.metrics.leanCalls.Inc()
	req := mcp.CallToolRequest{Params: params, Header: h}
	req.Method = string(mcp.MethodToolsCall)
	res, err := callRecovering(ctx, st.Handler, req)
	var out mcp.JSONRPCMessage
	switch {
	case err != nil:
		out = mcp.NewJSONRPCError(mcp.NewRequestId(id), mcp.INTERNAL_ERROR, err.Error(), nil)
	case res == nil:
		out = mcp.NewJSONRPCError(mcp.NewRequestId(id), mcp.INTERNAL_ERROR,
			fmt.Sprintf("tool '%s' handler returned no result", params.Name), nil)
	default:
		// What mcp-go stamps on every 2026-07-28 result.
		if res.GetResultType() == "" {
			res.SetResultType(mcp.ResultTypeComplete)
		}
		if meta := res.EnsureResultMeta(); meta.ServerInfo() == nil {
			meta.SetServerInfo(mcp.Implementation{Name: serverName, Version: Version})
		}
		out = mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if err := json.NewEncoder(w).Encode(out); err != nil {
		g.log.Debug("cannot write a tool call's answer", "err", err)
	}
	return true
}

// callRecovering calls a tool handler the way mcp-go's recovery middleware
// does: a panic becomes the handler's error.
func callRecovering(ctx context.Context, h func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error), req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("panic recovered in %s tool handler: %v", req.Params.Name, p)
		}
	}()
	return h(ctx, req)
}

// requestIDValue decodes a JSON-RPC id as mcp-go does (into any); only
// strings and numbers are served on the lean path.
func requestIDValue(raw json.RawMessage) (any, bool) {
	var id any
	if len(raw) == 0 || json.Unmarshal(raw, &id) != nil {
		return nil, false
	}
	switch id.(type) {
	case string, float64:
		return id, true
	}
	return nil, false
}

func isJSONMediaType(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// firstHeader reports a header's first value and whether it was sent at all.
func firstHeader(h http.Header) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v := h.Values(name)
		if len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
}
