package tools

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkWriteIdempotencyKey measures what an idempotency key costs a
// brain_write: the journal's fsynced intent and its commit record.
// Inbox notes are written (no _index.md rewrite), each to a fresh slug, so
// every operation does the same work whatever b.N. Sub-benchmarks report
// allocations (-benchmem) and the median (p50-ns) of each variant;
// "interleaved" alternates an unkeyed and a keyed write in one loop, so
// both see the same disk at the same moment, and reports their medians and
// key/no-key as a ratio.
func BenchmarkWriteIdempotencyKey(b *testing.B) {
	ctx := context.Background()
	body := `"A retry after a timeout cannot tell whether the first request landed; an idempotency key can."`
	args := func(i int, key string) []byte {
		a := fmt.Sprintf(`{"title":"Bench note %d","body":%s,"inbox":true`, i, body)
		if key != "" {
			a += `,"idempotency_key":"` + key + `"`
		}
		return []byte(a + "}")
	}
	run := func(b *testing.B, s *Set, i int, key string) time.Duration {
		start := time.Now()
		res, isErr := s.Call(ctx, writer, "brain_write", args(i, key))
		d := time.Since(start)
		if isErr {
			b.Fatalf("%s", res)
		}
		return d
	}
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Nanoseconds())
	}
	for _, v := range []struct {
		name string
		key  func(i int) string
	}{
		{"no_key", func(int) string { return "" }},
		{"key", func(i int) string { return fmt.Sprintf("bench-%d", i) }},
		{"replay", func(int) string { return "bench-replayed" }},
	} {
		b.Run(v.name, func(b *testing.B) {
			s, _, _ := newKeyedSet(b, nil)
			if v.name == "replay" {
				run(b, s, 0, v.key(0))
			}
			ds := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				n := i
				if v.name == "replay" {
					n = 0 // the same call again: answered from the journal
				}
				ds = append(ds, run(b, s, n, v.key(i)))
			}
			b.ReportMetric(p50(ds), "p50-ns")
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		s, _, _ := newKeyedSet(b, nil)
		plain, keyed := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			plain = append(plain, run(b, s, 2*i, ""))
			keyed = append(keyed, run(b, s, 2*i+1, fmt.Sprintf("bench-%d", i)))
		}
		np, nk := p50(plain), p50(keyed)
		b.ReportMetric(np, "p50-no-key-ns")
		b.ReportMetric(nk, "p50-key-ns")
		b.ReportMetric(nk/np, "key/no-key")
	})
}
