package index_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/tooling/corpus"
)

// benchSeed is the corpus seed of every benchmark.
const benchSeed = 1

// benchData is a benchmark corpus and an index over it, built once per
// process on first use.
type benchData struct {
	once  sync.Once
	heavy bool
	docs  []index.Doc
	text  int64
	ix    *index.Index
}

// bench is the typical corpus (corpus.Notes); heavy the heavy-tailed one
// (corpus.HeavyNotes). Zero values, filled lazily by load.
var bench, heavy = benchData{}, benchData{heavy: true}

// benchDocs is the corpus size: BRAINSTEM_BENCH_DOCS, else def.
func benchDocs(def int) int {
	if s := os.Getenv("BRAINSTEM_BENCH_DOCS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			panic(fmt.Sprintf("BRAINSTEM_BENCH_DOCS=%q: want a positive integer", s))
		}
		return v
	}
	return def
}

// load builds the corpus and its index once: BRAINSTEM_BENCH_DOCS notes,
// by default 100,000 typical notes or 20,000 heavy-tailed ones (about 88 MB,
// the size of the acceptance benchmarks).
func (d *benchData) load(b *testing.B) {
	b.Helper()
	d.once.Do(func() {
		if d.heavy {
			d.docs = corpus.Docs("bench", corpus.HeavyNotes(benchSeed, benchDocs(20000)))
		} else {
			d.docs = corpus.Generate(benchSeed, benchDocs(100000))
		}
		d.text = corpus.TextBytes(d.docs)
		d.ix = build(d.docs)
	})
}

// corpora are the two corpora the build and query benchmarks run on.
func corpora() []struct {
	name string
	d    *benchData
} {
	return []struct {
		name string
		d    *benchData
	}{{"typical", &bench}, {"heavy", &heavy}}
}

// heapAlloc returns HeapAlloc after a full GC, collecting up to five times
// until two readings agree within 1 MB.
func heapAlloc() uint64 {
	var m runtime.MemStats
	prev := uint64(0)
	for range 5 {
		runtime.GC()
		runtime.ReadMemStats(&m)
		if d := int64(m.HeapAlloc) - int64(prev); d > -1<<20 && d < 1<<20 {
			break
		}
		prev = m.HeapAlloc
	}
	return m.HeapAlloc
}

// BenchmarkBuild indexes the whole corpus per iteration and reports the
// index's retained heap (after GC) and its ratio to the corpus text size.
func BenchmarkBuild(b *testing.B) {
	for _, c := range corpora() {
		b.Run("corpus="+c.name, func(b *testing.B) {
			c.d.load(b)
			b.SetBytes(c.d.text)
			var heap uint64
			for b.Loop() {
				b.StopTimer()
				before := heapAlloc()
				b.StartTimer()
				ix := build(c.d.docs)
				b.StopTimer()
				heap = heapAlloc() - before
				runtime.KeepAlive(ix)
				b.StartTimer()
			}
			b.ReportMetric(float64(heap), "heap-bytes")
			b.ReportMetric(float64(heap)/float64(c.d.text), "heap/text")
			b.ReportMetric(float64(len(c.d.docs)), "docs")
		})
	}
}

// BenchmarkQuery runs 1-, 2- and 4-term queries (top 10) and reports the
// median and 99th percentile latency.
func BenchmarkQuery(b *testing.B) {
	for _, c := range corpora() {
		for _, terms := range []int{1, 2, 4} {
			queries := corpus.Queries(benchSeed, terms, 1000)
			b.Run(fmt.Sprintf("corpus=%s/terms=%d", c.name, terms), func(b *testing.B) {
				c.d.load(b)
				lat := make([]time.Duration, 0, 4096)
				hits := 0
				i := 0
				for b.Loop() {
					start := time.Now()
					hits += len(c.d.ix.Search(queries[i%len(queries)], index.Options{}))
					lat = append(lat, time.Since(start))
					i++
				}
				ReportLatency(b, lat)
				b.ReportMetric(float64(hits)/float64(i), "hits/op")
			})
		}
	}
}

// BenchmarkSnippet measures a snippet of a note of 1 KB to 2 MB whose first
// match is in the middle: Snippet over the whole body (what a hit cost
// before) against SnippetAt reading a window around the offset the index
// recorded. SnippetAt's cost does not depend on the size; Snippet's grows
// with it. BRAINSTEM_BENCH_SMALL keeps to small notes.
func BenchmarkSnippet(b *testing.B) {
	sizes := []int{1 << 10, 16 << 10, 256 << 10, 2 << 20}
	if os.Getenv("BRAINSTEM_BENCH_SMALL") != "" {
		sizes = sizes[:2]
	}
	var text strings.Builder
	for _, n := range corpus.HeavyNotes(benchSeed, 200) {
		text.WriteString(n.Body)
	}
	filler := text.String()
	for _, size := range sizes {
		var sb strings.Builder
		for sb.Len() < size/2 {
			sb.WriteString(filler[:min(len(filler), size/2-sb.Len())])
		}
		sb.WriteString(" Quetzalcoatl ")
		for sb.Len() < size {
			sb.WriteString(filler[:min(len(filler), size-sb.Len())])
		}
		body := sb.String()
		ix := index.New()
		ix.Put(index.Doc{ID: "bench/facts/x", Title: "x", Body: body})
		hits := ix.Search("quetzalcoatl", index.Options{})
		if len(hits) != 1 {
			b.Fatalf("no hit in a %d-byte body", size)
		}
		h := hits[0]
		want := index.Snippet(body, h.Terms, 200)
		r := strings.NewReader(body)
		b.Run(fmt.Sprintf("size=%dKiB/whole", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if index.Snippet(body, h.Terms, 200) != want {
					b.Fatal("snippet changed")
				}
			}
		})
		b.Run(fmt.Sprintf("size=%dKiB/window", size>>10), func(b *testing.B) {
			for b.Loop() {
				got, err := index.SnippetAt(r, int64(len(body)), int64(h.Offset), 200)
				if err != nil || got != want {
					b.Fatalf("SnippetAt = %q, %v; Snippet = %q", got, err, want)
				}
			}
		})
	}
}

// ReportLatency reports the p50 and p99 of lat as p50-ns and p99-ns.
func ReportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}
