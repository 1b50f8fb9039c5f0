package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// capture returns a hook that keeps the intent it is given, or refuses.
func capture(got *Intent, refuse error) Hook {
	return func(in Intent) error {
		*got = in
		return refuse
	}
}

func settled(t *testing.T, s *Store, m Mark) bool {
	t.Helper()
	ok, err := s.Settle(m)
	if err != nil {
		t.Fatalf("Settle(%+v): %v", m, err)
	}
	return ok
}

// TestHookAndSettle: every write hands its hook the mark of the change
// before making it, a refusing hook leaves everything as it was, and
// Settle tells from the disk whether the change landed — also for a
// created note updated since, and for a promotion whose inbox file was
// left behind (which Settle removes).
func TestHookAndSettle(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	var in Intent

	// Create: refused by the hook → nothing written, not settled.
	_, err := s.Create(ctx, NewNote{Title: "Budget", Body: "b", Hall: "facts", By: "ann@example.com", Hook: capture(&in, errors.New("no"))})
	if err == nil || in.Mark.Op != MarkCreate || in.Note == nil || in.Note.ID != "payments/facts/budget" {
		t.Fatalf("refused create: %v %+v", err, in)
	}
	if _, serr := os.Stat(filepath.Join(root, "wiki/payments/facts/budget.md")); serr == nil {
		t.Fatal("a refused create wrote the note")
	}
	if settled(t, s, in.Mark) {
		t.Fatal("a create that never happened is settled")
	}
	n, err := s.Create(ctx, NewNote{Title: "Budget", Body: "b", Hall: "facts", By: "ann@example.com", Hook: capture(&in, nil)})
	if err != nil || in.Mark.Hash != n.Hash || in.Note.Hash != n.Hash {
		t.Fatalf("create: %v mark %+v note %s", err, in.Mark, n.Hash)
	}
	created := in.Mark
	if !settled(t, s, created) {
		t.Fatal("a landed create is not settled")
	}
	// A mark survives JSON (journals keep it so).
	b, _ := json.Marshal(created)
	var back Mark
	if json.Unmarshal(b, &back) != nil || back != created {
		t.Fatalf("mark JSON round trip: %s", b)
	}

	// Update: the replace mark; the create mark still recognises the note.
	u, err := s.Update(ctx, Change{ID: n.ID, Body: "c", Reason: "r", By: "bob@example.com", Hook: capture(&in, nil)})
	if err != nil || in.Mark.Op != MarkReplace || in.Mark.Hash != u.Hash {
		t.Fatalf("update: %v %+v", err, in.Mark)
	}
	if !settled(t, s, in.Mark) || !settled(t, s, created) {
		t.Fatal("the update, or the create under it, is not settled")
	}
	stale := in.Mark
	if _, err := s.Update(ctx, Change{ID: n.ID, Body: "d", Reason: "r", By: "bob@example.com"}); err != nil {
		t.Fatal(err)
	}
	if settled(t, s, stale) {
		t.Fatal("a superseded replace mark is settled (the file has other bytes)")
	}
	// A create at the same path by someone else is not ours.
	other := created
	other.By = "eve@example.com"
	other.Hash = "00"
	if settled(t, s, other) {
		t.Fatal("another author's create is settled")
	}

	// Append: settled once the line is there.
	_, line, err := s.AppendSession(ctx, "s1", "ann@example.com", json.RawMessage(`{"a":1}`), capture(&in, nil))
	if err != nil || in.Mark.Op != MarkAppend || in.Line != line || line != 1 {
		t.Fatalf("append: %v %+v line %d", err, in, line)
	}
	if !settled(t, s, in.Mark) {
		t.Fatal("a landed append is not settled")
	}
	_, _, err = s.AppendSession(ctx, "s1", "ann@example.com", json.RawMessage(`{"a":2}`), capture(&in, errors.New("no")))
	if err == nil || settled(t, s, in.Mark) {
		t.Fatalf("a refused append: %v, settled %v", err, in.Mark)
	}

	// Promote: a crash between writing the wiki note and removing the
	// inbox file is finished by Settle.
	inbox := mustCreate(t, s, NewNote{Title: "Idea", Body: "i", Inbox: true})
	saved := readFile(t, root, inbox.Path)
	p, _, err := s.Promote(ctx, Promotion{Name: inbox.Name, Hall: "hypotheses", By: "cora@example.com", Hook: capture(&in, nil)})
	if err != nil || in.Mark.Remove != inbox.Path || in.Mark.Hash != p.Hash {
		t.Fatalf("promote: %v %+v", err, in.Mark)
	}
	writeFile(t, root, inbox.Path, string(saved)) // as if the removal never happened
	if !settled(t, s, in.Mark) {
		t.Fatal("a landed promotion is not settled")
	}
	if _, err := os.Stat(filepath.Join(root, inbox.Path)); err == nil {
		t.Fatal("Settle left the promoted inbox file")
	}

	// Marks outside the wing are refused.
	for _, m := range []Mark{{Op: MarkCreate, Path: "wiki/other/facts/x.md"}, {Op: MarkCreate, Path: "../x"}, {Op: "nope", Path: created.Path}} {
		if _, err := s.Settle(m); err == nil {
			t.Errorf("Settle(%+v) accepted", m)
		}
	}
}
