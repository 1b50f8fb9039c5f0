// Package brainstem is the root of the Brainstem module: one public MCP URL
// for a company's shared, governed brain. The code lives in the packages
// below: auth (identity, policies, shard tokens), proto (the gateway↔shard
// QUIC protocol), shard (one wing of the brain), gateway (the public MCP
// endpoint) and cmd/brainstem (the binary). See docs/architecture.md.
//
// This package holds only the tests that enforce the architecture.
package brainstem
