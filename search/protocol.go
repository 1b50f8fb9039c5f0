package search

import (
	"context"

	"github.com/brainstem/brainstem/brain"
)

// A search across wings takes one to three round trips, every wing in
// parallel (docs/protocol.md):
//
//	Stats  terms            → the wing's statistics of the terms and its generation
//	Rank   query, global    → the best keys and scores under the global statistics
//	       statistics,        and the number of matching notes, with its best Render
//	       generation,        hits rendered; or Stale, with the wing's fresh
//	       Render             statistics, when the wing changed since the generation
//	                          the gateway assumed
//	Fetch  query, keys,     → the hits of those keys only, rendered: the final hits
//	       global statistics  a wing holds beyond the ones it rendered ahead
//
// Render is the wing's expected share of the final hits plus one, so most
// searches need no Fetch: a few hits are rendered that the merge throws
// away, against a round trip saved.
// The gateway skips Stats while its Replica holds every wing's statistics
// of the query's terms at the wing's current generation: a generation
// number, which every answer carries, changes whenever the wing's index
// does, so the statistics a Rank is scored with are those of the wings as
// they are, and the rankings stay exactly those of one union index.

// StatsRequest asks a wing for its statistics of some terms.
type StatsRequest struct {
	Terms []string
	Scope string
}

// StatsResponse is a wing's statistics and the generation they are of.
type StatsResponse struct {
	Stats      Stats
	Generation uint64
}

// RankRequest asks a wing to rank its notes for a query with the global
// statistics, assuming the wing is at Generation (0: whatever it is at).
type RankRequest struct {
	Query      Query
	Stats      *Stats // nil: the wing's own
	Generation uint64
	Render     int // how many of its best hits to render along (at most Query.Limit)
}

// RankResponse is a wing's ranking. Stale says the wing's generation is no
// longer the request's: nothing was ranked, and Stats are the wing's fresh
// statistics of the terms, at Generation. Refused carries a tool error
// envelope ({"error":…}) when the wing refuses the query (its limits).
type RankResponse struct {
	Generation uint64
	Stale      bool
	Stats      *Stats
	Ranked     []Ranked
	Total      int64
	Refused    []byte
	// Hits are the rendered hits of the first Render ranked keys that still
	// exist, in rank order (as Fetch renders them).
	Hits [][]byte
}

// FetchRequest asks a wing to render the hits of some keys for a query,
// scored with the global statistics.
type FetchRequest struct {
	Query Query
	Keys  []string
	Stats *Stats
}

// FetchResponse holds the hits of the requested keys that still exist and
// match, in the order asked, each rendered as a result carries it.
type FetchResponse struct {
	Hits [][]byte
}

// Source is what a wing's store offers a search.
type Source interface {
	// Generation changes whenever the index does (a write, an outside
	// edit, a restart).
	Generation() uint64
	TermStats(terms []string, scope string) Stats
	// RankQuery ranks, and renders the best render hits from the same
	// ranking (no second scoring).
	RankQuery(ctx context.Context, q Query, stats *Stats, render int) ([]Ranked, int, []Hit, error)
	FetchHits(ctx context.Context, q Query, keys []string, stats *Stats) ([]Hit, error)
}

// ServeStats answers a Stats request.
func ServeStats(src Source, req *StatsRequest) *StatsResponse {
	gen := src.Generation()
	return &StatsResponse{Stats: src.TermStats(req.Terms, req.Scope), Generation: gen}
}

// ServeRank answers a Rank request: refused when the query breaks the
// wing's limits, stale when the wing is no longer at the request's
// generation, else ranked.
func ServeRank(ctx context.Context, src Source, lim Limits, req *RankRequest) (*RankResponse, error) {
	if err := Check(req.Query, lim); err != nil {
		e, _ := brain.As(err)
		return &RankResponse{Refused: brain.EncodeError(e.Code, e.Message)}, nil
	}
	gen := src.Generation()
	if req.Generation != 0 && req.Generation != gen {
		st := src.TermStats(req.Query.Terms, req.Query.Scope)
		return &RankResponse{Generation: gen, Stale: true, Stats: &st}, nil
	}
	ranked, total, hits, err := src.RankQuery(ctx, req.Query, req.Stats, min(req.Render, req.Query.Limit))
	if err != nil {
		return nil, err
	}
	return &RankResponse{Generation: gen, Ranked: ranked, Total: int64(total), Hits: renderAll(hits)}, nil
}

func renderAll(hits []Hit) [][]byte {
	if len(hits) == 0 {
		return nil
	}
	out := make([][]byte, len(hits))
	for i, h := range hits {
		out[i] = RenderHit(h)
	}
	return out
}

// ServeFetch answers a Fetch request, rendering each hit of wing.
func ServeFetch(ctx context.Context, src Source, req *FetchRequest) (*FetchResponse, error) {
	hits, err := src.FetchHits(ctx, req.Query, req.Keys, req.Stats)
	if err != nil {
		return nil, err
	}
	return &FetchResponse{Hits: renderAll(hits)}, nil
}
