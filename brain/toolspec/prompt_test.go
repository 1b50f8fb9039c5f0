package toolspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

func samplePrompt() *Prompt {
	return &Prompt{
		Name: "review", Description: "Review a wing's inbox.", Needs: brain.CapCurate,
		Args: []Arg{
			{Name: "wing", Type: String, Required: true, Route: RouteWing, Check: func(_, v string) error { return brain.ValidWing(v) }},
			{Name: "limit", Type: String, Enum: []string{"10", "50"}},
			{Name: "note", Type: String, MaxBytes: 8, Line: true},
		},
		Messages: []PromptMessage{
			{Role: "user", Text: `Call brain_pending with {"wing": {{wing}}}.`},
			{Role: "user", When: "limit", Text: `At most {{limit}}.`},
		},
	}
}

func TestPromptValidate(t *testing.T) {
	if err := samplePrompt().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Prompt){
		"no messages":         func(p *Prompt) { p.Messages = nil },
		"unknown placeholder": func(p *Prompt) { p.Messages[0].Text = "{{nope}}" },
		"unknown when":        func(p *Prompt) { p.Messages[1].When = "nope" },
		"bad role":            func(p *Prompt) { p.Messages[0].Role = "system" },
		"integer argument":    func(p *Prompt) { p.Args[1] = Arg{Name: "limit", Type: Integer, Default: 1} },
		"argument twice":      func(p *Prompt) { p.Args[2].Name = "wing" },
	} {
		p := samplePrompt()
		mutate(p)
		if p.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPromptDecodeAndRender(t *testing.T) {
	p := samplePrompt()
	args, err := p.DecodeArgs([]byte(`{"wing":"payments","limit":"10"}`))
	if err != nil {
		t.Fatal(err)
	}
	res := p.Render(args)
	if len(res.Messages) != 2 || res.Messages[0].Content.Text != `Call brain_pending with {"wing": "payments"}.` || res.Messages[1].Content.Text != `At most "10".` {
		t.Fatalf("%+v", res)
	}
	if res := p.Render(map[string]string{"wing": `a"b`}); len(res.Messages) != 1 || !strings.Contains(res.Messages[0].Content.Text, `"a\"b"`) {
		t.Errorf("a value is rendered as a JSON string, and a message whose When is absent is left out: %+v", res)
	}
	for _, c := range []struct{ args, want string }{
		{`{}`, "wing is required"},
		{`null`, "wing is required"},
		{`{"wing":"Payments"}`, "wing"},
		{`{"wing":"payments","limit":"7"}`, "limit must be one of"},
		{`{"wing":"payments","limit":10}`, "limit"},
		{`{"wing":"payments","note":"way too long"}`, "over the 8-byte limit"},
		{`{"wing":"payments","note":"a\nb"}`, "one line"},
		{`{"wing":"payments","other":"x"}`, `unknown argument "other"`},
		{`["payments"]`, "JSON object"},
		{`{"wing":`, "not valid JSON"},
	} {
		_, err := p.DecodeArgs([]byte(c.args))
		e, ok := brain.As(err)
		if !ok || !strings.Contains(e.Message, c.want) {
			t.Errorf("DecodeArgs(%s) = %v, want a refusal saying %q", c.args, err, c.want)
		}
	}
}

func TestPromptDescriptor(t *testing.T) {
	d := string(samplePrompt().Descriptor())
	for _, want := range []string{`"name":"review"`, `"required":true`, `"brainstem/capability":"curate"`, `"brainstem/route":[{"arg":"wing","as":"wing"}]`} {
		if !strings.Contains(d, want) {
			t.Errorf("descriptor %s lacks %s", d, want)
		}
	}
}

// FuzzPromptDecodeArgs: DecodeArgs never panics, refuses with a *brain.Error
// only, and what it accepts passes every argument's rule.
func FuzzPromptDecodeArgs(f *testing.F) {
	for _, s := range []string{`{"wing":"payments"}`, `{"wing":"payments","limit":"10","note":"x"}`, `null`, `{"wing":1}`, `{"wing":"a","wing":"b"}`} {
		f.Add([]byte(s))
	}
	p := samplePrompt()
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := p.DecodeArgs(raw)
		if err != nil {
			var be *brain.Error
			if !errors.As(err, &be) {
				t.Fatalf("DecodeArgs(%q): %v is not a *brain.Error", raw, err)
			}
			return
		}
		if brain.ValidWing(args["wing"]) != nil || len(args["note"]) > 8 || args["limit"] != "" && args["limit"] != "10" && args["limit"] != "50" {
			t.Fatalf("DecodeArgs(%q) accepted %v", raw, args)
		}
		_ = p.Render(args)
	})
}
