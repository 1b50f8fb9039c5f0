package history

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/tooling/corpus"
)

// The benchmarks run on a wing of BRAINSTEM_BENCH_DOCS notes from
// internal/corpus (default 300; the 100,000-note figures of
// docs/performance-history.md are BRAINSTEM_BENCH_DOCS=100000).
// BRAINSTEM_BENCH_SMALL=1 (CI) also shortens the version chains.

func benchDocs() int {
	if v, err := strconv.Atoi(os.Getenv("BRAINSTEM_BENCH_DOCS")); err == nil && v > 0 {
		return v
	}
	return 300
}

func benchSmall() bool { return os.Getenv("BRAINSTEM_BENCH_SMALL") != "" }

// noteBytes is a corpus note as a file.
func noteBytes(n corpus.Note) []byte {
	return []byte("---\ntitle: " + n.Title + "\nwing: bench\nhall: " + n.Hall + "\ncreated_by: bench@example.com\ncreated_at: 2026-01-01T00:00:00Z\n---\n" + n.Body + "\n")
}

// corpusBrain writes n corpus notes into wing "bench" of a new brain and
// returns it with the notes' paths and total bytes.
func corpusBrain(b *testing.B, n int) (*testBrain, []string, int64) {
	b.Helper()
	tb := newBrain(b)
	tb.wing, tb.state = "bench", filepath.Join(tb.root, ".brainstem", "bench", "history")
	var paths []string
	var total int64
	for _, cn := range corpus.Notes(1, n) {
		p := "wiki/bench/" + cn.Hall + "/" + cn.Slug + ".md"
		raw := noteBytes(cn)
		abs := filepath.Join(tb.root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(abs, raw, 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
		total += int64(len(raw))
	}
	return tb, paths, total
}

func benchOptions(tb *testBrain) Options {
	opt := tb.optionsFor("bench", tb.state)
	opt.Now = time.Now
	if os.Getenv("BRAINSTEM_BENCH_LOG") != "" {
		opt.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return opt
}

// BenchmarkWrite compares a note's durable creation alone (bare: what the
// store does) with the same creation inside Begin and Landed (history),
// in a wing of BRAINSTEM_BENCH_DOCS notes; parallel runs the history
// variant from every core (group commit).
func BenchmarkWrite(b *testing.B) {
	tb, _, _ := corpusBrain(b, benchDocs())
	h := tb.open(benchOptions(tb))
	body := noteBytes(corpus.Notes(2, 1)[0])
	var seq atomic.Int64
	path := func() string { return fmt.Sprintf("wiki/bench/facts/bench-new-%d.md", seq.Add(1)) }
	create := func(p string) {
		abs := filepath.Join(tb.root, filepath.FromSlash(p))
		if err := atomicfile.CreateFile(abs, body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			create(path())
		}
	})
	write := func() {
		p := path()
		pend, err := h.Begin(Change{Ops: []Op{{Path: p, Content: body}}, Author: "bench@example.com", Action: "create"})
		if err != nil {
			b.Fatal(err)
		}
		create(p)
		pend.Landed()
	}
	b.Run("history", func(b *testing.B) {
		for b.Loop() {
			write()
		}
		b.StopTimer()
		flush(b, h)
	})
	b.Run("history-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				write()
			}
		})
		b.StopTimer()
		flush(b, h)
	})
}

// BenchmarkCommitter measures the committer alone: b.N updates of
// existing notes (each commit rewrites a hall's tree) are begun first,
// then all land at once, and the clock runs until they are committed.
func BenchmarkCommitter(b *testing.B) {
	tb, paths, _ := corpusBrain(b, benchDocs())
	h := tb.open(benchOptions(tb))
	ps := make([]*Pending, b.N)
	for i := range ps {
		p := paths[(i*7919)%len(paths)]
		pend, err := h.Begin(Change{Ops: []Op{{Path: p, Content: []byte(fmt.Sprintf("update %d\n", i))}}, Author: "bench@example.com", Action: "update"})
		if err != nil {
			b.Fatal(err)
		}
		ps[i] = pend
	}
	b.ResetTimer()
	start := time.Now()
	for _, p := range ps {
		p.Landed()
	}
	flush(b, h)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
}

