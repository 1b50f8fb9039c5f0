package search

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

func TestMerge(t *testing.T) {
	ranks := []WingRank{
		{Ranked: []Ranked{{"a/f/1", 3}, {"a/f/2", 1}}, Total: 5},
		{Ranked: []Ranked{{"b/f/1", 3}, {"b/f/2", 2}}, Total: 2},
		{Ranked: []Ranked{{"c/f/1", 9}}, Total: 1},
	}
	got := Merge(ranks, []bool{true, true, false}, 3)
	want := []Pick{{0, Ranked{"a/f/1", 3}}, {1, Ranked{"b/f/1", 3}}, {1, Ranked{"b/f/2", 2}}}
	if !slices.Equal(got, want) {
		t.Fatalf("Merge = %v, want %v (score, then key; unanswered left out; cut)", got, want)
	}
	if all := Merge(ranks, nil, 10); len(all) != 5 || all[0].Key != "c/f/1" {
		t.Fatalf("Merge of all = %v", all)
	}
}

func TestEnvelope(t *testing.T) {
	hits := [][]byte{[]byte(`{ "id":"a/f/1", "html":"<&>" }`), []byte(`{"id":"b/f/1"}`)}
	out := EnvelopeFor(Query{}, hits, 7, []string{"a", "b"}, []byte(`[{"wing":"c","code":"timeout","error":"e"}]`))
	want := `{"hits":[{ "id":"a/f/1", "html":"<&>" },{"id":"b/f/1"}],"total":7,"wings":["a","b"],"unavailable":[{"wing":"c","code":"timeout","error":"e"}]}`
	if string(out) != want || !json.Valid(out) {
		t.Fatalf("EnvelopeFor =\n%s\nwant\n%s", out, want)
	}
	if empty := EnvelopeFor(Query{}, nil, 0, nil, nil); string(empty) != `{"hits":[],"total":0,"wings":[],"unavailable":[]}` {
		t.Fatalf("empty envelope %s", empty)
	}
}

func TestReplica(t *testing.T) {
	r := NewReplica(2, 3)
	if _, _, ok := r.Lookup(0, []string{"a"}); ok {
		t.Fatal("an empty replica answered")
	}
	r.Put(0, 5, Stats{Docs: 10, TotalLength: 100, DocFreq: map[string]int64{"a": 2, "b": 0}})
	st, gen, ok := r.Lookup(0, []string{"b", "a"})
	if !ok || gen != 5 || st.Docs != 10 || st.DocFreq["a"] != 2 || st.DocFreq["b"] != 0 {
		t.Fatalf("Lookup = %+v %d %v", st, gen, ok)
	}
	if _, _, ok := r.Lookup(0, []string{"a", "c"}); ok {
		t.Fatal("a term the replica never held was answered")
	}
	if _, _, ok := r.Lookup(1, []string{"a"}); ok {
		t.Fatal("another wing's statistics were answered")
	}
	r.Put(0, 6, Stats{Docs: 11, DocFreq: map[string]int64{"c": 1}})
	if _, _, ok := r.Lookup(0, []string{"a"}); ok {
		t.Fatal("statistics of an older generation survived a new one")
	}
	r.Put(0, 6, Stats{Docs: 11, DocFreq: map[string]int64{"d": 1, "e": 1, "f": 1}})
	if _, _, ok := r.Lookup(0, []string{"c"}); ok {
		t.Fatal("the replica grew beyond its bound")
	}
	r.Put(1, 0, Stats{Docs: 1, DocFreq: map[string]int64{"a": 1}})
	if _, _, ok := r.Lookup(1, []string{"a"}); ok {
		t.Fatal("generation 0 (unknown) was recorded")
	}
}

func TestQueryAndCheck(t *testing.T) {
	q := (&Args{Query: "Retry the retries, RETRY budget", Hall: "facts", Limit: 4}).Tokenized()
	if !slices.Equal(q.Terms, []string{"retry", "retries", "budget"}) || q.Tokens != 4 || q.Hall != "facts" || q.Limit != 4 {
		t.Fatalf("Tokenized = %+v", q)
	}
	lim := Limits{MaxQueryBytes: 20, MaxQueryTerms: 3}
	for _, tc := range []struct {
		text string
		want string
	}{
		{"short words", ""},
		{strings.Repeat("x", 21), "21 bytes, over the 20-byte limit"},
		{"a1 b2 c3 d4", "4 searchable words, the limit is 3"},
	} {
		err := Check((&Args{Query: tc.text}).Tokenized(), lim)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.text, err)
			}
			continue
		}
		if e, ok := brain.As(err); !ok || e.Code != brain.CodeTooLarge || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%q: %v, want too_large %q", tc.text, err, tc.want)
		}
	}
	if err := Check((&Args{Query: strings.Repeat("word ", 500)}).Tokenized(), NoLimits()); err != nil {
		t.Errorf("NoLimits refused: %v", err)
	}
	if err := Spec(DefaultLimits()).Validate(); err != nil {
		t.Fatal(err)
	}
}
