package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/internal/atomicfile"
	"github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/tooling/corpus"
)

// benchBrain is a brain directory holding one wing ("bench") generated with
// tooling/corpus, written once per process. Its size comes from
// BRAINSTEM_BENCH_DOCS (default 100000); BRAINSTEM_BENCH_CORPUS=heavy uses
// the heavy-tailed corpus (notes of up to 2 MB; the store's note limit is
// raised to 4 MiB for it).
//
// BRAINSTEM_BENCH_BRAIN names a directory to keep the brain in across runs
// (generated there once, marked complete, never removed); otherwise it goes
// to a temporary directory removed at exit.
type benchBrain struct {
	once  sync.Once
	root  string
	keep  bool
	ids   []string
	bytes int64
	err   error
}

var bench benchBrain // test-only; removed by TestMain

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.root != "" && !bench.keep {
		os.RemoveAll(bench.root)
	}
	os.Exit(code)
}

func benchDocs() int {
	if v, err := strconv.Atoi(os.Getenv("BRAINSTEM_BENCH_DOCS")); err == nil && v > 0 {
		return v
	}
	return 100000
}

// get writes the corpus on first use.
func (bb *benchBrain) get(b *testing.B) (string, []string) {
	b.Helper()
	bb.once.Do(func() {
		notes := benchNotes(benchDocs())
		marker := ""
		if dir := os.Getenv("BRAINSTEM_BENCH_BRAIN"); dir != "" {
			bb.root, bb.keep = dir, true
			marker = filepath.Join(dir, fmt.Sprintf(".bench-complete-%s-%d", os.Getenv("BRAINSTEM_BENCH_CORPUS"), len(notes)))
			if _, err := os.Stat(marker); err == nil {
				for _, n := range notes {
					bb.ids = append(bb.ids, n.ID("bench"))
					bb.bytes += int64(len(n.Title) + len(n.Body) + 120)
				}
				return
			}
			bb.err = os.MkdirAll(dir, 0o755)
		} else {
			bb.root, bb.err = os.MkdirTemp("", "brainstem-bench-")
		}
		if bb.err != nil {
			return
		}
		start := time.Now()
		for _, n := range notes {
			dir := filepath.Join(bb.root, "wiki", "bench", n.Hall)
			if bb.err = os.MkdirAll(dir, 0o755); bb.err != nil {
				return
			}
			raw := frontmatter.New([][2]string{{"title", n.Title}, {"wing", "bench"}, {"hall", n.Hall},
				{"created_by", "bench@example.com"}, {"created_at", "2026-01-01T00:00:00Z"}}, n.Body).Bytes()
			if bb.err = os.WriteFile(filepath.Join(dir, n.Slug+".md"), raw, 0o644); bb.err != nil {
				return
			}
			bb.ids = append(bb.ids, n.ID("bench"))
			bb.bytes += int64(len(raw))
		}
		fmt.Fprintf(os.Stderr, "bench brain: %d notes, %d MiB written in %v\n", len(bb.ids), bb.bytes>>20, time.Since(start).Round(time.Millisecond))
		if marker != "" {
			bb.err = os.WriteFile(marker, nil, 0o644)
		}
	})
	if bb.err != nil {
		b.Fatal(bb.err)
	}
	return bb.root, bb.ids
}

// benchNotes generates n notes of the benchmark corpus.
func benchNotes(n int) []corpus.Note {
	if os.Getenv("BRAINSTEM_BENCH_CORPUS") == "heavy" {
		return corpus.HeavyNotes(1, n)
	}
	return corpus.Notes(1, n)
}

// benchMaxNote is the note limit of the benchmark stores.
func benchMaxNote() int {
	if os.Getenv("BRAINSTEM_BENCH_CORPUS") == "heavy" {
		return 4 << 20
	}
	return 0
}

