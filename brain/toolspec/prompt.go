package toolspec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/brainstem/brainstem/brain"
)

// Prompt is the declaration of one MCP prompt, as Spec is of a tool: its
// arguments (strings, as MCP prompt arguments are, with the same limits
// and checks as tool arguments and decoded by the same rules), the
// capability it is for, the arguments that route it to a wing, and its
// messages. Everything else is derived from it: the descriptor prompts/list
// shows (PromptDescriptor), the validation of prompts/get's arguments
// (DecodeArgs) and the messages it answers (Render).
type Prompt struct {
	Name, Title, Description string
	// Needs is the capability the prompt's workflow needs in the wing (read
	// when zero): the gateway lists the prompt to callers holding it in a
	// wing that declares it.
	Needs brain.Caps
	Args  []Arg // Type String only
	// Messages are the prompt's messages, in order. A message's Text names
	// arguments as {{name}}, replaced by the argument's value as a JSON
	// string (quoted and escaped, so it reads as a value in prose and is one
	// in the JSON arguments the message tells the agent to pass). A message
	// with When is sent only when that argument was given.
	Messages []PromptMessage
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role string // "user" or "assistant"
	Text string
	When string // an argument's name: sent only when it is given; "" always
}

// placeholder is an argument named in a message's text.
var placeholder = regexp.MustCompile(`\{\{([a-z_]+)\}\}`)

// Capability returns the capability the prompt is for (read when unset).
func (p *Prompt) Capability() brain.Caps { return cmp.Or(p.Needs, brain.CapRead) }

// Validate checks the declaration: a name and description, string
// arguments declared once, messages whose roles are MCP's and whose
// placeholders and When name declared arguments. An error is a
// programming error.
func (p *Prompt) Validate() error {
	if p.Name == "" || p.Description == "" || len(p.Messages) == 0 {
		return fmt.Errorf("toolspec: a prompt needs a name, a description and messages")
	}
	if err := validateArgs(p.Name, p.Args); err != nil {
		return err
	}
	for _, a := range p.Args {
		if a.Type != String {
			return fmt.Errorf("toolspec: prompt %s: argument %s is a %s; prompt arguments are strings", p.Name, a.Name, a.Type)
		}
	}
	for i, m := range p.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Errorf("toolspec: prompt %s: message %d has role %q", p.Name, i, m.Role)
		}
		if m.When != "" && !hasArg(p.Args, m.When) {
			return fmt.Errorf("toolspec: prompt %s: message %d is sent when %q, which is not an argument", p.Name, i, m.When)
		}
		for _, ph := range placeholder.FindAllStringSubmatch(m.Text, -1) {
			if !hasArg(p.Args, ph[1]) {
				return fmt.Errorf("toolspec: prompt %s: message %d names {{%s}}, which is not an argument", p.Name, i, ph[1])
			}
		}
	}
	return nil
}

// promptDescriptor is a prompt as prompts/list shows it.
type promptDescriptor struct {
	Name        string      `json:"name"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description"`
	Arguments   []promptArg `json:"arguments"`
	Meta        promptMeta  `json:"_meta"`
}

type promptArg struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
}

type promptMeta struct {
	Capability string     `json:"brainstem/capability"`
	Route      []RouteArg `json:"brainstem/route,omitempty"`
}

// Routes returns the arguments that route the prompt, in order.
func (p *Prompt) Routes() []RouteArg { return (&Spec{Args: p.Args}).Routes() }

// Descriptor returns the prompt as prompts/list shows it:
// {"name","title"?,"description","arguments":[{"name","description","required"}],
// "_meta":{"brainstem/capability","brainstem/route"?}}.
func (p *Prompt) Descriptor() json.RawMessage {
	d := promptDescriptor{Name: p.Name, Title: p.Title, Description: p.Description, Arguments: []promptArg{},
		Meta: promptMeta{Capability: p.Capability().Strongest(), Route: p.Routes()}}
	for _, a := range p.Args {
		d.Arguments = append(d.Arguments, promptArg{Name: a.Name, Description: a.Desc, Required: a.Required})
	}
	return marshal(d)
}

// DecodeArgs decodes and validates prompts/get's arguments, a JSON object
// of strings (null or absent: none), as Decode does a tool's: exact names,
// strings only, required arguments, limits, enumerations and each
// argument's own rule. A refusal is a *brain.Error.
func (p *Prompt) DecodeArgs(raw []byte) (map[string]string, error) {
	raw = bytes.TrimSpace(raw)
	got := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if raw[0] != '{' {
			return nil, invalid("the arguments must be a JSON object of strings")
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			return nil, syntaxErr(err)
		}
	}
	out := make(map[string]string, len(got))
	for k, v := range got {
		if !hasArg(p.Args, k) {
			return nil, invalid("unknown argument %q; the arguments of %s are: %s", k, p.Name, ArgNames(p.Args))
		}
		if string(v) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, NotString(k, v)
		}
		out[k] = s
	}
	for i := range p.Args {
		a := &p.Args[i]
		if err := checkString(a, a.Name, out[a.Name]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// NotString refuses the JSON value raw given for the string argument
// name, naming its kind as encoding/json's type errors do.
func NotString(name string, raw []byte) error {
	return WrongType(name, String, jsonKind(raw))
}

func jsonKind(raw []byte) string {
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// PromptResult is prompts/get's answer: MCP's GetPromptResult with text
// messages.
type PromptResult struct {
	Description string       `json:"description"`
	Messages    []ResultText `json:"messages"`
}

// ResultText is one message of a PromptResult.
type ResultText struct {
	Role    string      `json:"role"`
	Content TextContent `json:"content"`
}

// TextContent is MCP's text content.
type TextContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Render returns the prompt's messages for arguments DecodeArgs accepted.
func (p *Prompt) Render(args map[string]string) PromptResult {
	res := PromptResult{Description: p.Description, Messages: []ResultText{}}
	for _, m := range p.Messages {
		if m.When != "" && strings.TrimSpace(args[m.When]) == "" {
			continue
		}
		text := placeholder.ReplaceAllStringFunc(m.Text, func(ph string) string {
			b, _ := brain.Marshal(args[ph[2:len(ph)-2]]) // a string: cannot fail
			return string(b)
		})
		res.Messages = append(res.Messages, ResultText{Role: m.Role, Content: TextContent{Type: "text", Text: text}})
	}
	return res
}
