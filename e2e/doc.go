// Package e2e holds the end-to-end tests and benchmarks of Brainstem: a real
// development identity provider, gateway and shards on loopback (devenv),
// driven by real MCP clients. It has no code of its own besides this doc.
package e2e