// writeBrain writes notes into wing "bench" of a new brain under dir.
func writeBrain(dir string, notes []corpus.Note) error {
	for _, n := range notes {
		hall := filepath.Join(dir, "wiki", "bench", n.Hall)
		if err := os.MkdirAll(hall, 0o755); err != nil {
			return err
		}
		raw := frontmatter.New([][2]string{{"title", n.Title}, {"wing", "bench"}, {"hall", n.Hall},
			{"created_by", "bench@example.com"}, {"created_at", "2026-01-01T00:00:00Z"}}, n.Body).Bytes()
		if err := os.WriteFile(filepath.Join(hall, n.Slug+".md"), raw, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func openBench(b *testing.B, root string) *Store {
	b.Helper()
	s, err := Open(context.Background(), Options{Root: root, Wing: "bench", RescanInterval: -1, MaxNoteBytes: benchMaxNote()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// report adds p50-ns and p99-ns of the recorded latencies, and their ratio
// to a baseline's p50 when one is given.
func report(b *testing.B, lat []time.Duration, baseline []time.Duration, name string) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	p50 := lat[len(lat)/2]
	b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
	if len(baseline) > 0 {
		slices.Sort(baseline)
		base := baseline[len(baseline)/2]
		b.ReportMetric(float64(base.Nanoseconds()), name+"-p50-ns")
		b.ReportMetric(float64(p50)/float64(base), "p50/"+name)
	}
}

// BenchmarkOpen loads and indexes the whole corpus wing from its files (a
// first start, or a start without a usable snapshot).
func BenchmarkOpen(b *testing.B) {
	root, ids := bench.get(b)
	var before, after runtime.MemStats
	var total time.Duration
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		s, err := Open(context.Background(), Options{Root: root, Wing: "bench", RescanInterval: -1, NoSnapshot: true, MaxNoteBytes: benchMaxNote()})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "heap-bytes")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(bench.bytes), "heap/files")
		s.Close()
	}
	b.ReportMetric(float64(len(ids)*b.N)/total.Seconds(), "notes/s")
}

// BenchmarkGet reads notes by id (brain_get's store path: resolve, read,
// hash, parse), against a baseline of os.ReadFile of the same files in the
// same run: ids drawn from the whole wing (set=all: mostly cache misses)
// and from 100 notes (set=hot: the parsed notes stay cached).
func BenchmarkGet(b *testing.B) {
	root, ids := bench.get(b)
	s := openBench(b, root)
	ctx := context.Background()
	for _, set := range []struct {
		name string
		n    int
	}{{"all", len(ids)}, {"hot", min(100, len(ids))}} {
		b.Run("set="+set.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			base := make([]time.Duration, 0, 1000)
			for range 1000 {
				id := ids[rng.IntN(set.n)]
				t0 := time.Now()
				if _, err := os.ReadFile(filepath.Join(root, "wiki", id+".md")); err != nil {
					b.Fatal(err)
				}
				base = append(base, time.Since(t0))
			}
			lat := make([]time.Duration, 0, 1<<16)
			b.ResetTimer()
			for b.Loop() {
				id := ids[rng.IntN(set.n)]
				t0 := time.Now()
				if _, err := s.Get(ctx, id); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			report(b, lat, base, "readfile")
		})
	}
}

// BenchmarkWrite creates new wiki notes (brain_write's store path: durable
// create, index update, _index.md), against a baseline of a bare durable
// file create (temp file, fsync, link, fsync dir) in the same run; with
// _index.md written through (IndexDelay < 0) and behind (1s, the default).
func BenchmarkWrite(b *testing.B) {
	root, _ := bench.get(b)
	body := corpus.Notes(7, 1)[0].Body
	dir := filepath.Join(root, "wiki", "bench", "sources")
	base := make([]time.Duration, 0, 200)
	for i := range 200 {
		p := filepath.Join(dir, fmt.Sprintf("zz-baseline-%d-%d.md", time.Now().UnixNano(), i))
		t0 := time.Now()
		if err := atomicfile.CreateFile(p, []byte(body), filePerm); err != nil {
			b.Fatal(err)
		}
		base = append(base, time.Since(t0))
		os.Remove(p)
	}
	for _, mode := range []struct {
		name  string
		delay time.Duration
	}{{"index=write-through", -1}, {"index=write-behind", time.Second}} {
		b.Run(mode.name, func(b *testing.B) {
			s, err := Open(context.Background(), Options{Root: root, Wing: "bench", RescanInterval: -1, IndexDelay: mode.delay, MaxNoteBytes: benchMaxNote()})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			run := time.Now().UnixNano()
			lat := make([]time.Duration, 0, 1024)
			var created []string
			i := 0
			for b.Loop() {
				i++
				t0 := time.Now()
				n, err := s.Create(ctx, NewNote{Title: fmt.Sprintf("Bench write %d %d", run, i), Body: body, Hall: "sources", By: "bench@example.com"})
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				created = append(created, n.Path)
			}
			b.StopTimer()
			report(b, lat, base, "bare-create")
			// Keep the corpus the same size for the next benchmark.
			for _, p := range created {
				os.Remove(filepath.Join(root, p))
			}
			if err := s.Rescan(ctx); err != nil {
				b.Fatal(err)
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkUpdate supersedes random notes with expected_hash.
func BenchmarkUpdate(b *testing.B) {
	root, ids := bench.get(b)
	s := openBench(b, root)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	lat := make([]time.Duration, 0, 1024)
	for b.Loop() {
		b.StopTimer()
		id := ids[rng.IntN(len(ids))]
		n, err := s.Get(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		if _, err := s.Update(ctx, Change{ID: id, Body: n.Body + "\nupdated", Reason: "bench", ExpectedHash: n.Hash, By: "bench@example.com"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	report(b, lat, nil, "")
}

// BenchmarkRescan is one rescanner pass over the unchanged corpus wing: the
// background cost paid every RescanInterval (the loop throttles itself to
// about a tenth of a core).
func BenchmarkRescan(b *testing.B) {
	root, _ := bench.get(b)
	s := openBench(b, root)
	lat := make([]time.Duration, 0, 64)
	for b.Loop() {
		t0 := time.Now()
		if err := s.Rescan(context.Background()); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	report(b, lat, nil, "")
}

// BenchmarkWriteScale is brain_write's store path (Store.Create, all
// brain_write does besides checking its arguments) with default options in
// a wing of 300 notes and in the benchmark wing (BRAINSTEM_BENCH_DOCS,
// default 100,000), interleaved in the same run so that both see the same
// machine: the p50 at the large wing over the p50 at 300 notes
// ("p50/small") is how much a write slows down as the wing grows.
func BenchmarkWriteScale(b *testing.B) {
	root, _ := bench.get(b)
	small := b.TempDir()
	if err := writeBrain(small, benchNotes(300)); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	open := func(root string) *Store {
		s, err := Open(ctx, Options{Root: root, Wing: "bench", MaxNoteBytes: benchMaxNote()}) // defaults otherwise
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	stores := []*Store{open(small), open(root)}
	body := corpus.Notes(7, 1)[0].Body
	run := time.Now().UnixNano()
	lat := [2][]time.Duration{}
	var created [2][]string
	i := 0
	for b.Loop() {
		for k, s := range stores {
			t0 := time.Now()
			n, err := s.Create(ctx, NewNote{Title: fmt.Sprintf("Bench scale %d %d", run, i), Body: body, Hall: "sources", By: "bench@example.com"})
			if err != nil {
				b.Fatal(err)
			}
			lat[k] = append(lat[k], time.Since(t0))
			created[k] = append(created[k], n.Path)
		}
		i++
	}
	b.StopTimer()
	report(b, lat[1], lat[0], "small")
	b.ReportMetric(float64(stores[1].Len()), "notes")
	for k, s := range stores {
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		for _, p := range created[k] {
			os.Remove(filepath.Join([]string{small, root}[k], p))
		}
	}
}

// BenchmarkRestart opens the benchmark wing after a clean shutdown: the
// index comes from the snapshot Close saved, and only the files whose
// signature changed are read (here a few edited behind the store's back).
// seconds is the time to ready (Open returning).
func BenchmarkRestart(b *testing.B) {
	root, ids := bench.get(b)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: root, Wing: "bench", RescanInterval: -1, MaxNoteBytes: benchMaxNote()})
	if err != nil {
		b.Fatal(err)
	}
	notes := s.Len()                  // the benchmark's notes, and any an earlier benchmark kept in a kept brain
	if err := s.Close(); err != nil { // saves the snapshot
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		for range 10 { // edits made while the shard was down
			p := filepath.Join(root, "wiki", ids[rng.IntN(len(ids))]+".md")
			now := time.Now()
			if err := os.Chtimes(p, now, now); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		b.StartTimer()
		t0 := time.Now()
		s, err := Open(ctx, Options{Root: root, Wing: "bench", RescanInterval: -1, MaxNoteBytes: benchMaxNote()})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		b.StopTimer()
		if s.Len() != notes || !s.snap.loaded {
			b.Fatalf("restart: %d notes, snapshot loaded %v", s.Len(), s.snap.loaded)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "seconds")
	b.ReportMetric(float64(len(ids)), "notes")
}

// BenchmarkOutsideEdit is the time from an edit made behind the store's
// back (a new note written by another process) to that note being found by
// search, with default options (the watcher on Linux, the rescanner).
func BenchmarkOutsideEdit(b *testing.B) {
	root, _ := bench.get(b)
	ctx := context.Background()
	s, err := Open(ctx, Options{Root: root, Wing: "bench", MaxNoteBytes: benchMaxNote()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	run := time.Now().UnixNano()
	lat := make([]time.Duration, 0, 64)
	var paths []string
	i := 0
	for b.Loop() {
		word := fmt.Sprintf("zqx%dq%d", run%100000, i)
		p := filepath.Join(root, "wiki", "bench", "facts", "outside-edit-"+word+".md")
		t0 := time.Now()
		if err := os.WriteFile(p, []byte("# Outside edit\n"+word+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		for {
			hits, err := s.Search(ctx, word, SearchOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if len(hits) == 1 {
				break
			}
			if time.Since(t0) > time.Minute {
				b.Fatalf("an outside edit did not reach search in a minute")
			}
			time.Sleep(time.Millisecond) // polling search, as a client would
		}
		lat = append(lat, time.Since(t0))
		paths = append(paths, p)
		i++
	}
	b.StopTimer()
	report(b, lat, nil, "")
	b.ReportMetric(boolMetric(s.watcher != nil), "watching")
	for _, p := range paths {
		os.Remove(p)
	}
}

func boolMetric(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
