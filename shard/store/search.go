package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/index"
)

// The store as a search.Source: brain_query on this wing, and its part of
// a search across wings. A search's scope picks the wiki's index, the
// inbox's (inbox.go), or both, scored with the same statistics (their sum
// when the wing is searched alone) and merged as one index would rank
// them. Hits are rendered from the files' current bytes (Query's rules);
// the hit shape is search.Hit.

var _ search.Source = (*Store)(nil)

// Generation changes whenever the wiki's index or the inbox's does.
func (s *Store) Generation() uint64 { return s.ix.Generation() + s.inbox.ix.Generation() }

// TermStats returns this wing's BM25 statistics of terms over scope, to be
// summed across wings.
func (s *Store) TermStats(terms []string, scope string) search.Stats {
	switch scope {
	case search.ScopeInbox:
		return s.inbox.ix.StatsOf(terms)
	case search.ScopeAll:
		st := s.ix.StatsOf(terms)
		st.Add(s.inbox.ix.StatsOf(terms))
		return st
	}
	return s.ix.StatsOf(terms)
}

// scoped is one index of a search and how its hits render.
type scoped struct {
	ix    *index.Index
	inbox bool
}

// indexes are the indexes scope searches, wiki first.
func (s *Store) indexes(scope string) []scoped {
	switch scope {
	case search.ScopeInbox:
		return []scoped{{s.inbox.ix, true}}
	case search.ScopeAll:
		return []scoped{{s.ix, false}, {s.inbox.ix, true}}
	}
	return []scoped{{s.ix, false}}
}

// rank ranks q over its scope with stats (nil: the wing's own over the
// scope), returning the best index hits, each with its index, and the
// number of matching notes. It stops with ctx's error when ctx ends.
func (s *Store) rank(ctx context.Context, q search.Query, stats *search.Stats) ([]scopedHit, int, error) {
	if err := s.checkOpen(); err != nil {
		return nil, 0, err
	}
	if stats == nil && q.Scope == search.ScopeAll {
		st := s.TermStats(q.Terms, q.Scope)
		stats = &st
	}
	iopt, err := s.indexOptions(SearchOptions{Hall: q.Hall, Limit: q.Limit, Stats: stats})
	if err != nil {
		return nil, 0, err
	}
	var hits []scopedHit
	total := 0
	for _, sc := range s.indexes(q.Scope) {
		opt := iopt
		if sc.inbox && q.Hall != "" {
			opt.Filter = s.inboxHallFilter(q.Hall)
		}
		r, err := sc.ix.QueryTermsContext(ctx, q.Terms, opt)
		if err != nil {
			return nil, 0, fmt.Errorf("store: %w", err)
		}
		total += r.Total
		for _, h := range r.Hits {
			hits = append(hits, scopedHit{h, sc.inbox})
		}
	}
	if len(s.indexes(q.Scope)) > 1 {
		sortHits(hits)
		hits = hits[:min(len(hits), max(q.Limit, 1))]
	}
	return hits, total, nil
}

// scopedHit is an index hit and whether it is the inbox's.
type scopedHit struct {
	index.Hit
	inbox bool
}

func sortHits(hits []scopedHit) {
	less := func(a, b scopedHit) bool {
		return search.Ranked{Key: a.ID, Score: a.Score}.Less(search.Ranked{Key: b.ID, Score: b.Score})
	}
	for i := 1; i < len(hits); i++ { // few hits: two sorted runs of at most limit
		for j := i; j > 0 && less(hits[j], hits[j-1]); j-- {
			hits[j], hits[j-1] = hits[j-1], hits[j]
		}
	}
}

// inboxHallFilter admits the inbox notes whose suggested hall is hall.
func (s *Store) inboxHallFilter(hall string) func(string) bool {
	s.inbox.mu.Lock()
	admit := map[string]bool{}
	for name, f := range s.inbox.files {
		if f.hall == hall {
			admit[brain.InboxPath(s.wing, name)] = true
		}
	}
	s.inbox.mu.Unlock()
	return func(path string) bool { return admit[path] }
}

