// Package injection finds text in a note that looks written to steer an
// agent rather than to inform it: hooks put brain content into every
// agent's context without anyone asking, so a hostile note would reach
// every agent (issue 35, docs/security.md "Injection audit").
//
// Scan applies every rule of Rules to a note's bytes and returns at most one
// Finding per rule (its first occurrence), in the order of Rules. The rules:
//
//   - instruction_override, role_injection: phrases that tell the reader to
//     ignore, forget or replace its instructions, hide what it does from
//     the user, take on a new role, or that forge a chat turn ("system:"
//     lines, chat-template tokens);
//   - tool_call: a tool-call or JSON-RPC payload in prose;
//   - exfiltration: links and commands that send data out or run fetched
//     code (secrets in a URL's query, webhook, paste and request-bin
//     endpoints, `curl … | sh`, uploads of local files, "send the contents
//     of ~/.ssh");
//   - bidi_control, invisible_char, unicode_tag, control_char: characters a
//     person does not see (bidirectional overrides and isolates, zero-width
//     characters, tag characters, control characters);
//   - html_comment: an HTML comment, which the rendered note hides.
//
// The phrase rules apply to the whole note, fenced code included: a code
// fence does not stop a model from following what it reads. tool_call and
// html_comment do not apply inside code (fenced blocks and inline code
// spans), where the payload is shown, not hidden or posing as a turn. The
// character rules apply everywhere.
//
// Clean strips what the character and comment rules find, for text a hook
// injects into an agent's context; Clean is idempotent and Scan finds none
// of those rules in its output.
//
// Every function is deterministic, linear in its input and allocates at
// most a few copies of it. The package imports the standard library only.
package injection
