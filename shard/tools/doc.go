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
// which tool to call next to a store's refusal). docs/tools.md documents
// every tool and every code; a test keeps it in line with Descriptors and
// brain.Codes.
package tools
