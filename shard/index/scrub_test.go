package index_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/tooling/corpus"
)

// TestScrubForgetsDeletedText: after a document is replaced and another
// deleted, Scrub leaves none of their words in what Save writes, and every
// search answers as before, also after a Load.
func TestScrubForgetsDeletedText(t *testing.T) {
	notes := corpus.Notes(5, 300)
	ix := index.New()
	for i, n := range notes {
		ix.Put(index.Doc{ID: fmt.Sprintf("w/facts/n%03d", i), Title: n.Title, Body: n.Body})
	}
	ix.Put(index.Doc{ID: "w/facts/leak", Title: "Keys", Body: "the password is zebracorn-hunter2 and more"})
	ix.Put(index.Doc{ID: "w/facts/leak2", Title: "Other", Body: "token quokkasecret"})
	ix.Put(index.Doc{ID: "w/facts/leak", Title: "Keys", Body: "the password was rotated"})
	ix.Delete("w/facts/leak2")

	queries := append(corpus.Queries(5, 2, 20), "password rotated", "zebracorn", "quokkasecret")
	before := map[string][]index.Hit{}
	for _, q := range queries {
		before[q] = ix.Search(q, index.Options{Limit: 20})
	}
	var saved bytes.Buffer
	if err := ix.Save(&saved); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(saved.Bytes(), []byte("zebracorn")) {
		t.Fatal("the unscrubbed index does not hold the replaced words: the test proves nothing")
	}
	gen := ix.Generation()
	ix.Scrub()
	if ix.Generation() == gen {
		t.Error("Scrub did not change the generation, though the dictionary changed")
	}
	saved.Reset()
	if err := ix.Save(&saved); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"zebracorn", "hunter2", "quokkasecret"} {
		if bytes.Contains(saved.Bytes(), []byte(w)) {
			t.Errorf("the scrubbed index still holds %q", w)
		}
	}
	loaded, err := index.Load(bytes.NewReader(saved.Bytes()))
	if err != nil {
		t.Fatalf("Load after Scrub: %v", err)
	}
	for _, q := range queries {
		sameHits(t, "after Scrub "+q, ix.Search(q, index.Options{Limit: 20}), before[q])
		sameHits(t, "loaded "+q, loaded.Search(q, index.Options{Limit: 20}), before[q])
	}
	ix.Put(index.Doc{ID: "w/facts/new", Title: "New", Body: "zebracorn again"})
	if hits := ix.Search("zebracorn", index.Options{}); len(hits) != 1 || hits[0].ID != "w/facts/new" {
		t.Fatalf("a word added after Scrub: %v", hits)
	}
}
