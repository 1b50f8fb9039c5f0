// Package edge is the gateway's HTTP edge and its refusals, and its one
// map of failures. The edge (edge.go) runs the checks of a request to /mcp
// before mcp-go or the lean path sees it (Edge.Admit: origin, protocol
// version, bearer token, body, JSON-RPC id, session owner, rate limit),
// with the per-email token buckets and the failed-authentication budgets
// (authfail.go), session ids bound to their creator (sessionid.go) and the
// connections that have not authenticated yet (conns.go). What it needs of
// the gateway (the verifier, the metrics, the allowed origins) it gets
// through Deps. The failure map (errors.go): proto codes, SSO verification
// errors and the gateway's own sentinels become an *Error with a tool
// error code and a message a person can act on, an HTTP status and
// JSON-RPC body for a request refused before mcp-go sees it (Refusal), or
// a JSON-RPC error code for a resources or prompts request (RPCCodeOf).
// Nothing else in the gateway decides a status or a code.
package edge
