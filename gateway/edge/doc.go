// Package edge is the gateway's one map of failures (errors.go): proto
// codes, SSO verification errors and the gateway's own sentinels become an
// *Error with a tool error code and a message a person can act on, an HTTP
// status and JSON-RPC body for a request refused before mcp-go sees it
// (Refusal), or a JSON-RPC error code for a resources or prompts request
// (RPCCodeOf). Nothing else in the gateway decides a status or a code.
package edge
