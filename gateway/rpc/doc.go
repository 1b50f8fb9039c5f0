// Package rpc reads the JSON-RPC of a tools/call as the gateway needs it,
// without decoding what it passes on: the envelope of a POST body
// (Message), tools/call's params decoded as mcp-go decodes them
// (CallParams), the one walk of a plain tools/call body that the lean
// path serves (ParseLean, envelope.go), and the top-level members of a
// call's arguments (Args, ScanArgs), from which a call's wing is derived
// (Args.Route) and the agent's idempotency key read; and the lean path
// (LeanServer, lean.go), which serves a stateless tools/call without
// mcp-go's transport and writes its answer around the result's text.
// Every refusal is an edge.Error, as mcp-go or the shard would refuse the
// same bytes.
package rpc
