package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
)

// The prompts: the team brain's recurring workflows, declared like the
// tools (toolspec.Prompt) and served by the same set. Each tells the agent
// which tools to call with which arguments; only this package names
// tools.

// promptWingArg is a prompt's wing argument, which routes it at the
// gateway like a tool's.
func promptWingArg(required bool, desc string) toolspec.Arg {
	return toolspec.Arg{Name: "wing", Type: toolspec.String, Required: required, Route: toolspec.RouteWing, Desc: desc,
		Missing: "the wing to work in (brain_wings lists yours)",
		Check:   func(_, v string) error { return brain.ValidWing(v) }}
}

// maxPromptTextBytes bounds a prompt's free-text arguments.
const maxPromptTextBytes = 4096

func (s *Set) definePrompts() []*toolspec.Prompt {
	return []*toolspec.Prompt{
		{
			Name: "capture_learnings", Title: "Capture this session's learnings", Needs: brain.CapWrite,
			Description: "Write what this session learned into a wing's inbox, for its curators to review: each durable fact, decision, failure, " +
				"hypothesis or source as one inbox note, after checking the brain does not have it already.",
			Args: []toolspec.Arg{
				promptWingArg(true, "The wing whose inbox receives the notes."),
				{Name: "focus", Type: toolspec.String, MaxBytes: maxPromptTextBytes, Desc: "Optional: what to capture (a topic, a decision), if not everything worth keeping."},
				{Name: "session", Type: toolspec.String, Check: func(_, v string) error { return brain.ValidSession(v) },
					Desc: "Optional: a session id; the captured notes are also recorded in the session's log."},
			},
			Messages: []toolspec.PromptMessage{
				{Role: "user", Text: "Capture what we learned in this session into the inbox of wing {{wing}}, for its curators to review.\n\n" +
					"1. List the learnings worth keeping beyond this session: facts, decisions (with why), failures (with cause and fix), hypotheses, sources. " +
					"Leave out what is specific to this conversation or already obvious from the code.\n" +
					"2. For each one, call brain_query with {\"query\": <its key words>, \"wing\": {{wing}}} and read close hits with brain_get: " +
					"if the brain already says it, skip it (or, if it is wrong, say so in the new note).\n" +
					"3. Write each new learning with brain_write and {\"wing\": {{wing}}, \"inbox\": true, \"hall\": <facts|decisions|failures|hypotheses|sources>, " +
					"\"title\": <one line>, \"body\": <markdown: the learning, why it holds, links [[wing/hall/slug]] to related notes>, " +
					"\"idempotency_key\": <a fresh UUID per note>}.\n" +
					"4. Finish with the list of inbox notes you wrote (their paths) and what you skipped and why."},
				{Role: "user", When: "focus", Text: "Capture only what concerns: {{focus}}"},
				{Role: "user", When: "session", Text: "Also record each note written with session_log and {\"wing\": {{wing}}, \"session\": {{session}}, " +
					"\"entry\": {\"captured\": <the inbox path>}}."},
			},
		},
		{
			Name: "search_before_task", Title: "Search the brain before a task", Needs: brain.CapRead,
			Description: "Before starting a task, find what the team brain already knows about it: decisions to respect, past failures to avoid, facts to rely on.",
			Args: []toolspec.Arg{
				{Name: "task", Type: toolspec.String, Required: true, Min: toolspec.Int(1), MaxBytes: maxPromptTextBytes, Missing: "what you are about to do",
					Desc: "The task about to start, in a sentence or two."},
				promptWingArg(false, "Optional: search one wing only; by default every wing you can read."),
			},
			Messages: []toolspec.PromptMessage{
				{Role: "user", Text: "Before starting this task, check what the team brain knows about it. The task: {{task}}\n\n" +
					"1. Call brain_query with {\"query\": <the task's key terms>, \"limit\": 10}; search again with other terms (a component's name, an error message) if the first hits miss.\n" +
					"2. Read the relevant hits in full with brain_get and {\"id\": <the hit's id>}, and follow their links with brain_links where they matter.\n" +
					"3. Summarise, citing note ids: the decisions the task must respect, the failures it must not repeat, the facts it relies on, and open hypotheses. " +
					"Say plainly if the brain has nothing on it.\n" +
					"4. Then start the task."},
				{Role: "user", When: "wing", Text: "Search wing {{wing}} only: add \"wing\": {{wing}} to every brain_query."},
			},
		},
		{
			Name: "review_inbox", Title: "Review a wing's inbox", Needs: brain.CapCurate,
			Description: "Curators: go through a wing's inbox and promote, improve or reject each note.",
			Args: []toolspec.Arg{
				promptWingArg(true, "The wing whose inbox to review."),
				{Name: "limit", Type: toolspec.String, Enum: []string{"10", "25", "50", "100", "200"}, Desc: "Optional: how many inbox notes to review (10, 25, 50, 100 or 200; default 50)."},
			},
			Messages: []toolspec.PromptMessage{
				{Role: "user", Text: "Review the inbox of wing {{wing}} as its curator.\n\n" +
					"1. Call brain_pending with {\"wing\": {{wing}}} to list the waiting notes, oldest first.\n" +
					"2. For each one, read it with brain_get and {\"path\": <its path>}, and check it against the wiki with brain_query and {\"query\": <its key words>, \"wing\": {{wing}}}.\n" +
					"3. Decide, and say why:\n" +
					"   - promote it: brain_promote with {\"wing\": {{wing}}, \"name\": <its name>, \"hall\": <the right hall>, \"idempotency_key\": <a fresh UUID>} " +
					"(add \"slug\" or \"title\" to improve them);\n" +
					"   - merge it into an existing note: brain_update that note (with its content_hash as expected_hash), then reject the inbox note;\n" +
					"   - reject it: brain_archive with {\"id\": <its path>, \"reason\": <why>}.\n" +
					"4. Finish with a table: each inbox note, the decision, and the resulting note id."},
				{Role: "user", When: "limit", Text: "Review at most {{limit}} notes: pass that number, as an integer, as \"limit\" to brain_pending."},
			},
		},
	}
}

