package brain

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestQueryShapes pins the JSON of brain_query results and of the rank
// step, field by field and in order: the gateway reads them from shards of
// any version.
func TestQueryShapes(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{Hit{ID: "p/facts/x", Wing: "p", Hall: "facts", Title: "X", Score: 1.5, Snippet: "s", Path: "wiki/p/facts/x.md", ContentHash: "h"},
			`{"id":"p/facts/x","wing":"p","hall":"facts","title":"X","score":1.5,"snippet":"s","path":"wiki/p/facts/x.md","content_hash":"h"}`},
		{RankResult{Ranked: []HitKey{{"p/facts/x", 2}}, Total: 7}, `{"ranked":[{"id":"p/facts/x","score":2}],"total":7}`},
		{RankResult{Ranked: []HitKey{}, Total: 0}, `{"ranked":[],"total":0}`},
		{QueryResult{Hits: []Hit{}, Total: 3}, `{"hits":[],"total":3}`},
		{FetchResult{Hits: []Hit{}}, `{"hits":[]}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.want {
			t.Errorf("%T = %s, %v; want %s", tt.v, b, err, tt.want)
		}
	}
	// An empty rank answer is told from a whole result by "ranked" alone.
	var r RankResult
	if err := json.Unmarshal([]byte(`{"ranked":[],"total":0}`), &r); err != nil || r.Ranked == nil {
		t.Fatalf("empty ranked decodes to nil: %v", err)
	}
	var whole RankResult
	if err := json.Unmarshal([]byte(`{"hits":[],"total":0}`), &whole); err != nil || whole.Ranked != nil {
		t.Fatalf("a whole result decodes with ranked: %v", err)
	}
}

func TestHitKeyOrder(t *testing.T) {
	keys := []HitKey{{"b", 1}, {"a", 1}, {"c", 3}, {"a", 0.5}}
	slices.SortFunc(keys, func(a, b HitKey) int {
		if a.Less(b) {
			return -1
		}
		if b.Less(a) {
			return 1
		}
		return 0
	})
	want := []HitKey{{"c", 3}, {"a", 1}, {"b", 1}, {"a", 0.5}}
	if !slices.Equal(keys, want) {
		t.Fatalf("order = %v, want %v", keys, want)
	}
	if QueryDefaultLimit < 1 || QueryDefaultLimit > QueryMaxLimit {
		t.Fatalf("default limit %d outside 1..%d", QueryDefaultLimit, QueryMaxLimit)
	}
}
