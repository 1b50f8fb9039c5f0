package index_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/brainstem/brainstem/shard/index"
)

// stopAfter is a context whose Err is nil for its first n calls and
// context.Canceled after: a caller that goes away during a ranking.
type stopAfter struct {
	context.Context
	n int
}

func (c *stopAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestQueryStopsWhenCancelled: a ranking over many notes looks at its
// context while it scores postings, not only before it starts, stops with
// the context's error, and leaves nothing behind that changes the next
// ranking.
func TestQueryStopsWhenCancelled(t *testing.T) {
	ix := index.New()
	const n = 50000
	for i := range n {
		ix.Put(index.Doc{ID: fmt.Sprintf("w/facts/n%05d", i), Title: fmt.Sprintf("Note %d", i), Body: fmt.Sprintf("common words and w%d", i%97)})
	}
	terms := []string{"common", "w5"}
	want := ix.QueryTerms(terms, index.Options{Limit: 5})
	ctx := &stopAfter{Context: context.Background(), n: 1} // passes the first look, at the first posting
	if _, err := ix.QueryTermsContext(ctx, terms, index.Options{Limit: 5}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if ctx.n >= 0 {
		t.Fatal("the ranking did not look at its context while scoring")
	}
	got, err := ix.QueryTermsContext(context.Background(), terms, index.Options{Limit: 5})
	if err != nil || got.Total != want.Total {
		t.Fatalf("after a stopped ranking: total %d (%v), want %d", got.Total, err, want.Total)
	}
	sameHits(t, "after a stopped ranking", got.Hits, want.Hits)
}
