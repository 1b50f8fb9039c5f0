package store

import (
	"context"

	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/index"
)

// The store as a search.Source: brain_query on this wing, and its part of
// a search across wings. Hits are rendered from the files' current bytes
// (Query's rules); the hit shape is search.Hit.

var _ search.Source = (*Store)(nil)

// Generation changes whenever the wing's index does.
func (s *Store) Generation() uint64 { return s.ix.Generation() }

// TermStats returns this wing's BM25 statistics of terms, to be summed
// across wings.
func (s *Store) TermStats(terms []string) search.Stats { return s.ix.StatsOf(terms) }

// RankQuery is the rank step of a search: the keys (note ids) and scores
// of the best notes for q, scored with stats (nil: the wing's own), and
// the number of matching notes, from the index alone; and the best render
// of them rendered, from the same ranking.
func (s *Store) RankQuery(ctx context.Context, q search.Query, stats *search.Stats, render int) ([]search.Ranked, int, []search.Hit, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, nil, err
	}
	iopt, err := s.indexOptions(SearchOptions{Hall: q.Hall, Limit: q.Limit, Stats: stats})
	if err != nil {
		return nil, 0, nil, err
	}
	r := s.ix.QueryTerms(q.Terms, iopt)
	out := make([]search.Ranked, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = search.Ranked{Key: h.ID, Score: h.Score}
	}
	if render <= 0 {
		return out, r.Total, nil, nil
	}
	hits, err := s.render(ctx, r.Hits[:min(render, len(r.Hits))], search.SnippetRunes)
	return out, r.Total, s.searchHits(hits), err
}

// FetchHits renders the hits of keys for q, in that order, exactly as
// QueryHits renders them (scored with stats, the same bits RankQuery gave
// them); keys that are not notes of the wing, no longer indexed or no
// longer matching are left out.
func (s *Store) FetchHits(ctx context.Context, q search.Query, keys []string, stats *search.Stats) ([]search.Hit, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	hits, err := s.render(ctx, s.ix.ScoreTerms(q.Terms, keys, index.Options{Stats: stats}), search.SnippetRunes)
	return s.searchHits(hits), err
}

// QueryHits answers brain_query on this wing: the best hits of q, rendered,
// and the number of matching notes.
func (s *Store) QueryHits(ctx context.Context, q search.Query) (search.Result, error) {
	if err := s.checkOpen(); err != nil {
		return search.Result{}, err
	}
	iopt, err := s.indexOptions(SearchOptions{Hall: q.Hall, Limit: q.Limit})
	if err != nil {
		return search.Result{}, err
	}
	r := s.ix.QueryTerms(q.Terms, iopt)
	hits, err := s.render(ctx, r.Hits, search.SnippetRunes)
	return search.Result{Hits: s.searchHits(hits), Total: int64(r.Total)}, err
}

func (s *Store) searchHits(hits []Hit) []search.Hit {
	out := make([]search.Hit, len(hits))
	for i, h := range hits {
		out[i] = search.Hit{ID: h.ID, Wing: s.wing, Hall: h.Hall, Title: h.Title, Score: h.Score, Snippet: h.Snippet, Path: h.Path, ContentHash: h.Hash}
	}
	return out
}
