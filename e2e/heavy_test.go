package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/shard/frontmatter"
	"github.com/brainstem/brainstem/shard/tools"
	"github.com/brainstem/brainstem/tooling/corpus"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

// heavyMaxNote is the note size limit of the heavy-tailed brains: their
// largest notes are about 2 MB.
const heavyMaxNote = 4 << 20

// heavyBrain is one heavy-tailed corpus written twice: split round robin
// over wings a, b and c of Three, and whole in wing "all" of One, under the
// same slugs.
type heavyBrain struct {
	Three, One string
	Notes      []corpus.Note
	Wing       map[string]string // slug → wing in Three
	Bytes      int64
}

// writeHeavyBrain writes n notes of corpus.HeavyNotes(1, n), plus, when
// extraBig is set, two synthetic notes of 0.6 and 1.5 MB (so that small
// test corpora hold notes of megabytes too). With BRAINSTEM_BENCH_BRAIN set
// the brains are kept in that directory and reused by later runs.
func writeHeavyBrain(t testing.TB, n int, extraBig bool) *heavyBrain {
	t.Helper()
	notes := corpus.HeavyNotes(1, n)
	if extraBig {
		var b strings.Builder
		for i := 0; b.Len() < 1500<<10; i++ {
			b.WriteString(notes[i%len(notes)].Body)
		}
		big := b.String()
		notes = append(notes,
			corpus.Note{Hall: "sources", Slug: "big-manual", Title: "Operations manual", Body: big},
			corpus.Note{Hall: "facts", Slug: "half-big-manual", Title: "Operations manual excerpt", Body: big[len(big)*3/5:]})
	}
	dir, keep := os.Getenv("BRAINSTEM_BENCH_BRAIN"), true
	if dir == "" {
		dir, keep = t.TempDir(), false
	}
	hb := &heavyBrain{Three: filepath.Join(dir, "three"), One: filepath.Join(dir, "one"), Notes: notes, Wing: map[string]string{}}
	marker := filepath.Join(dir, fmt.Sprintf(".heavy-complete-%d-%v", n, extraBig))
	_, err := os.Stat(marker)
	complete := keep && err == nil
	wings := []string{"a", "b", "c"}
	for i, note := range notes {
		w := wings[i%len(wings)]
		hb.Wing[note.Slug] = w
		if complete {
			continue
		}
		for _, dst := range []struct{ root, wing string }{{hb.Three, w}, {hb.One, "all"}} {
			raw := frontmatter.New([][2]string{{"title", note.Title}, {"wing", dst.wing}, {"hall", note.Hall},
				{"created_by", "bench@example.com"}, {"created_at", "2026-01-01T00:00:00Z"}}, note.Body).Bytes()
			p := filepath.Join(dst.root, "wiki", dst.wing, note.Hall, note.Slug+".md")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, note := range notes {
		hb.Bytes += int64(len(note.Body))
	}
	if keep && !complete {
		if err := os.WriteFile(marker, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return hb
}

// startHeavyEnv serves brain with a gateway and one shard per wing, notes
// of up to heavyMaxNote bytes, and no per-user rate limit.
func startHeavyEnv(t testing.TB, brain string) *devenv.Env {
	t.Helper()
	return devenvtest.Start(t, devenv.Config{Brain: brain,
		Gateway: func(c *config.Config) { c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6 },
		Shard:   func(c *shard.Config) { c.MaxNoteBytes = heavyMaxNote },
	})
}

// queryAnswer is a brain_query answer as the tests read it.
type queryAnswer struct {
	Hits        []hit `json:"hits"`
	Total       int64 `json:"total"`
	Wings       []any `json:"wings"`
	Unavailable []any `json:"unavailable"`
}

func decodeAnswer(t testing.TB, text string) queryAnswer {
	t.Helper()
	var a queryAnswer
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		t.Fatalf("%v: %s", err, text)
	}
	return a
}

// oneToThree maps an id of wing "all" to the id of the same note in the
// three-wing brain.
func (hb *heavyBrain) oneToThree(id string) string {
	parts := strings.Split(id, "/")
	return hb.Wing[parts[2]] + "/" + parts[1] + "/" + parts[2]
}

// heavyQueries mixes 1-, 2- and 3-term queries drawn from the corpus's
// vocabulary.
func heavyQueries(n int) []string {
	by := [][]string{corpus.Queries(1, 1, n), corpus.Queries(1, 2, n), corpus.Queries(1, 3, n)}
	qs := make([]string, n)
	for i := range qs {
		qs[i] = by[i%3][i]
	}
	return qs
}

// crossWingHeavy is TestCrossWingRankingEqualsUnion on a heavy-tailed
// corpus (notes up to megabytes): a query without a wing, answered by three
// shards in the rank and fetch steps and merged by the gateway, ranks and
// scores exactly like one wing holding every note, and its total is that
// wing's number of matching notes. BRAINSTEM_E2E_HEAVY_NOTES sets the
// corpus size (default 400, plus two notes of about a megabyte).
func crossWingHeavy(t *testing.T) {
	n := 400
	if v, err := strconv.Atoi(os.Getenv("BRAINSTEM_E2E_HEAVY_NOTES")); err == nil && v > 0 {
		n = v
	}
	hb := writeHeavyBrain(t, n, true)
	env := startHeavyEnv(t, hb.Three)
	tok, _, err := env.Token("alice@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	gw := httpClient(t, env.MCPURL, tok)
	key, _ := auth.GenerateKey()
	union, err := shard.Open(context.Background(), shard.Config{Brain: hb.One, Wing: "all", Key: key, MaxNoteBytes: heavyMaxNote})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { union.Close() })
	reader := tools.Caller{Email: "alice@example.com", Caps: brain.CapRead}

	queries := append(heavyQueries(24), "operations manual", "quetzal")
	compared := 0
	for _, q := range queries {
		args, _ := json.Marshal(map[string]any{"query": q, "scope": "wiki", "limit": 50})
		text, isErr := call(t, gw, "brain_query", string(args))
		if isErr {
			t.Fatalf("%q: %s", q, text)
		}
		merged := decodeAnswer(t, text)
		if len(merged.Wings) != 3 || len(merged.Unavailable) != 0 {
			t.Fatalf("%q answered by %v, unavailable %v", q, merged.Wings, merged.Unavailable)
		}
		res, isErr := union.Tools().Call(context.Background(), reader, "brain_query", args)
		if isErr {
			t.Fatalf("union %q: %s", q, res)
		}
		one := decodeAnswer(t, string(res))
		for i := range one.Hits {
			one.Hits[i].ID = hb.oneToThree(one.Hits[i].ID)
		}
		if merged.Total != one.Total {
			t.Errorf("%q: total %d across wings, %d on one wing", q, merged.Total, one.Total)
		}
		compareRankings(t, q, merged.Hits, one.Hits, 50)
		compared += len(merged.Hits)
	}
	if compared < 300 {
		t.Fatalf("only %d hits compared", compared)
	}
}

// BenchmarkHeavyCorpus is the acceptance benchmark of search on a brain of
// real-world shape: BRAINSTEM_BENCH_DOCS heavy-tailed notes (default
// 20,000, about 88 MB, notes up to 2 MB), served twice through the whole
// product (dev identity provider, gateway, real shards over QUIC): split
// over three wings, and in one wing. See benchCrossLatency for what one
// round measures.
func BenchmarkHeavyCorpus(b *testing.B) {
	hb := writeHeavyBrain(b, benchDocs(), false)
	eachRevision(b, hb.cross(b), func(b *testing.B, cb *crossBrain) {
		benchCrossLatency(b, cb)
		b.ReportMetric(float64(len(hb.Notes)), "notes")
		b.ReportMetric(float64(hb.Bytes)/1e6, "MB")
		b.ReportMetric(float64(len(medianNote(hb.Notes).Body)), "median-note-bytes")
	})
}

// BenchmarkHeavyThroughput is benchCrossThroughput on the heavy-tailed
// brain of BenchmarkHeavyCorpus.
func BenchmarkHeavyThroughput(b *testing.B) {
	eachRevision(b, writeHeavyBrain(b, benchDocs(), false).cross(b), benchCrossThroughput)
}

// benchDocs is the heavy benchmarks' number of notes: BRAINSTEM_BENCH_DOCS,
// 20,000 by default.
func benchDocs() int {
	if v, err := strconv.Atoi(os.Getenv("BRAINSTEM_BENCH_DOCS")); err == nil && v > 0 {
		return v
	}
	return 20000
}

// cross serves the heavy brain twice, split and whole.
func (hb *heavyBrain) cross(b *testing.B) *crossBrain {
	mid := medianNote(hb.Notes)
	return &crossBrain{
		three: startHeavyEnv(b, hb.Three), one: startHeavyEnv(b, hb.One), oneWing: "all",
		getID: "all/" + mid.Hall + "/" + mid.Slug, queries: heavyQueries(300), toThree: hb.oneToThree,
	}
}

// medianNote is a note of the median body size.
func medianNote(notes []corpus.Note) corpus.Note {
	sizes := make([]int, len(notes))
	for i, note := range notes {
		sizes[i] = len(note.Body)
	}
	median := slices.Sorted(slices.Values(sizes))[len(sizes)/2]
	for _, note := range notes {
		if len(note.Body) == median {
			return note
		}
	}
	panic("unreachable: the median is one of the sizes")
}
