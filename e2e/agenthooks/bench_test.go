package agenthooks

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/deploy/examples"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/hooks"
	"github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/tooling/corpus"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

// benchNotes is the size of the benchmark's big wing: BRAINSTEM_BENCH_DOCS
// notes, 10,000 by default (the figures of docs/performance-hooks.md; CI
// runs every benchmark once on a small corpus).
func benchNotes() int {
	if v, err := strconv.Atoi(os.Getenv("BRAINSTEM_BENCH_DOCS")); err == nil && v > 0 {
		return v
	}
	return 10_000
}

// benchBrain is the sample brain plus a wing "corpus" of n generated notes
// (tooling/corpus), which every signed-in developer may read.
func benchBrain(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "brain")
	if err := os.CopyFS(dir, examples.Brain()); err != nil {
		b.Fatal(err)
	}
	for _, note := range corpus.Notes(1, n) {
		raw := frontmatter.New([][2]string{{"title", note.Title}, {"wing", "corpus"}, {"hall", note.Hall},
			{"created_by", "bench@example.com"}, {"created_at", "2026-01-01T00:00:00Z"}}, note.Body).Bytes()
		p := filepath.Join(dir, "wiki", "corpus", note.Hall, note.Slug+".md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkHookPrompt times `brainstem hook prompt` as Claude Code runs it:
// a new process each time (start, reading the sign-in, one cross-wing
// brain_query over 4 wings, one of 10,000 notes, the answer), the prompt
// one that gets context. It reports the whole-process p50 and p99;
// -benchmem counts this test's side only (BenchmarkRunPrompt has the
// hook's own allocations).
// Run it with e.g. -benchtime=400x for stable percentiles.
func BenchmarkHookPrompt(b *testing.B) {
	env := devenvtest.Start(b, devenv.Config{Brain: benchBrain(b, benchNotes()),
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 }})
	alice := newPerson(b, env, "alice@example.com")
	in := input(b, hooks.NamePrompt, "s-bench", b.TempDir(), "", map[string]any{"prompt": "how do we handle retries on the payment API"})
	if a := alice.hook(b, hooks.NamePrompt, in); !strings.Contains(a.contexts, "payments/") {
		b.Fatalf("the prompt gets no context: %s", a.stdout)
	}
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		lat = append(lat, runOnce(b, alice, in))
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op") // the percentiles say it; a mean of processes misleads
}

// runOnce runs the hook process once, its answer checked, and returns its
// wall time.
func runOnce(b *testing.B, p *person, in string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "hook", hooks.NamePrompt)
	cmd.Env = []string{"HOME=" + p.home, "XDG_CONFIG_HOME=" + p.config, "XDG_CACHE_HOME=" + p.cache, "PATH=" + os.Getenv("PATH")}
	var out bytes.Buffer
	cmd.Stdin, cmd.Stdout = strings.NewReader(in), &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil || !bytes.Contains(out.Bytes(), []byte("additionalContext")) {
		b.Fatalf("brainstem hook prompt: %v: %s", err, out.String())
	}
	return d
}

// BenchmarkRunPrompt is the prompt hook inside this process (hooks.Run, no
// process start), for -benchmem's allocations of one hook.
func BenchmarkRunPrompt(b *testing.B) {
	env := devenvtest.Start(b, devenv.Config{Brain: benchBrain(b, benchNotes()),
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 }})
	alice := newPerson(b, env, "alice@example.com")
	in := input(b, hooks.NamePrompt, "s-bench", b.TempDir(), "", map[string]any{"prompt": "how do we handle retries on the payment API"})
	opt := hooks.Options{ConfigDir: filepath.Join(alice.config, "brainstem"), CacheDir: filepath.Join(alice.cache, "brainstem")}
	b.ReportAllocs()
	for b.Loop() {
		var out bytes.Buffer
		opt.In, opt.Out = strings.NewReader(in), &out
		if err := hooks.Run(context.Background(), hooks.NamePrompt, opt); err != nil || !bytes.Contains(out.Bytes(), []byte("additionalContext")) {
			b.Fatal(fmt.Sprint(err, out.String()))
		}
	}
}
