// Package gateway is the public MCP endpoint: Streamable HTTP at /mcp,
// SSO authentication with RFC 6750/9728 challenges, the grant cache of
// shard tokens (route.GrantCache: what the design brief calls the session cache,
// configured by the grants section; keyed by email and group set, so
// a grant follows the token in hand), routing by wing (a call that names
// none goes to default_wing when one is configured), cross-wing search
// fan-out, rate limits, the audit log and metrics. It never parses or rewrites a shard's result for a
// wing-scoped call, and it tells a caller nothing about wings the caller
// cannot reach.
//
// Requests go through mcp-go's Streamable HTTP server, except a stateless
// (2026-07-28) tools/call, which the gateway answers itself with mcp-go's
// validators, registry and encoding (gateway/rpc/lean.go); tests hold the
// two paths to byte-identical answers.
//
// # Use
//
//	cfg, err := config.LoadConfig("/etc/brainstem/gateway.yaml") // gateway/config
//	if err == nil {
//		err = cfg.Validate()
//	}
//	logger, _ := logging.New(os.Stderr, cfg.Log.Format, cfg.Log.Level) // internal/logging
//	gw, err := gateway.New(ctx, cfg, gateway.Options{Logger: logger, AuditLog: os.Stdout})
//	public, _ := net.Listen("tcp", cfg.Listen)
//	admin, _ := net.Listen("tcp", cfg.AdminListen)
//	err = gw.Serve(ctx, public, admin) // returns after ctx ends and in-flight calls drained
//	gw.Close()
//
// New does not fail when a shard is unreachable: the wing is retried in the
// background and /readyz reports it until it answers.
//
// See docs/architecture.md (request path, grant cache, singleflight,
// fan-out, error mapping) and docs/operating.md (every config key, metrics,
// probes, audit log format).
package gateway
