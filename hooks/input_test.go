package hooks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// The inputs of Claude Code's hooks reference, one per event
// (testdata/input/<event>.json).
func referenceInput(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "input", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseInputReference(t *testing.T) {
	for _, tc := range []struct {
		event string
		check func(*Input) bool
	}{
		{NameSessionStart, func(in *Input) bool { return in.Source == "startup" && in.Cwd != "" && in.SessionID != "" }},
		{NamePrompt, func(in *Input) bool { return strings.Contains(in.Prompt, "retries") }},
		{NameStop, func(in *Input) bool { return !in.StopHookActive && in.TranscriptPath != "" }},
		{NamePreCompact, func(in *Input) bool { return in.Trigger == "auto" }},
	} {
		t.Run(tc.event, func(t *testing.T) {
			in, err := ParseInput(strings.NewReader(referenceInput(t, tc.event)), event(tc.event))
			if err != nil || !tc.check(in) {
				t.Fatalf("ParseInput: %+v, %v", in, err)
			}
		})
	}
}

func TestParseInputRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"garbage", "not json at all"},
		{"array", `[1,2]`},
		{"two objects", `{"session_id":"a"}{"session_id":"b"}`},
		{"another event", `{"hook_event_name":"Stop","session_id":"a"}`},
		{"relative cwd", `{"cwd":"repo"}`},
		{"relative transcript", `{"transcript_path":"t.jsonl"}`},
		{"control in session id", `{"session_id":"a\u0007b"}`},
		{"newline in cwd", `{"cwd":"/tmp/a\nb"}`},
		{"long session id", `{"session_id":"` + strings.Repeat("a", maxIDBytes+1) + `"}`},
		{"too large", `{"prompt":"` + strings.Repeat("a", MaxInputBytes) + `"}`},
		{"prompt not a string", `{"prompt":42}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if in, err := ParseInput(strings.NewReader(tc.in), event(NamePrompt)); !errors.Is(err, ErrInput) {
				t.Fatalf("ParseInput(%.80q) = %+v, %v; want ErrInput", tc.in, in, err)
			}
		})
	}
}

// FuzzParseInput: whatever stdin holds, ParseInput does not panic, and what
// it accepts holds no control character in its ids and paths, and only
// absolute paths.
func FuzzParseInput(f *testing.F) {
	for _, e := range Events() {
		f.Add(referenceInput(f, e.Name))
	}
	f.Add(`{"session_id":"x","cwd":"/","prompt":"\u202ehi"}`)
	f.Add(`{"stop_hook_active":"yes"}`)
	f.Add("\xff\xfe{}")
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range Events() {
			in, err := ParseInput(strings.NewReader(s), e)
			if err != nil {
				if !errors.Is(err, ErrInput) {
					t.Fatalf("error %v does not wrap ErrInput", err)
				}
				continue
			}
			for _, v := range []string{in.SessionID, in.Cwd, in.TranscriptPath, in.Source, in.Trigger} {
				if !plainText(v, maxPathBytes) {
					t.Fatalf("accepted %q", v)
				}
			}
			if in.Cwd != "" && !filepath.IsAbs(in.Cwd) || !utf8.ValidString(in.Prompt) {
				t.Fatalf("accepted %+v", in)
			}
			if in.HookEventName != "" && in.HookEventName != e.Claude {
				t.Fatalf("accepted the input of %s for %s", in.HookEventName, e.Claude)
			}
		}
	})
}

// event is the hook named name, one of the Name constants.
func event(name string) Event {
	e, _ := LookupEvent(name)
	return e
}
