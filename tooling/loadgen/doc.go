// Package loadgen drives an MCP endpoint with concurrent mcp-go clients for
// a while and reports latency percentiles and throughput: what
// `brainstem load` runs against a gateway.
package loadgen
