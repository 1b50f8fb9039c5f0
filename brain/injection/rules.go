package injection

// The rules' names: stable strings, part of the tools' results ("flags").
const (
	RuleInstructionOverride = "instruction_override"
	RuleRoleInjection       = "role_injection"
	RuleToolCall            = "tool_call"
	RuleExfiltration        = "exfiltration"
	RuleBidiControl         = "bidi_control"
	RuleInvisibleChar       = "invisible_char"
	RuleUnicodeTag          = "unicode_tag"
	RuleControlChar         = "control_char"
	RuleHTMLComment         = "html_comment"
)

// A Finding is one rule a note breaks, at its first occurrence.
type Finding struct {
	Rule string // one of the Rule constants
	Why  string // what was found, for a person: safe to show, on one line
	At   int    // byte offset of the first occurrence in the scanned content
}

// Version changes whenever Scan may answer differently for the same bytes
// (a rule added, a pattern changed), so that what was derived from an
// earlier version and kept (a shard's index snapshot) is derived again.
const Version = 1

// Flag is a finding as the tools show it: {"rule","why"} (the offset is
// for logs and tests, not part of a result).
type Flag struct {
	Rule string `json:"rule"`
	Why  string `json:"why"`
}

// Flags returns the findings as flags, nil for none (so that a result's
// "flags" is omitted).
func Flags(fs []Finding) []Flag {
	if len(fs) == 0 {
		return nil
	}
	out := make([]Flag, len(fs))
	for i, f := range fs {
		out[i] = Flag{Rule: f.Rule, Why: f.Why}
	}
	return out
}

// Names lists the rules of findings, comma-separated (for logs and
// messages).
func Names(fs []Finding) string {
	var b []byte
	for i, f := range fs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, f.Rule...)
	}
	return string(b)
}

// A Rule is one check of Scan, for the documentation.
type Rule struct {
	Name        string
	Description string // one line
	// Hidden reports a rule about what a person does not see (characters
	// and comments): Clean removes everything such a rule finds.
	Hidden bool
}

// Rules returns every rule of Scan, in the order of its findings.
func Rules() []Rule {
	return []Rule{
		{RuleInstructionOverride, "Tells the reader to ignore, forget or replace its instructions, or to keep what it does from the user (\"ignore all previous instructions\", \"new instructions:\", \"do not tell the user\").", false},
		{RuleRoleInjection, "Gives the reader a new role or forges a chat turn (\"you are now …\", \"developer mode enabled\", a line starting `system:` or `assistant:`, chat-template tokens such as `<|im_start|>` or `[INST]`).", false},
		{RuleToolCall, "A tool-call or JSON-RPC payload in prose, outside code (`\"jsonrpc\":\"2.0\"`, `\"method\":\"tools/call\"`, `\"tool_calls\"`, `<tool_use>`, `<function_calls>`, `<invoke …>`).", false},
		{RuleExfiltration, "A link or command that sends data out or runs fetched code: a URL with a secret in its query or user info, a webhook, paste, request-bin or tunnel endpoint, `curl … | sh`, a curl upload of a local file, `/dev/tcp/`, \"send the contents of ~/.ssh\".", false},
		{RuleBidiControl, "A bidirectional override, embedding or isolate (U+202A–U+202E, U+2066–U+2069), which makes text display in another order than it reads.", true},
		{RuleInvisibleChar, "A zero-width character (U+200B, U+2060–U+2064, U+FEFF after the start, U+180E; U+200C, U+200D, U+200E, U+200F, U+061C and U+00AD beside ASCII or another invisible character) or a run of variation selectors.", true},
		{RuleUnicodeTag, "A tag character (U+E0000–U+E007F), an invisible copy of ASCII, outside an emoji flag sequence.", true},
		{RuleControlChar, "A control character other than tab, line feed and carriage return (C0, DEL, C1).", true},
		{RuleHTMLComment, "An HTML comment outside code (`<!-- … -->`, or an unterminated `<!--`), which the rendered note hides from a person.", true},
	}
}