// BenchmarkVersions lists the newest 20 versions of a note with 1,000
// versions (100 with BRAINSTEM_BENCH_SMALL), and reads one.
func BenchmarkVersions(b *testing.B) {
	n := 1000
	if benchSmall() {
		n = 100
	}
	tb, paths, _ := corpusBrain(b, benchDocs())
	h := tb.open(benchOptions(tb))
	p := paths[0]
	for i := range n {
		pend, err := h.Begin(Change{Ops: []Op{{Path: p, Content: []byte(fmt.Sprintf("version %d\n", i))}}, Author: "bench@example.com", Action: "update"})
		if err != nil {
			b.Fatal(err)
		}
		pend.Landed()
	}
	flush(b, h)
	ctx := context.Background()
	var last []Version
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			vs, _, err := h.Versions(ctx, p, "", 20)
			if err != nil || len(vs) != 20 {
				b.Fatal(err)
			}
			last = vs
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := h.Read(ctx, p, last[10].ID); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkOpen reopens the history of a BRAINSTEM_BENCH_DOCS-note wing
// after a clean restart (snapshot and .git/index in place).
func BenchmarkOpen(b *testing.B) {
	tb, _, _ := corpusBrain(b, benchDocs())
	opt := benchOptions(tb)
	h, err := Open(context.Background(), opt)
	if err != nil {
		b.Fatal(err)
	}
	h.Close()
	for b.Loop() {
		h, err := Open(context.Background(), opt)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		h.Close()
		b.StartTimer()
	}
}

// BenchmarkInitialCommit makes the initial commit of a
// BRAINSTEM_BENCH_DOCS-note wing (one pack), and reports the repository's
// size against the notes' own bytes.
func BenchmarkInitialCommit(b *testing.B) {
	tb, _, notes := corpusBrain(b, benchDocs())
	opt := benchOptions(tb)
	for b.Loop() {
		b.StopTimer()
		os.RemoveAll(filepath.Join(tb.root, ".git"))
		os.RemoveAll(tb.state)
		b.StartTimer()
		h, err := Open(context.Background(), opt)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		h.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(dirBytes(b, filepath.Join(tb.root, ".git")))/float64(notes), "git/notes")
}

// BenchmarkDisk reports the history's disk use against the notes' bytes
// after the initial commit and as many updates as the wing has notes, at
// most 1,000 (each a new version of a note spread over the wing), loose
// and once packed, and the packed bytes each update added.
func BenchmarkDisk(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		tb, paths, notes := corpusBrain(b, benchDocs())
		opt := benchOptions(tb)
		opt.packEvery = 1 << 30 // packed once, below
		h := tb.open(opt)
		updates := min(len(paths), 1000)
		others := corpus.Notes(3, updates)
		h.Close()
		base := dirBytes(b, filepath.Join(tb.root, ".git"))
		h = tb.open(opt)
		b.StartTimer()
		for i := range updates {
			q := paths[(i*7919)%len(paths)]
			pend, err := h.Begin(Change{Ops: []Op{{Path: q, Content: noteBytes(others[i])}}, Author: "bench@example.com", Action: "update"})
			if err != nil {
				b.Fatal(err)
			}
			pend.Landed()
		}
		flush(b, h)
		looseBytes := dirBytes(b, filepath.Join(tb.root, ".git"))
		h.writeMu.Lock()
		err := h.packLoose()
		h.writeMu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		h.Close()
		b.ReportMetric(float64(looseBytes)/float64(notes), "beforepack/notes")
		packed := dirBytes(b, filepath.Join(tb.root, ".git"))
		b.ReportMetric(float64(packed)/float64(notes), "packed/notes")
		b.ReportMetric(float64(packed-base)/float64(updates), "bytes/update")
		b.StartTimer()
	}
}

// dirBytes is the size of the files below dir.
func dirBytes(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
