// Package proto is the gateway↔shard wire protocol, brainstem/1, over QUIC:
// messages, framing and limits, error codes, mutual TLS, a pooled client
// that reconnects, and a server loop. It knows nothing about notes or MCP:
// tool arguments and results travel as opaque bytes.
//
// See docs/protocol.md for the message layouts and the versioning rule.
package proto
