package injection

import (
	"cmp"
	"regexp"
	"strings"
)

// A phrase is one pattern of a text rule, matched against the ASCII
// lower-cased note (which keeps every byte offset). A match can only start
// at one of the phrase's leads, so Scan tries the pattern, anchored, only
// where a lead occurs: each lead word where a word starts (at a \b, the
// word's letters and digits spelling the lead), each other lead (starting
// with a sign) wherever it occurs. The whole note is never run through a
// pattern.
type phrase struct {
	rule string
	what string // the start of the finding's Why
	// leads: the words or literal strings a match starts with.
	leads []string
	// lineStart: a match starts a line, after nothing but spaces, tabs
	// and markdown marks (>, *, #).
	lineStart bool
	window    int // the most bytes a match spans
	// needs: when set, the window must hold one of these for the pattern
	// to be tried (a cheap test before a costly pattern).
	needs []string
	src   string         // the pattern, unanchored (what the tests compare with)
	re    *regexp.Regexp // ^(?:src)
}

// defaultWindow bounds a match of most phrases.
const defaultWindow = 256

// ws is the whitespace between two words of a phrase: ASCII whitespace,
// no-break and other Unicode spaces, hyphens and underscores.
const ws = `[\s_\-\x{a0}\x{2000}-\x{200a}\x{202f}\x{205f}\x{3000}]+`

// words joins alternatives into a non-capturing group.
func words(alt ...string) string { return "(?:" + strings.Join(alt, "|") + ")" }

// table is the text rules' phrases and their leads, built once.
type table struct {
	list  []phrase
	words map[string][]int // lead word -> indexes in list
	// starts marks the first two bytes of the lead words (a lead of one
	// byte marks its byte and any second), so that most words of a note
	// are passed over without a map lookup.
	starts [256][256]bool
	lits   []literalLead
}

type literalLead struct {
	lit     string
	phrases []int
}

var phrases = buildPhrases()

// mark records the first two bytes of the lead word l in starts.
func (t *table) mark(l string) {
	if len(l) > 1 {
		t.starts[l[0]][l[1]] = true
		return
	}
	for c := range t.starts[l[0]] {
		t.starts[l[0]][c] = true
	}
}

// mayLead reports whether the word w can be a lead word.
func (t *table) mayLead(w []byte) bool {
	if len(w) == 1 {
		return t.starts[w[0]][0]
	}
	return t.starts[w[0]][w[1]]
}

func buildPhrases() *table {
	t := &table{words: map[string][]int{}}
	lits := map[string][]int{}
	add := func(rule string, ps []phrase) {
		for _, p := range ps {
			p.rule, p.window = rule, cmp.Or(p.window, defaultWindow)
			p.re = regexp.MustCompile(`^(?:` + p.src + `)`)
			i := len(t.list)
			t.list = append(t.list, p)
			for _, l := range p.leads {
				if isWordByte(l[0]) {
					t.words[l] = append(t.words[l], i)
					t.mark(l)
				} else {
					if lits[l] == nil {
						t.lits = append(t.lits, literalLead{lit: l})
					}
					lits[l] = append(lits[l], i)
				}
			}
		}
	}
	overridePhrases(add)
	rolePhrases(add)
	toolPhrases(add)
	exfiltrationPhrases(add)
	for i := range t.lits {
		t.lits[i].phrases = lits[t.lits[i].lit]
	}
	return t
}

type addFunc func(rule string, ps []phrase)

