package index_test

import (
	"bufio"
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/brainstem/brainstem/shard/index"
)

var update = flag.Bool("update", false, "rewrite testdata/index.golden")

// goldenIndex builds a small index with a tombstone and a replaced
// document, from fixed text (not a generated corpus, which may change).
func goldenIndex() *index.Index {
	ix := index.NewWithConfig(index.Config{TitleBoost: 3})
	for _, d := range []index.Doc{
		{ID: "payments/decisions/use-idempotency-keys", Title: "Use idempotency keys", Body: "Every write to the ledger carries an idempotency key; a retried charge is applied once."},
		{ID: "payments/facts/ledger", Title: "The ledger", Body: "The ledger is append-only. Refunds are new entries, never edits."},
		{ID: "payments/failures/double-charge", Title: "Double charge, 2025-03", Body: "A retry without a key charged twice. See use-idempotency-keys."},
		{ID: "payments/hypotheses/batching", Title: "Batching refunds", Body: "Refunds batched hourly might halve the ledger's write load."},
		{ID: "payments/sources/rfc", Title: "Idempotency-Key header", Body: "The IETF draft for the Idempotency-Key HTTP header field."},
	} {
		ix.Put(d)
	}
	ix.Delete("payments/hypotheses/batching")
	ix.Put(index.Doc{ID: "payments/facts/ledger", Title: "The ledger", Body: "The ledger is append-only: refunds and chargebacks are new entries."})
	return ix
}

// TestGoldenIndex holds Save's format: an index saved by an earlier version
// (testdata/index.golden) still loads, answers like the index it was saved
// from and saves back to the same bytes, and the same index still saves
// exactly those bytes.
func TestGoldenIndex(t *testing.T) {
	golden := filepath.Join("testdata", "index.golden")
	ix := goldenIndex()
	var saved bytes.Buffer
	if err := ix.Save(&saved); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(golden, saved.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(saved.Bytes(), want) {
		t.Errorf("Save's bytes changed (%d bytes, golden %d): the format must not change", saved.Len(), len(want))
	}
	br := bufio.NewReader(bytes.NewReader(append(slices.Clone(want), "after"...)))
	got, err := index.Load(br)
	if err != nil {
		t.Fatal(err)
	}
	if rest, _ := br.ReadString(0); rest != "after" {
		t.Fatalf("Load read past the index: left %q", rest)
	}
	var again bytes.Buffer
	if err := got.Save(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), want) {
		t.Error("the loaded index saves other bytes")
	}
	if got.Len() != 4 || got.TitleBoost() != 3 {
		t.Fatalf("loaded %d documents, boost %d; want 4, 3", got.Len(), got.TitleBoost())
	}
	for _, q := range []string{"ledger", "idempotency key", "refunds", "batching", "charge twice"} {
		a, b := ix.Query(q, index.Options{Limit: 10}), got.Query(q, index.Options{Limit: 10})
		if a.Total != b.Total || !slices.EqualFunc(a.Hits, b.Hits, func(x, y index.Hit) bool {
			return x.ID == y.ID && x.Score == y.Score && x.Offset == y.Offset && slices.Equal(x.Terms, y.Terms)
		}) {
			t.Errorf("%q: the loaded index answers %+v, the saved one %+v", q, b, a)
		}
	}
	if r := got.Query("batching", index.Options{Limit: 10}); r.Total != 0 {
		t.Errorf("the tombstone is found: %+v", r)
	}
}
