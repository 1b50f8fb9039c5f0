package hooks

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestScanTranscript(t *testing.T) {
	abs := func(name string) string {
		p, err := filepath.Abs(filepath.Join("testdata", "transcript", name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		want transcript
	}{
		{"edited.jsonl", transcript{ToolUses: 2, Edits: 1}},
		// brain_write by every name Claude Code gives an MCP tool; a failed
		// write counts as a capture attempt but names no note; a result
		// of another tool is not a capture.
		{"captured.jsonl", transcript{ToolUses: 4, Edits: 1, Writes: 3, Captured: []string{"inbox/payments/retry-storm.md", "inbox/platform/budget.md"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scanTranscript(context.Background(), abs(tc.name))
			if err != nil || !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("scanTranscript = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if _, err := scanTranscript(context.Background(), ""); err == nil {
		t.Error("no transcript: no error")
	}
	if _, err := scanTranscript(context.Background(), abs("missing.jsonl")); err == nil {
		t.Error("a missing transcript: no error")
	}
	if _, err := scanTranscript(context.Background(), t.TempDir()); err == nil {
		t.Error("a directory: no error")
	}
}

// TestScanTranscriptSkipsHugeLines: a line over the limit (a huge tool
// result) is skipped, and the lines after it still count.
func TestScanTranscriptSkipsHugeLines(t *testing.T) {
	edited, err := os.ReadFile(filepath.Join("testdata", "transcript", "edited.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	huge := `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"x","type":"tool_result","content":"` + strings.Repeat("a", maxTranscriptLine) + `"}]}}` + "\n"
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte(huge+string(edited)+huge[:100]), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := scanTranscript(context.Background(), p)
	if err != nil || got.ToolUses != 2 || got.Edits != 1 {
		t.Fatalf("scanTranscript = %+v, %v", got, err)
	}
}