func overridePhrases(add addFunc) {
	verbs := []string{"ignore", "disregard", "forget", "override", "overrule", "bypass", "abandon", "discard", "dismiss", "neglect", "set"}
	verb := words(append(verbs[:len(verbs)-1:len(verbs)-1], `set`+ws+`aside`)...)
	q1 := words("previous", "prior", "preceding", "above", "earlier", "former", "original", "initial", "foregoing", "aforementioned", "your", "system", "safety", "developer")
	q := words(q1, "all", "any", "every", "these", "those", "the", "of", "my", "whatever", "current")
	n1 := words(`instructions?`, `prompts?`, `directions?`, `directives?`, "guidelines", "guardrails", "programming", "training")
	n2 := words("rules", "guidance", "constraints", "restrictions", "policies", "orders", "commands", "context", "messages", "conversation")
	nouns := []string{"instruction", "prompt", "direction", "directive", "guideline", "guardrail", "programming", "training", "rules", "guidance",
		"constraint", "restriction", "policies", "orders", "command", "context", "message", "conversation"}
	user := words("the", "your") + ws + words("user", "human") + `s?\b`
	drop := "tells the reader to drop its instructions"
	replaced := "announces replacement instructions"
	hide := "tells the reader to keep something from the user"
	add(RuleInstructionOverride, []phrase{
		{what: drop, leads: verbs, needs: nouns, src: `\b` + verb + `(?:` + ws + q + `)*?` + ws + q1 + `(?:` + ws + q + `)*` + ws + words(n1, n2) + `\b`},
		{what: drop, leads: verbs, needs: nouns, src: `\b` + verb + `(?:` + ws + q + `)*?` + ws + words("all", "any", "every") + `(?:` + ws + q + `)*` + ws + n1 + `\b`},
		{what: drop, leads: []string{"ignore", "disregard", "forget"}, src: `\b` + words("ignore", "disregard", "forget") + ws + words("all", "everything", "anything") + ws +
			`(?:(?:that|which|of)` + ws + `)?` + words(`(?:you|i)`+ws+`(?:(?:were|was|have|had|'ve)`+ws+`)?(?:been`+ws+`)?`+words("told", "said", "given", "instructed", "taught"),
			"above", "before", "prior", "previously", `so`+ws+`far`, `until`+ws+`now`, `up`+ws+`to`+ws+`now`, `the`+ws+`above`)},
		{what: replaced, leads: []string{"new", "updated", "real", "actual", "revised", "true", "hidden", "secret", "override", "important", "additional"},
			src: `\b` + words("new", "updated", "real", "actual", "revised", "true", "hidden", "secret", "override", "important", "additional") + ws + `(?:system` + ws + `)?instructions?\s*:`},
		{what: replaced, leads: []string{"your"}, src: `\byour` + ws + words("new", "real", "actual", "true") + ws +
			words(`instructions?`, "task", "goal", "objective", "mission", "role", "orders", "purpose") + ws + words("is", "are", "now") + `\b`},
		{what: hide, leads: []string{"do", "don", "never"}, src: `\b` + words(`do`+ws+`not`, `don(?:'|\x{2019})?t`, "never") + ws +
			words("tell", "inform", "notify", "alert", `mention`+ws+`(?:this|it)`+ws+`to`, `reveal`+ws+`(?:this|it)`+ws+`to`) + ws + user},
		{what: hide, leads: []string{"keep"}, src: `\bkeep` + ws + words("this", "it", "these", `these`+ws+`instructions`) + ws + words("secret", "hidden", "confidential") + ws + `from` + ws + user},
		{what: "asks for the reader's hidden instructions", leads: []string{"reveal", "print", "output", "repeat", "show", "leak", "dump", "display", "disclose", "echo"},
			src: `\b` + words("reveal", "print", "output", "repeat", "show", "leak", "dump", "display", "disclose", "echo") + ws + `(?:me` + ws + `)?` + words("your", "the") + ws +
				`(?:` + words("full", "entire", "complete", "original", "initial", "hidden", "exact") + ws + `)*` +
				words(`system`+ws+`prompt`, `system`+ws+`message`, `hidden`+ws+`instructions`, `initial`+ws+`instructions`, `original`+ws+`instructions`, `instructions`+ws+`above`)},
		{what: "claims to supersede the reader's instructions", leads: []string{"these", "this", "the"},
			src: `\b` + words("these", "this", `the`+ws+`following`) + ws + words(`instructions?`, `rules?`, "message", "note") + ws +
				words("supersedes?", "overrides?", "replaces?", `takes?`+ws+`precedence`) + ws + words("all", "any", "your", "previous", "prior", "the", "over", "every") + `\b`},
		{what: "tells the reader to stop following its instructions", leads: []string{"stop"},
			src: `\bstop` + ws + words("following", "obeying") + ws + words("your", "previous", "prior", "all", "system", "the"+ws+"system") + `\b`},
	})
}

