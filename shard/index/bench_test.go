package index_test

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/brainstem/brainstem/shard/corpus"
	"github.com/brainstem/brainstem/shard/index"
)

// benchSeed is the corpus seed of every benchmark.
const benchSeed = 1

// benchData is the benchmark corpus and an index over it, built once per
// process on first use.
type benchData struct {
	once sync.Once
	docs []index.Doc
	text int64
	ix   *index.Index
}

var bench benchData // zero value; filled lazily by load

// load builds the corpus (size from BRAINSTEM_BENCH_DOCS, default 100000)
// and its index once.
func (d *benchData) load(b *testing.B) {
	b.Helper()
	d.once.Do(func() {
		n := 100000
		if s := os.Getenv("BRAINSTEM_BENCH_DOCS"); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v <= 0 {
				panic(fmt.Sprintf("BRAINSTEM_BENCH_DOCS=%q: want a positive integer", s))
			}
			n = v
		}
		d.docs = corpus.Generate(benchSeed, n)
		d.text = corpus.TextBytes(d.docs)
		d.ix = build(d.docs)
	})
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
	bench.load(b)
	b.SetBytes(bench.text)
	var heap uint64
	for b.Loop() {
		b.StopTimer()
		before := heapAlloc()
		b.StartTimer()
		ix := build(bench.docs)
		b.StopTimer()
		heap = heapAlloc() - before
		runtime.KeepAlive(ix)
		b.StartTimer()
	}
	b.ReportMetric(float64(heap), "heap-bytes")
	b.ReportMetric(float64(heap)/float64(bench.text), "heap/text")
	b.ReportMetric(float64(len(bench.docs)), "docs")
}

// BenchmarkQuery runs 1-, 2- and 4-term queries (top 10) and reports the
// median and 99th percentile latency.
func BenchmarkQuery(b *testing.B) {
	bench.load(b)
	for _, terms := range []int{1, 2, 4} {
		queries := corpus.Queries(benchSeed, terms, 1000)
		b.Run(fmt.Sprintf("terms=%d", terms), func(b *testing.B) {
			lat := make([]time.Duration, 0, 4096)
			hits := 0
			i := 0
			for b.Loop() {
				start := time.Now()
				hits += len(bench.ix.Search(queries[i%len(queries)], index.Options{}))
				lat = append(lat, time.Since(start))
				i++
			}
			ReportLatency(b, lat)
			b.ReportMetric(float64(hits)/float64(i), "hits/op")
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
