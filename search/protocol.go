package search

import (
	"context"
	"fmt"

	"github.com/brainstem/brainstem/brain"
)

// A search across wings takes two or three round trips, every wing in
// parallel (docs/protocol.md):
//
//	Stats  terms            → the wing's statistics of the terms and its generation
//	Rank   query, global    → the best keys and scores under the global statistics,
//	       statistics,        from the index alone, and the number of matching notes;
//	       generations        or Stale, with the wing's fresh statistics, when the
//	                          wing changed since the generation the gateway assumed
//	Fetch  query, keys,     → the hits of those keys only, rendered
//	       global statistics
//
// The gateway skips Stats while its Replica holds every wing's statistics
// of the query's terms at the wing's current generation: a generation
// number, which every answer carries, changes whenever the wing's index
// does, so the statistics a Rank is scored with are those of the wings as
// they are, and the rankings stay exactly those of one union index.

// StatsRequest asks a wing for its statistics of some terms.
type StatsRequest struct {
	Terms []string
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
	TermStats(terms []string) Stats
	RankQuery(q Query, stats *Stats) ([]Ranked, int, error)
	FetchHits(ctx context.Context, q Query, keys []string, stats *Stats) ([]Hit, error)
}

// ServeStats answers a Stats request.
func ServeStats(src Source, req *StatsRequest) *StatsResponse {
	gen := src.Generation()
	return &StatsResponse{Stats: src.TermStats(req.Terms), Generation: gen}
}

// ServeRank answers a Rank request: refused when the query breaks the
// wing's limits, stale when the wing is no longer at the request's
// generation, else ranked.
func ServeRank(src Source, lim Limits, req *RankRequest) (*RankResponse, error) {
	if err := Check(req.Query, lim); err != nil {
		e, _ := brain.As(err)
		return &RankResponse{Refused: brain.EncodeError(e.Code, e.Message)}, nil
	}
	gen := src.Generation()
	if req.Generation != 0 && req.Generation != gen {
		st := src.TermStats(req.Query.Terms)
		return &RankResponse{Generation: gen, Stale: true, Stats: &st}, nil
	}
	ranked, total, err := src.RankQuery(req.Query, req.Stats)
	if err != nil {
		return nil, err
	}
	return &RankResponse{Generation: gen, Ranked: ranked, Total: int64(total)}, nil
}

// ServeFetch answers a Fetch request, rendering each hit of wing.
func ServeFetch(ctx context.Context, src Source, req *FetchRequest) (*FetchResponse, error) {
	hits, err := src.FetchHits(ctx, req.Query, req.Keys, req.Stats)
	if err != nil {
		return nil, err
	}
	out := &FetchResponse{Hits: make([][]byte, len(hits))}
	for i, h := range hits {
		b, err := RenderHit(h)
		if err != nil {
			return nil, fmt.Errorf("search: render hit %s: %w", h.Path, err)
		}
		out.Hits[i] = b
	}
	return out, nil
}
