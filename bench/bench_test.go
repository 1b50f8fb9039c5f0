package bench

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/tooling/corpus"
)

// data is the corpus and both indexes, built once per process on first use.
type data struct {
	once    sync.Once
	err     error
	docs    []index.Doc
	text    int64
	ours    *index.Index
	bleve   bleve.Index
	queries map[int][]string // by term count
}

var shared data // zero value; filled lazily by load

// load builds everything once with n documents (the first caller's n).
func (d *data) load(tb testing.TB, n int) *data {
	tb.Helper()
	d.once.Do(func() {
		d.docs = corpus.Generate(Seed, n)
		d.text = corpus.TextBytes(d.docs)
		d.ours = BuildOurs(d.docs)
		d.bleve, d.err = BuildBleve(d.docs)
		d.queries = map[int][]string{}
		for _, terms := range []int{1, 2, 4} {
			d.queries[terms] = corpus.Queries(Seed, terms, 500)
		}
	})
	if d.err != nil {
		tb.Fatal(d.err)
	}
	return d
}

func benchDocs(tb testing.TB) int {
	n, err := DocsFromEnv(100000)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// heapAlloc returns HeapAlloc after a full GC. It collects up to five times
// until two readings agree within 1 MB, so that memory freed by finalizers or
// the pools' victim caches does not blur a delta.
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

// measureBuild runs build once and returns the index, the wall time and the
// heap it retains (HeapAlloc after GC, before and after).
func measureBuild(build func() (any, error)) (any, time.Duration, uint64, error) {
	before := heapAlloc()
	start := time.Now()
	ix, err := build()
	took := time.Since(start)
	heap := heapAlloc() - before
	return ix, took, heap, err
}

func closeIndex(ix any) {
	if c, ok := ix.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

func buildOurs(docs []index.Doc) func() (any, error) {
	return func() (any, error) { return BuildOurs(docs), nil }
}

func buildBleve(docs []index.Doc) func() (any, error) {
	return func() (any, error) { return BuildBleve(docs) }
}

// BenchmarkBuild builds each engine's index of the corpus per iteration and
// reports the retained heap and its ratio to the corpus text.
func BenchmarkBuild(b *testing.B) {
	d := shared.load(b, benchDocs(b))
	for _, e := range []struct {
		name  string
		build func() (any, error)
	}{{"ours", buildOurs(d.docs)}, {"bleve", buildBleve(d.docs)}} {
		b.Run(e.name, func(b *testing.B) {
			b.SetBytes(d.text)
			var heap uint64
			for b.Loop() {
				b.StopTimer()
				before := heapAlloc()
				b.StartTimer()
				ix, err := e.build()
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				heap = heapAlloc() - before
				closeIndex(ix)
				b.StartTimer()
			}
			b.ReportMetric(float64(heap), "heap-bytes")
			b.ReportMetric(float64(heap)/float64(d.text), "heap/text")
		})
	}
}

// BenchmarkQuery runs the same 1-, 2- and 4-term queries (top 10) on both
// engines and reports p50 and p99 latency.
func BenchmarkQuery(b *testing.B) {
	d := shared.load(b, benchDocs(b))
	for _, terms := range []int{1, 2, 4} {
		qs := d.queries[terms]
		b.Run(fmt.Sprintf("terms=%d/ours", terms), func(b *testing.B) {
			lat := make([]time.Duration, 0, 4096)
			i := 0
			for b.Loop() {
				start := time.Now()
				d.ours.Search(qs[i%len(qs)], index.Options{})
				lat = append(lat, time.Since(start))
				i++
			}
			reportLatency(b, lat)
		})
		b.Run(fmt.Sprintf("terms=%d/bleve", terms), func(b *testing.B) {
			lat := make([]time.Duration, 0, 4096)
			i := 0
			for b.Loop() {
				start := time.Now()
				if _, err := d.bleve.Search(BleveRequest(qs[i%len(qs)], index.DefaultTitleBoost)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				i++
			}
			reportLatency(b, lat)
		})
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	s := summarize(lat)
	b.ReportMetric(float64(s.p50), "p50-ns")
	b.ReportMetric(float64(s.p99), "p99-ns")
}

type latency struct{ p50, p99, mean time.Duration }

func summarize(lat []time.Duration) latency {
	if len(lat) == 0 {
		return latency{}
	}
	slices.Sort(lat)
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	return latency{p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], mean: sum / time.Duration(len(lat))}
}
