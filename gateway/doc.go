// Package gateway is the public MCP endpoint: Streamable HTTP at /mcp,
// SSO authentication with RFC 6750/9728 challenges, the email-keyed session
// cache of shard tokens, routing by wing, cross-wing search fan-out, rate
// limits, the audit log and metrics. It never parses or rewrites a shard's
// result for a wing-scoped call.
package gateway
