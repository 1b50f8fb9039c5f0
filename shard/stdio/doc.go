// Package stdio serves the brain tools of one wing as an MCP server over a
// pair of streams (stdin/stdout for `brainstem shard --stdio`), for a single
// local user: the caller holds every capability and is identified by an
// email given on the command line or read from `git config user.email`.
//
// Tool results are the exact bytes tools.Set.Call returns, sent as the text
// content of the MCP result (with isError set for error results), so the
// same call through the gateway and through stdio yields identical bytes.
//
// mcp-go keeps the stdio session in a package-level variable, so run at most
// one Serve per process at a time.
package stdio