// RankQuery is the rank step of a search: the keys (note ids, or inbox
// paths) and scores of the best notes for q, scored with stats (nil: the
// wing's own), and the number of matching notes, from the indexes alone;
// and the best render of them rendered, from the same ranking.
func (s *Store) RankQuery(ctx context.Context, q search.Query, stats *search.Stats, render int) ([]search.Ranked, int, []search.Hit, error) {
	hits, total, err := s.rank(ctx, q, stats)
	if err != nil {
		return nil, 0, nil, err
	}
	out := make([]search.Ranked, len(hits))
	for i, h := range hits {
		out[i] = search.Ranked{Key: h.ID, Score: h.Score}
	}
	if render <= 0 {
		return out, total, nil, nil
	}
	rendered, err := s.renderScoped(ctx, hits[:min(render, len(hits))])
	return out, total, rendered, err
}

// FetchHits renders the hits of keys for q, in that order, exactly as
// QueryHits renders them (scored with stats, the same bits RankQuery gave
// them); keys that are not the wing's, no longer indexed or no longer
// matching are left out.
func (s *Store) FetchHits(ctx context.Context, q search.Query, keys []string, stats *search.Stats) ([]search.Hit, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if stats == nil && q.Scope == search.ScopeAll {
		st := s.TermStats(q.Terms, q.Scope)
		stats = &st
	}
	opt := index.Options{Stats: stats}
	var wiki, inbox []string
	for _, k := range keys {
		if strings.HasPrefix(k, brain.TopInbox+"/") {
			inbox = append(inbox, k)
		} else {
			wiki = append(wiki, k)
		}
	}
	byKey := map[string]scopedHit{}
	for _, h := range s.ix.ScoreTerms(q.Terms, wiki, opt) {
		byKey[h.ID] = scopedHit{h, false}
	}
	for _, h := range s.inbox.ix.ScoreTerms(q.Terms, inbox, opt) {
		byKey[h.ID] = scopedHit{h, true}
	}
	hits := make([]scopedHit, 0, len(byKey))
	for _, k := range keys {
		if h, ok := byKey[k]; ok {
			hits = append(hits, h)
		}
	}
	return s.renderScoped(ctx, hits)
}

// QueryHits answers brain_query on this wing: the best hits of q, rendered,
// and the number of matching notes.
func (s *Store) QueryHits(ctx context.Context, q search.Query) (search.Result, error) {
	hits, total, err := s.rank(ctx, q, nil)
	if err != nil {
		return search.Result{}, err
	}
	rendered, err := s.renderScoped(ctx, hits)
	return search.Result{Hits: rendered, Total: int64(total)}, err
}

// renderScoped renders index hits of either index, in order, leaving out
// the ones whose files went.
func (s *Store) renderScoped(ctx context.Context, hits []scopedHit) ([]search.Hit, error) {
	var wiki []index.Hit
	for _, h := range hits {
		if !h.inbox {
			wiki = append(wiki, h.Hit)
		}
	}
	rendered, err := s.render(ctx, wiki, search.SnippetRunes)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]Hit, len(rendered))
	for _, h := range rendered {
		byID[h.ID] = h
	}
	out := make([]search.Hit, 0, len(hits))
	for _, h := range hits {
		if h.inbox {
			if hit, ok := s.renderInboxHit(ctx, h.Hit, search.SnippetRunes); ok {
				out = append(out, hit)
			}
			continue
		}
		if r, ok := byID[h.ID]; ok {
			out = append(out, s.searchHit(r))
		}
	}
	return out, nil
}

func (s *Store) searchHit(h Hit) search.Hit {
	return search.Hit{ID: h.ID, Wing: s.wing, Hall: h.Hall, Title: h.Title, Score: h.Score, Snippet: h.Snippet, Path: h.Path, ContentHash: h.Hash,
		Flags: injection.Flags(h.Flags)}
}
