package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Event is one hook: its subcommand name (brainstem hook <Name>), the
// Claude Code event it answers and the matcher its settings entry carries.
type Event struct {
	Name    string // session-start, prompt, stop, pre-compact
	Claude  string // SessionStart, UserPromptSubmit, Stop, PreCompact
	Matcher string // "" for an event without matchers
}

// The subcommands of `brainstem hook`, one per event.
const (
	NameSessionStart = "session-start"
	NamePrompt       = "prompt"
	NameStop         = "stop"
	NamePreCompact   = "pre-compact"
)

// Events returns every hook, in the order of a session.
func Events() []Event {
	return []Event{{NameSessionStart, "SessionStart", "startup|resume|clear|compact"}, {NamePrompt, "UserPromptSubmit", ""},
		{NameStop, "Stop", ""}, {NamePreCompact, "PreCompact", ""}}
}

// EventNames are the subcommands of `brainstem hook`.
func EventNames() []string {
	var names []string
	for _, e := range Events() {
		names = append(names, e.Name)
	}
	return names
}

// LookupEvent finds a hook by its subcommand name.
func LookupEvent(name string) (Event, bool) {
	for _, e := range Events() {
		if e.Name == name {
			return e, true
		}
	}
	return Event{}, false
}

// Limits of the input.
const (
	// MaxInputBytes bounds what a hook reads on stdin; a prompt is most of it.
	MaxInputBytes = 1 << 20
	// maxIDBytes bounds session_id.
	maxIDBytes = 256
	// maxPathBytes bounds cwd and transcript_path.
	maxPathBytes = 4096
)

// ErrInput: stdin does not hold a hook input this hook can use.
var ErrInput = errors.New("hooks: unusable hook input")

// Input is what Claude Code sends a command hook on stdin (its hooks
// reference): the fields every event carries, then each event's own.
// Fields this package does not use are ignored.
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	HookEventName  string `json:"hook_event_name"`

	Source             string `json:"source"`              // SessionStart: startup, resume, clear, compact
	Prompt             string `json:"prompt"`              // UserPromptSubmit
	StopHookActive     bool   `json:"stop_hook_active"`    // Stop: already continuing because of a Stop hook
	Trigger            string `json:"trigger"`             // PreCompact: manual, auto
	CustomInstructions string `json:"custom_instructions"` // PreCompact
}

// ParseInput reads one hook input for ev from r: at most MaxInputBytes, one
// JSON object and nothing after it. It refuses (ErrInput) an input of
// another event, a session id or path that is too long, holds control
// characters or is not valid UTF-8, and a relative cwd or transcript path.
func ParseInput(r io.Reader, ev Event) (*Input, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading stdin: %w", ErrInput, err)
	}
	if len(b) > MaxInputBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrInput, MaxInputBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var in Input
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrInput)
	}
	if err := in.check(ev); err != nil {
		return nil, err
	}
	return &in, nil
}

func (in *Input) check(ev Event) error {
	if in.HookEventName != "" && in.HookEventName != ev.Claude {
		return fmt.Errorf("%w: hook_event_name %.40q, but this is the %s hook (check the settings entry)", ErrInput, in.HookEventName, ev.Claude)
	}
	if !plainText(in.SessionID, maxIDBytes) {
		return fmt.Errorf("%w: session_id is not a plain string of at most %d bytes", ErrInput, maxIDBytes)
	}
	for _, p := range []struct{ name, v string }{{"cwd", in.Cwd}, {"transcript_path", in.TranscriptPath}} {
		if !plainText(p.v, maxPathBytes) || p.v != "" && !filepath.IsAbs(p.v) {
			return fmt.Errorf("%w: %s is not an absolute path", ErrInput, p.name)
		}
	}
	if !utf8.ValidString(in.Prompt) {
		return fmt.Errorf("%w: the prompt is not UTF-8", ErrInput)
	}
	for _, s := range []*string{&in.Source, &in.Trigger, &in.PermissionMode} {
		if !plainText(*s, 64) {
			*s = ""
		}
	}
	return nil
}

// plainText reports whether s is valid UTF-8 of at most limit bytes with
// no control character.
func plainText(s string, limit int) bool {
	return len(s) <= limit && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 })
}
