package hooks

import (
	"bytes"
	"encoding/json"
)

// Output is a hook's answer on stdout, in the shape of Claude Code's hooks
// reference: the fields every event honours (systemMessage, shown to the
// person), decision and reason (Stop: "block" and the agent's next
// instruction), and hookSpecificOutput (additionalContext for
// SessionStart and UserPromptSubmit). The zero Output is {}: proceed, add
// nothing.
type Output struct {
	Decision           string    `json:"decision,omitempty"`
	Reason             string    `json:"reason,omitempty"`
	SystemMessage      string    `json:"systemMessage,omitempty"`
	HookSpecificOutput *Specific `json:"hookSpecificOutput,omitempty"`
}

// Specific is hookSpecificOutput.
type Specific struct {
	HookEventName     string `json:"hookEventName"`
	AdditionalContext string `json:"additionalContext,omitempty"`
}

// withContext is the answer of ev adding text to the agent's context.
func withContext(ev Event, text string) Output {
	return Output{HookSpecificOutput: &Specific{HookEventName: ev.Claude, AdditionalContext: text}}
}

// Encode renders the answer as one line of JSON (no HTML escaping, so the
// agent reads < and > as they are).
func (o Output) Encode() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(o); err != nil {
		return []byte("{}\n") // strings and a pointer to strings always encode
	}
	return buf.Bytes()
}
