package store

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/shard/history"
	"github.com/brainstem/brainstem/tooling/corpus"
)

// The benchmarks of issue 17's acceptance (docs/performance-history.md):
// what history costs a write, a history read, a restart and a first start
// at the benchmark wing's size (BRAINSTEM_BENCH_DOCS, default 100,000).

// linkCopy gives dst the note files of src's wiki/ as hard links (instant,
// and Create only adds files): a second brain with the same notes and no
// history or state of its own.
func linkCopy(b *testing.B, src, dst string) {
	b.Helper()
	err := filepath.WalkDir(filepath.Join(src, "wiki"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !strings.HasSuffix(p, ".md") || d.Name() == "_index.md" {
			return nil
		}
		return os.Link(p, filepath.Join(dst, rel))
	})
	if err != nil {
		b.Fatal(err)
	}
}

func openWith(b *testing.B, root string, h HistoryOptions) *Store {
	b.Helper()
	s, err := Open(context.Background(), Options{Root: root, Wing: "bench", RescanInterval: -1, MaxNoteBytes: benchMaxNote(), History: h})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkWriteHistory is brain_write's store path (Store.Create) in the
// benchmark wing with history, interleaved with the same writes in a copy
// of the wing without history: p50/no-history is what history costs a
// write (acceptance: at most 1.5 at 100,000 notes).
func BenchmarkWriteHistory(b *testing.B) {
	root, _ := bench.get(b)
	plain := b.TempDir()
	linkCopy(b, root, plain)
	with := openWith(b, root, HistoryOptions{})
	without := openWith(b, plain, HistoryOptions{Off: true})
	ctx := context.Background()
	body := corpus.Notes(7, 1)[0].Body
	run := time.Now().UnixNano()
	var lat [2][]time.Duration
	var created []string
	i := 0
	for b.Loop() {
		for k, s := range []*Store{without, with} {
			t0 := time.Now()
			n, err := s.Create(ctx, NewNote{Title: fmt.Sprintf("Bench history %d %d", run, i), Body: body, Hall: "sources", By: "bench@example.com",
				Prov: Provenance{Tool: "brain_write"}})
			if err != nil {
				b.Fatal(err)
			}
			lat[k] = append(lat[k], time.Since(t0))
			if k == 1 {
				created = append(created, n.Path)
			}
		}
		i++
	}
	b.StopTimer()
	report(b, lat[1], lat[0], "no-history")
	if err := with.History().Flush(ctx); err != nil {
		b.Fatal(err)
	}
	without.Close()
	// The benchmark wing keeps its size: the notes go, as an archive would.
	for _, p := range created {
		if _, err := with.Archive(ctx, Archival{Ref: p, Reason: "bench cleanup", By: "bench@example.com"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := with.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHistoryRead is brain_history's store path (Store.Versions, the
// first page of 20 and a page of 100, the tool's largest) of a note with
// 1,000 versions in the benchmark wing (acceptance: p50 at most 20 ms).
func BenchmarkHistoryRead(b *testing.B) {
	root, _ := bench.get(b)
	s := openWith(b, root, HistoryOptions{})
	b.Cleanup(func() { s.Close() })
	ctx := context.Background()
	const id, versions = "bench/facts/bench-many-versions", 1000
	h, err := s.Versions(ctx, id, "", versions) // kept from an earlier run in a kept brain
	if err != nil {
		if _, err := s.Create(ctx, NewNote{Title: "Many versions", Hall: "facts", Slug: "bench-many-versions", Body: "v0", By: "bench@example.com"}); err != nil {
			b.Fatal(err)
		}
		h.Versions = make([]history.Version, 1)
	}
	for n := len(h.Versions); n < versions; n++ {
		if _, err := s.Update(ctx, Change{ID: id, Body: fmt.Sprintf("version %d %d", n, time.Now().UnixNano()), Reason: "bench", By: "bench@example.com"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.History().Flush(ctx); err != nil { // the updates are committed before the reads
		b.Fatal(err)
	}
	for _, limit := range []int{20, 100} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			lat := make([]time.Duration, 0, 1024)
			for b.Loop() {
				t0 := time.Now()
				h, err := s.Versions(ctx, id, "", limit)
				if err != nil || len(h.Versions) != limit {
					b.Fatalf("%v: %d versions", err, len(h.Versions))
				}
				lat = append(lat, time.Since(t0))
			}
			report(b, lat, nil, "")
			b.ReportMetric(float64(s.Len()), "notes")
		})
	}
}

// BenchmarkFirstStart opens a copy of the benchmark wing that has no
// history yet: the load, the index and the initial commit of every note
// (acceptance: at most 60 s at 100,000 notes), then reports the disk
// history takes against the notes' own bytes.
func BenchmarkFirstStart(b *testing.B) {
	root, _ := bench.get(b)
	var total time.Duration
	var gitBytes, noteBytes int64
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		linkCopy(b, root, dir)
		noteBytes = treeBytes(b, filepath.Join(dir, "wiki"))
		b.StartTimer()
		t0 := time.Now()
		s := openWith(b, dir, HistoryOptions{})
		total += time.Since(t0)
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		gitBytes = treeBytes(b, filepath.Join(dir, ".git"))
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "seconds")
	b.ReportMetric(float64(gitBytes), "git-bytes")
	b.ReportMetric(float64(gitBytes)/float64(noteBytes), "git/notes")
}

// treeBytes is the bytes of the regular files under dir.
func treeBytes(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