func rolePhrases(add addFunc) {
	role := "gives the reader a new role"
	turn := "forges a chat turn"
	art := `(?:` + words("a", "an", "the", "my") + ws + `)?`
	add(RuleRoleInjection, []phrase{
		{what: role, leads: []string{"you"}, src: `\byou(?:` + ws + `are|(?:'|\x{2019})re|` + ws + `will` + ws + `be)` + ws + `now` + ws +
			`(?:` + words("a", "an", "the", "my") + ws + `)?(?:[a-z0-9]+` + ws + `){0,3}?` +
			words("ai", "model", "chatbot", "llm", "dan", "jailbroken", "unrestricted", "unfiltered", "uncensored", "evil", "rogue", "unbound") + `\b`},
		{what: role, leads: []string{"from"}, src: `\bfrom` + ws + `now` + ws + `on,?` + ws + `(?:you` + ws + `)?(?:` + words("will", "must", "shall", "should", "are", "only") + ws + `)*` +
			words("respond", "answer", "reply", "act", "behave", "pretend", "ignore", "obey", "output", "speak", "talk", "be"+ws+"dan", `follow`+ws+words("my", "these", "only")) + `\b`},
		{what: role, leads: []string{"act", "behave", "respond", "answer", "roleplay", "role", "pose"},
			src: `\b` + words("act", "behave", "respond", "answer", "roleplay", "role-play", "pose") + ws + `as` + ws + `(?:if` + ws + `you` + ws + words("are", "were") + ws + `)?` + art +
				words("unrestricted", "unfiltered", "uncensored", "jailbroken", "evil", "rogue", "malicious", "dan", `ai`+ws+`without`, `an?`+ws+`ai`+ws+`with`+ws+`no`) + `\b`},
		{what: role, leads: []string{"pretend"}, src: `\bpretend` + ws + words(`to`+ws+`be`, `you`+ws+`are`, `that`+ws+`you`+ws+`are`, `you(?:'|\x{2019})re`) + ws + art +
			words("ai", "assistant", "model", "system", "administrator", "root", "unrestricted", "different", "dan", "jailbroken", "evil", "developer", "operator") + `\b`},
		{what: role, leads: []string{"enter", "activate", "switch"}, src: `\b` + words(`enter`, `activate`, `switch`+ws+`to`, `switch`+ws+`into`) + ws + `(?:the` + ws + `)?` +
			words("developer", "god", "dan", "jailbreak", "jailbroken", "unrestricted", "evil") + ws + `mode\b`},
		{what: role, leads: []string{"developer", "god", "dan", "jailbreak", "unrestricted"}, src: `\b` + words("developer", "god", "dan", "jailbreak", "unrestricted") + ws + `mode` + ws +
			`(?:is` + ws + `(?:now` + ws + `)?)?` + words("enabled", "activated", "on", "engaged") + `\b`},
		{what: role, leads: []string{"do"}, src: `\bdo` + ws + `anything` + ws + `now\b`},
		{what: turn, leads: []string{"system", "assistant", "human"}, lineStart: true,
			src: `\b` + words("system", "assistant", "human") + `[ \t]*(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*[^\s|]`},
		{what: turn, leads: []string{"<|", "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "<sys", "</sys"},
			src: `<\|` + words("im_start", "im_end", "im_sep", "system", "user", "assistant", "endoftext", "start_header_id", "end_header_id", "eot_id", "begin_of_text", "channel", "message", "start", "end", "eom_id") + `\|>` +
				`|\[/?inst\]|<</?sys>>|</?` + words("system", "system-reminder", "system_prompt", "system-prompt", "sys") + `\s*>`},
	})
}

func toolPhrases(add addFunc) {
	rpc := "a JSON-RPC payload in prose"
	call := "a tool-call payload in prose"
	tags := words("tool_use", "tool_call", "tool_calls", "tool_result", "tool_results", "function_call", "function_calls", "function_result", "function_results", "invoke", "parameter")
	add(RuleToolCall, []phrase{
		{what: rpc, leads: []string{`"jsonrpc"`}, src: `"jsonrpc"\s*:\s*"2\.0"`},
		{what: rpc, leads: []string{`"method"`}, src: `"method"\s*:\s*"` + words("tools/call", "tools/list", "resources/read", "prompts/get", "sampling/createmessage") + `"`},
		{what: call, leads: []string{`"tool_calls"`, `"function_call"`, `"tool_use"`, `"type"`},
			src: `"` + words("tool_calls", "function_call", "tool_use") + `"\s*:|"type"\s*:\s*"` + words("tool_use", "tool_call", "function_call", "function") + `"`},
		{what: call, leads: []string{`"name"`}, src: `"name"\s*:\s*"[^"\n]+"\s*,\s*"` + words("arguments", "parameters", "input") + `"\s*:\s*[{"]`},
		{what: call, leads: []string{"<tool_", "</tool_", "<function_", "</function_", "<invoke", "</invoke", "<parameter", "</parameter", "<", "</", "<|", "[tool_calls]"},
			src: `</?(?:antml:)?` + tags + `\b[^<>\n]*>` + `|<\|` + words("python_tag", "tool_call", "tool_calls") + `\|>|\[tool_calls\]`},
	})
}

func exfiltrationPhrases(add addFunc) {
	fetch := []string{"curl", "wget", "iwr", "irm", "invoke"}
	shell := words(`(?:ba|z|k|c|tc|da|fi|a)?sh`, `python[0-9.]*`, "perl", "ruby", "node", "php", "iex", "invoke-expression", "pwsh", "powershell")
	owner := words("your", "the", "all", "any", "every", "their", "my") + ws
	target := words(`~/\.ssh`, `\.ssh/`, `\bid_(?:rsa|dsa|ecdsa|ed25519)(?:[^.a-z0-9_]|\.[^p]|$)`, `~/\.aws`, `\.aws/credentials`, `~/\.kube`, `\.kube/config`, `\bkubeconfig\b`,
		`\.netrc\b`, `\.git-credentials`, `\.npmrc\b`, `\.pypirc\b`, `\.docker/config\.json`, `/etc/(?:passwd|shadow)\b`, `(?:^|[\s/])\.env\b`,
		owner+`(?:`+words("ssh", "api", "private", "access", "secret", "aws", "github", "gpg", "auth", "bearer", "session", "signing", "oauth")+ws+`)`+words("keys?", "tokens?"),
		owner+words("secrets", "credentials", "passwords", `env(?:ironment)?`+ws+`var(?:iable)?s`, `system`+ws+`prompt`, `session`+ws+`cookies?`, "cookies"))
	send := []string{"send", "post", "upload", "exfiltrate", "exfil", "leak", "transmit", "forward", "email", "e", "paste", "submit", "dump", "relay"}
	add(RuleExfiltration, []phrase{
		{what: "pipes a download into a shell", leads: fetch, window: 512,
			src: `\b` + words("curl", "wget", "iwr", "irm", "invoke-webrequest", "invoke-restmethod") + `\b[^\n|;&]*\|\s*(?:sudo\s+(?:-\S+\s+)*)?` + shell + `\b`},
		{what: "runs a download in a shell", leads: []string{"sh", "bash", "zsh", "iex", ".downloadstring"},
			src: `\b(?:ba|z)?sh\s+(?:-c\s+)?["']?(?:\$\(|<\()\s*(?:curl|wget)\b|\biex\s*\(\s*(?:iwr|irm|new-object|invoke-webrequest|invoke-restmethod)\b|\.downloadstring\s*\(`},
		{what: "uploads a local file", leads: []string{"curl"}, window: 512,
			src: `\bcurl\b[^\n|;]*?\s(?:(?:-d|--data(?:-binary|-raw|-urlencode|-ascii)?|-f|--form|--form-string)[=\s]+['"]?(?:[a-z0-9_.-]+=)?@|(?:-t|--upload-file)[=\s]+['"]?[~/.$])`},
		{what: "opens a raw network connection from a shell", leads: []string{"/dev/"}, src: `/dev/(?:tcp|udp)/`},
		{what: "asks the reader to send secrets out", leads: send, window: 112,
			needs: []string{"ssh", "id_", "aws", "kube", "netrc", "credential", "npmrc", "pypirc", "docker", "/etc/", ".env", "key", "token", "secret", "password", "var", "prompt", "cookie"},
			src:   `\b` + words("send", "post", "upload", "exfiltrate", "exfil", "leak", "transmit", "forward", `e-?mail`, "paste", "submit", "dump", "relay") + `\b[^.\n]*?` + target},
	})
}
