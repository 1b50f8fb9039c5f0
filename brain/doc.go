// Package brain is the contract between the gateway and the shards: every
// rule both sides must apply the same way lives here, once, and both import
// it. It imports nothing else of the module, so the gateway can use it
// without knowing the shard (deps_test.go enforces both).
//
// It holds:
//
//   - the names of a brain and their rules (names.go): wings, the five
//     halls, slugs, inbox names, session ids, note ids and the path forms
//     wiki/<wing>/<hall>/<slug>.md, inbox/<wing>/<name>.md and
//     sessions/<wing>/<session>.jsonl, with RefWing, the wing a note
//     reference names (how the gateway routes a call by id or path);
//   - the tool error envelope {"error":{"code","message"}} and every code a
//     client can receive, each with its meaning (codes.go), and Error, a
//     failure carrying a code and a message that is safe to show (error.go);
//   - capabilities and their implication: curate implies write, write
//     implies read (caps.go);
//   - the idempotency key's argument and its limit (keys.go);
//   - the longest email address, MaxEmailBytes (email.go), which the email
//     rule, the wire, the idempotency journal and the sign-in files share.
//
// The documentation (docs/tools.md) and the Helm chart's schema
// (helm/brainstem/values.schema.json) are tested against this package.
//
// # Naming rules
//
//   - wing: WingRule (a DNS label: it names Kubernetes objects and a TLS
//     server name), and not a reserved device name (con, prn, aux, nul,
//     com0-com9, lpt0-lpt9).
//   - hall: exactly one of Halls().
//   - slug and inbox name: SlugRule, not "_index" and not a reserved device
//     name.
//   - session: SessionRule, not "." or "..", and not a reserved device name
//     in any letter case (CON.jsonl is unusable on Windows checkouts).
//
// Names are checked byte by byte: upper case (except in session names),
// spaces, '%', '\', '/', NUL, control characters and every non-ASCII
// character (including look-alikes of '.', '/' and '-') are rejected, never
// normalised.
//
// ValidPath checks a brain-relative slash path: a top directory (wiki, inbox
// or sessions), a valid wing, and further segments of 1 to 255 bytes from
// [A-Za-z0-9._-], not "." or "..", not ending in '.', and not a reserved
// device name. Absolute paths, "..", backslashes, NUL, empty segments and
// paths over MaxPathLen bytes are rejected. (The filesystem side, refusing
// symbolic links, is shard/layout's Resolve.)
//
// Every rejection is an *Error with CodeInvalidArgument that wraps one of
// ErrInvalidName, ErrInvalidHall, ErrEscape or ErrTooLong (test with
// errors.Is); its message says which rule was broken and what is allowed.
package brain
