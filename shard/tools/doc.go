// Package tools is the single source of the brain tools' names, input
// schemas, descriptions and behaviour. A Set wraps one wing's store; every
// transport (the brainstem/1 QUIC service, the stdio MCP mode) advertises
// Set.Descriptors and forwards calls to Set.Call, whose result bytes are the
// text content the agent receives, unchanged.
//
// Call checks the caller's capability itself (defence in depth), decodes the
// arguments strictly (an unknown argument is an error naming it), enforces
// the Limits, runs the tool and returns compact JSON with a fixed field
// order. Failures are results too, with isError set and the body
//
//	{"error":{"code":"<code>","message":"<what to do about it>"}}
//
// (brain.EncodeError) where code is one of the contract's (brain.Codes):
// invalid_argument, not_found, already_exists, conflict, forbidden,
// too_large, internal or unknown_tool. A refusal is a *brain.Error built
// where it is found (here, in the store, by the naming rules) and is shown
// as it is; any other error is internal: logged, and answered with a
// generic message. Only this package names tools in messages (hint adds
// which tool to call next to a store's refusal). A tool's spec may also
// declare the predecessor's call shape (legacy.go: the earlier single-user
// brain server's argument names, declared nowhere else), which the spec's
// decode maps onto the tool's own arguments; the answer to such a call adds
// the predecessor's field names. A tool disabled by configuration
// (brain_purge while purging is off) is left out of Descriptors and Specs,
// and still answers a call with its refusal. docs/tools.md documents
// every tool and every code; a test keeps it in line with Descriptors and
// brain.Codes.
package tools
