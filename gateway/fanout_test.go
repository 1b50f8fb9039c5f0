package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/search"
)

// TestQueryLimits: a cross-wing brain_query takes the limit a shard takes
// (search.DefaultLimit, at most search.MaxLimit), decoded with the search
// tool's own spec, so the gateway never accepts a limit every wing would
// then refuse, and refuses it in the words a wing would.
func TestQueryLimits(t *testing.T) {
	g := &Gateway{searchSpec: search.Spec(search.NoLimits())}
	tests := []struct {
		args string
		want int // 0: refused
	}{
		{`{"query":"x","scope":"wiki"}`, search.DefaultLimit},
		{`{"query":"x","limit":null,"scope":"wiki"}`, search.DefaultLimit},
		{`{"query":"x"}`, search.LegacyDefaultLimit}, // the predecessor's shape: its default
		{`{"query":"x","limit":null}`, search.LegacyDefaultLimit},
		{`{"query":"x","limit":1}`, 1},
		{fmt.Sprintf(`{"query":"x","limit":%d}`, search.MaxLimit), search.MaxLimit},
		{fmt.Sprintf(`{"query":"x","limit":%d}`, search.MaxLimit+1), 0},
		{`{"query":"x","limit":1000}`, 0},
		{`{"query":"x","limit":0}`, 0},
		{`{"query":"x","limit":-1}`, 0},
		{`{"query":"x","limit":2.5}`, 0},
		{`{"query":"x","limit":"5"}`, 0},
	}
	for _, tt := range tests {
		q, err := search.DecodeQuery(g.searchSpec, []byte(tt.args))
		switch {
		case tt.want == 0:
			e, ok := brain.As(err)
			if !ok || e.Code != brain.CodeInvalidArgument || !strings.Contains(e.Message, "limit") {
				t.Errorf("%s: %v, want invalid_argument naming the limit", tt.args, err)
			}
		case err != nil || q.Limit != tt.want:
			t.Errorf("%s: limit %d, %v; want %d", tt.args, q.Limit, err, tt.want)
		case q.Legacy != !strings.Contains(tt.args, "scope") || q.Legacy != (q.Scope == search.ScopeAll):
			t.Errorf("%s: legacy %v, scope %q: the predecessor's shape searches all, the tool's own the wiki", tt.args, q.Legacy, q.Scope)
		}
	}
}
