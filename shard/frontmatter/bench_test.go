package frontmatter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// largeNote is a note whose header is close to MaxHeaderBytes.
func largeNote() string {
	var b strings.Builder
	b.WriteString("---\n")
	for i := 0; b.Len() < MaxHeaderBytes-100; i++ {
		fmt.Fprintf(&b, "field_%04d: value number %d   # comment\n", i, i)
	}
	b.WriteString("---\nbody\n")
	return b.String()
}

func benchNotes() []struct{ name, raw string } {
	return []struct{ name, raw string }{{"example", example}, {"64KiB", largeNote()}}
}

// BenchmarkParse measures Parse; baseline-ns is yaml.v3 unmarshalling the
// same header into a map in the same run, and x-baseline the ratio.
func BenchmarkParse(b *testing.B) {
	for _, n := range benchNotes() {
		b.Run(n.name, func(b *testing.B) {
			raw := []byte(n.raw)
			header := []byte(strings.SplitN(n.raw, "---\n", 3)[1])
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := Parse(raw); err != nil {
					b.Fatal(err)
				}
			}
			per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			// Baseline, same iterations, after the timed loop.
			start := time.Now()
			for range b.N {
				var m map[string]any
				if err := yaml.Unmarshal(header, &m); err != nil {
					b.Fatal(err)
				}
			}
			base := float64(time.Since(start).Nanoseconds()) / float64(b.N)
			b.ReportMetric(base, "baseline-ns")
			b.ReportMetric(per/base, "x-baseline")
		})
	}
}

// BenchmarkSet measures one verified in-place edit plus Bytes.
func BenchmarkSet(b *testing.B) {
	for _, n := range benchNotes() {
		b.Run(n.name, func(b *testing.B) {
			d, err := Parse([]byte(n.raw))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				d.Set("title", fmt.Sprintf("title %d", i))
				_ = d.Bytes()
			}
			if d.Err() != nil {
				b.Fatal(d.Err())
			}
		})
	}
}
