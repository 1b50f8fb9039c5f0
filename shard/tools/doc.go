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
// where code is one of invalid_argument, not_found, already_exists,
// conflict, forbidden, too_large, internal and unknown_tool.
// docs/tools.md documents every tool; a test keeps it in line with
// Descriptors.
package tools
