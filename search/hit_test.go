package search

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
)

// legacyResult is the predecessor's shape of a one-wing answer, as
// encoding/json would write it: AppendAnswer must write the same bytes.
type legacyResult struct {
	Result
	Results []Hit `json:"results"`
}

func checkAnswer(t *testing.T, r Result) {
	t.Helper()
	for _, h := range r.Hits {
		want, err := brain.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if got := RenderHit(h); !bytes.Equal(got, want) {
			t.Fatalf("RenderHit = %s\nwant       %s", got, want)
		}
	}
	for _, legacy := range []bool{false, true} {
		var v any = r
		if legacy {
			v = legacyResult{Result: r, Results: r.Hits}
		}
		want, err := brain.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got := r.AppendAnswer([]byte("["), Query{Legacy: legacy})
		if got[0] != '[' || !bytes.Equal(got[1:], want) {
			t.Fatalf("AppendAnswer(legacy=%v) = %s\nwant %s", legacy, got[1:], want)
		}
		if !json.Valid(got[1:]) {
			t.Fatalf("AppendAnswer wrote invalid JSON: %s", got[1:])
		}
	}
}

func TestAppendAnswerAsEncodingJSON(t *testing.T) {
	flags := injection.Flags(nil)
	for _, r := range []Result{
		{},
		{Hits: []Hit{}, Total: 0},
		{Hits: []Hit{{ID: "platform/facts/x", Wing: "platform", Hall: "facts", Title: "TCP <timeouts> & \"retries\"",
			Score: 12.345678912345, Snippet: "line\nbreak\tand\u2028sep \xff", Path: "wiki/facts/x.md", ContentHash: "sha256:ab"}}, Total: 3},
		{Hits: []Hit{{Path: "inbox/facts/y.md", Unreviewed: true, Score: 1e-9, Flags: flags},
			{ID: "a/b/c", Score: 0, Flags: []injection.Flag{{Rule: "override", Why: "says <ignore> previous"}, {Rule: "r2", Why: ""}}}}, Total: 1 << 40},
	} {
		checkAnswer(t, r)
	}
}

func FuzzAppendAnswer(f *testing.F) {
	f.Add("a/b/c", "t", "s\n<x>", 1.5, false, "", "")
	f.Add("", "\xff\u2029", "", 1e-7, true, "rule", "why \"q\"")
	f.Fuzz(func(t *testing.T, id, title, snippet string, score float64, unreviewed bool, rule, why string) {
		h := Hit{ID: id, Wing: "w", Hall: "facts", Title: title, Score: score, Snippet: snippet, Path: id + ".md", ContentHash: "h", Unreviewed: unreviewed}
		if rule != "" {
			h.Flags = []injection.Flag{{Rule: rule, Why: why}}
		}
		if _, err := brain.Marshal(h); err != nil {
			t.Skip() // NaN or an infinity: encoding/json refuses it, and the index never scores one
		}
		checkAnswer(t, Result{Hits: []Hit{h, h}, Total: 2})
	})
}

func BenchmarkRenderHit(b *testing.B) {
	h := Hit{ID: "platform/facts/tcp-timeouts", Wing: "platform", Hall: "facts", Title: "TCP socket timeouts and their retries",
		Score: 7.123456789, Snippet: string(bytes.Repeat([]byte("the socket timeout of a tcp connection "), 5)), Path: "wiki/facts/tcp-timeouts.md",
		ContentHash: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := brain.Marshal(h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			RenderHit(h)
		}
	})
}
