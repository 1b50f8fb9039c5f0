package console_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/tooling/corpus"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// benchInbox is how many notes wait in the benchmark wing's inbox (an
// inbox page lists up to 200).
const benchInbox = 100

func benchDocs() int {
	if v, err := strconv.Atoi(os.Getenv("BRAINSTEM_BENCH_DOCS")); err == nil && v > 0 {
		return v
	}
	return 100000
}

// benchBrain writes a brain with one wing "bench" of benchDocs() notes of
// tooling/corpus and benchInbox inbox notes; BRAINSTEM_BENCH_BRAIN keeps it
// (under console/) across runs.
func benchBrain(b *testing.B) (string, []corpus.Note) {
	b.Helper()
	notes := corpus.Notes(1, benchDocs())
	root := b.TempDir()
	if dir := os.Getenv("BRAINSTEM_BENCH_BRAIN"); dir != "" {
		root = filepath.Join(dir, "console")
	}
	marker := filepath.Join(root, fmt.Sprintf(".console-bench-complete-%d", len(notes)))
	if _, err := os.Stat(marker); err == nil {
		return root, notes
	}
	start := time.Now()
	write := func(p string, fields [][2]string, body string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, frontmatter.New(fields, body).Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range notes {
		write(filepath.Join(root, "wiki", "bench", n.Hall, n.Slug+".md"), [][2]string{{"title", n.Title}, {"wing", "bench"},
			{"hall", n.Hall}, {"created_by", "bench@example.com"}, {"created_at", "2026-01-01T00:00:00Z"}}, n.Body)
	}
	for i := range benchInbox {
		n := notes[i%len(notes)]
		write(filepath.Join(root, "inbox", "bench", fmt.Sprintf("proposal-%03d.md", i)), [][2]string{{"title", "Proposal: " + n.Title},
			{"wing", "bench"}, {"hall", n.Hall}, {"created_by", "bench@example.com"}, {"created_at", fmt.Sprintf("2026-01-01T00:%02d:%02dZ", i/60, i%60)}}, n.Body)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("console bench brain: %d notes written in %v", len(notes), time.Since(start).Round(time.Millisecond))
	return root, notes
}

// BenchmarkConsolePages renders a note page (brain_wings, brain_get,
// brain_links, markdown, sanitizer, template) and an inbox page
// (brain_wings, brain_pending of 100 notes) of a wing of
// BRAINSTEM_BENCH_DOCS notes (default 100,000) through the gateway, signed
// in, over loopback HTTP; it reports the p50 and p99 of a page in ms.
func BenchmarkConsolePages(b *testing.B) {
	brain, notes := benchBrain(b)
	start := time.Now()
	env := devenvtest.Start(b, devenv.Config{Brain: brain, Gateway: func(c *config.Config) {
		c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
	}})
	b.Logf("dev environment over %d notes ready in %v", len(notes), time.Since(start).Round(time.Millisecond))
	u := signIn(b, env, "curator@example.com", "")
	for _, page := range []struct {
		name string
		path func(i int) string
	}{
		{"note", func(i int) string {
			n := notes[(i*7919)%len(notes)]
			return "n/bench/" + n.Hall + "/" + n.Slug
		}},
		{"inbox", func(int) string { return "w/bench/inbox" }},
	} {
		b.Run(page.name, func(b *testing.B) {
			var lat []time.Duration
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				p, err := u.b.Get(b.Context(), u.console+page.path(i))
				if err != nil || p.Status != http.StatusOK {
					b.Fatalf("%s: %v %d: %s", page.path(i), err, p.Status, testbrowser.Text(p.Body))
				}
				lat = append(lat, time.Since(t0))
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