// Prompts returns the prompts' declarations in descriptor order.
func (s *Set) Prompts() []*toolspec.Prompt { return s.prompts }

// PromptDescriptors returns the JSON array prompts/list shows, in a fixed
// order (toolspec.Prompt.Descriptor). The caller must not modify it.
func (s *Set) PromptDescriptors() json.RawMessage { return s.promptDesc }

// LookupPrompt returns the named prompt; p.Capability() is what it is for.
func (s *Set) LookupPrompt(name string) (p *toolspec.Prompt, ok bool) {
	p, ok = s.promptByName[name]
	return p, ok
}

// GetPrompt answers prompts/get of the named prompt for c: it looks the
// prompt up and checks c's capabilities once, then RunPrompt.
func (s *Set) GetPrompt(ctx context.Context, c Caller, name string, args []byte) (result []byte, isError bool) {
	p, ok := s.promptByName[name]
	if !ok {
		names := make([]string, len(s.prompts))
		for i, q := range s.prompts {
			names[i] = q.Name
		}
		return brain.EncodeError(brain.CodeUnknownTool, fmt.Sprintf("there is no prompt %q in wing %q; the prompts are: %s", name, s.Wing(), strings.Join(names, ", "))), true
	}
	return s.RunPrompt(ctx, c, p, c.Caps.Has(p.Capability()), args)
}

// RunPrompt answers prompts/get of prompt p (from LookupPrompt) for c: its
// arguments (a JSON object of strings) decoded and validated like a
// tool's, then its messages (toolspec.PromptResult), as compact JSON.
// granted is the outcome of the call's one capability check, as Run's.
// isError marks an error result {"error":{"code","message"}}, as Call's.
func (s *Set) RunPrompt(_ context.Context, c Caller, p *toolspec.Prompt, granted bool, args []byte) (result []byte, isError bool) {
	name := p.Name
	if !granted {
		return brain.EncodeError(brain.CodeForbidden, fmt.Sprintf("%s is for callers with the %s capability in wing %q; you have: %s", name, p.Capability().Strongest(), s.Wing(), c.Caps)), true
	}
	if len(args) > s.lim.MaxArgsBytes {
		return brain.EncodeError(brain.CodeTooLarge, fmt.Sprintf("the arguments are %d bytes, over the %d-byte limit", len(args), s.lim.MaxArgsBytes)), true
	}
	a, err := p.DecodeArgs(args)
	if err == nil {
		err = s.checkWing(a["wing"])
	}
	if err != nil {
		return s.errorOf(name, err), true
	}
	b, err := brain.Marshal(p.Render(a))
	if err != nil {
		return s.errorOf(name, err), true
	}
	return b, false
}
