package search

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

// FuzzFanoutMerge: decoding a search's arguments and matching a wing's
// rendered hits with the keys asked for never panic, every hit matched is
// one of the wing's, in the order asked, and the envelope is valid JSON
// keeping the hit bytes.
func FuzzFanoutMerge(f *testing.F) {
	f.Add([]byte(`{"query":"x","limit":2}`), "a/f/1\na/f/2", []byte(`{"id":"a/f/1","score":2}`), []byte(`{ "id":"a/f/2", "score":1 }`))
	f.Add([]byte(`{"query":"x","limit":1.5}`), "a/f/1", []byte(`{"id":"a/f/2"}`), []byte(`{}`))
	f.Add([]byte(`{}`), "", []byte(`1`), []byte(`"x"`))
	spec := Spec(NoLimits())
	f.Fuzz(func(t *testing.T, args []byte, keyList string, h1, h2 []byte) {
		if _, err := DecodeQuery(spec, args); err != nil {
			if _, ok := brain.As(err); !ok {
				t.Fatalf("DecodeQuery(%q) = %v, not a refusal", args, err)
			}
		}
		keys := strings.Split(keyList, "\n")
		if !json.Valid(h1) || !json.Valid(h2) {
			return
		}
		got := hitsByKey(keys, [][]byte{h1, h2})
		var hits [][]byte
		for _, k := range keys {
			if h, ok := got[k]; ok {
				if !bytes.Equal(h, h1) && !bytes.Equal(h, h2) {
					t.Fatalf("key %q matched %s, not a hit of the wing", k, h)
				}
				hits = append(hits, h)
			}
		}
		out := EnvelopeFor(Query{}, hits, 3, []string{"a"}, nil)
		if !json.Valid(out) {
			t.Fatalf("invalid envelope %s", out)
		}
		for _, h := range hits {
			if !bytes.Contains(out, h) {
				t.Fatalf("hit bytes %s not kept in %s", h, out)
			}
		}
	})
}
