package tools

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
)

// toolName matches what a prompt's text may name as a tool.
var toolName = regexp.MustCompile(`\b(brain_[a-z_]+|session_[a-z]+)\b`)

// TestPromptsNameRealTools: every tool a prompt tells the agent to call is
// a tool of the set, and every argument it passes in {"…": …} form is an
// argument of that tool (checked loosely: each quoted key that follows a
// tool name in the same step is one of the set's argument names).
func TestPromptsNameRealTools(t *testing.T) {
	s, _, _ := newSet(t)
	args := map[string]bool{}
	for _, sp := range s.Specs() {
		for _, a := range sp.Args {
			args[a.Name] = true
		}
	}
	key := regexp.MustCompile(`\{"([a-z_]+)":|, "([a-z_]+)":`)
	for _, p := range s.Prompts() {
		for _, m := range p.Messages {
			for _, n := range toolName.FindAllString(m.Text, -1) {
				if _, ok := s.byName[n]; !ok {
					t.Errorf("prompt %s names %s, which is not a tool", p.Name, n)
				}
			}
			for _, k := range key.FindAllStringSubmatch(m.Text, -1) {
				if name := k[1] + k[2]; !args[name] && name != "captured" {
					t.Errorf("prompt %s passes %q, which no tool takes", p.Name, name)
				}
			}
		}
	}
}

// TestGetPrompt: the prompts are answered with their messages for a
// caller holding their capability, their arguments refused like a tool's.
func TestGetPrompt(t *testing.T) {
	s, _, _ := newSet(t)
	curator := Caller{Email: "a@example.com", Caps: brain.CapRead | brain.CapWrite | brain.CapCurate}
	reader := Caller{Email: "r@example.com", Caps: brain.CapRead}
	res, isErr := s.GetPrompt(context.Background(), curator, "review_inbox", []byte(`{"wing":"`+wing+`"}`))
	var pr toolspec.PromptResult
	if isErr || json.Unmarshal(res, &pr) != nil || len(pr.Messages) != 1 || !strings.Contains(pr.Messages[0].Content.Text, `brain_pending with {"wing": "`+wing+`"}`) {
		t.Fatalf("review_inbox: %s", res)
	}
	for _, c := range []struct {
		who        Caller
		name, args string
		want       brain.Code
	}{
		{reader, "review_inbox", `{"wing":"` + wing + `"}`, brain.CodeForbidden},
		{curator, "review_inbox", `{"wing":"other"}`, brain.CodeInvalidArgument},
		{curator, "review_inbox", `{}`, brain.CodeInvalidArgument},
		{reader, "search_before_task", `{"task":""}`, brain.CodeInvalidArgument},
		{reader, "nope", `{}`, brain.CodeUnknownTool},
	} {
		res, isErr := s.GetPrompt(context.Background(), c.who, c.name, []byte(c.args))
		if code, _, _ := brain.DecodeError(res); !isErr || code != c.want {
			t.Errorf("%s %s: %s, want %s", c.name, c.args, res, c.want)
		}
	}
}
