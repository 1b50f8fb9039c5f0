package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCreateExtraKeys: a new note carries the caller's own frontmatter
// keys after the store's, in order; a key the store writes is refused and
// nothing is written.
func TestCreateExtraKeys(t *testing.T) {
	s, root := newStore(t)
	n, err := s.Create(t.Context(), NewNote{Title: "Extra", Body: "b\n", Inbox: true, By: "ann@example.com",
		Extra: []Field{{Key: "type", Value: "incident"}, {Key: "refs", IsList: true, List: []string{"a", "b"}}}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(n.Path)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(raw), "created_at: "+n.Get(KeyCreatedAt)+"\ntype: incident\nrefs: [a, b]\n---\nb\n") {
		t.Errorf("the note:\n%s", raw)
	}
	for _, k := range []string{KeyCreatedBy, KeyWing, KeySupersedes} {
		_, err := s.Create(t.Context(), NewNote{Title: "Spoof " + k, Body: "b\n", Inbox: true, By: "ann@example.com", Extra: []Field{{Key: k, Value: "x"}}})
		if !errors.Is(err, ErrInvalid) || !OwnKey(k) {
			t.Errorf("extra key %s: %v", k, err)
		}
	}
	if OwnKey("type") {
		t.Error("type is not the store's")
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "inbox", s.Wing())); len(entries) != 1 {
		t.Errorf("the refusals wrote: %d inbox files", len(entries))
	}
}
