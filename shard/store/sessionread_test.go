package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSessionListAndRead: the wing's logs are listed newest first, paged
// by cursor, with their last entry's time and author; a log reads back
// line by line, paged by offset, a line that is not an entry (a hand edit,
// a torn tail) keeping its number with no entry.
func TestSessionListAndRead(t *testing.T) {
	s, root := newStore(t)
	ctx := t.Context()
	for i, name := range []string{"alpha", "beta", "gamma"} {
		for j := 0; j <= i; j++ {
			if _, _, err := s.AppendSession(ctx, name, fmt.Sprintf("u%d@example.com", j), json.RawMessage(fmt.Sprintf(`{"n":%d}`, j)), nil); err != nil {
				t.Fatal(err)
			}
		}
		mt := time.Date(2026, 11, 30, 9, i, 0, 0, time.UTC) // beta after alpha, gamma last
		if err := os.Chtimes(filepath.Join(root, "sessions", testWing, name+".jsonl"), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	page, next, err := s.ListSessions(ctx, "", 2)
	if err != nil || len(page) != 2 || page[0].Session != "gamma" || page[1].Session != "beta" || next == "" {
		t.Fatalf("first page %+v next %q (%v)", page, next, err)
	}
	if page[0].LastBy != "u2@example.com" || page[0].UpdatedAt == "" || page[0].Size == 0 {
		t.Fatalf("gamma's last entry: %+v", page[0])
	}
	rest, next2, err := s.ListSessions(ctx, next, 2)
	if err != nil || len(rest) != 1 || rest[0].Session != "alpha" || next2 != "" {
		t.Fatalf("second page %+v next %q (%v)", rest, next2, err)
	}
	if _, _, err := s.ListSessions(ctx, "not-a-cursor", 2); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad cursor: %v", err)
	}

	// A hand-edited line and a torn tail keep their line numbers.
	f, err := os.OpenFile(filepath.Join(root, "sessions", testWing, "gamma.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("not json\n{\"at\":\"x\",\"by\":\"y\",\"entry\":{\"cut")
	f.Close()
	entries, total, err := s.ReadSession(ctx, "gamma", 1, 10)
	if err != nil || total != 5 || len(entries) != 4 {
		t.Fatalf("read gamma from 1: %d entries of %d (%v)", len(entries), total, err)
	}
	if entries[0].Line != 2 || entries[0].By != "u1@example.com" || string(entries[0].Entry) != `{"n":1}` {
		t.Fatalf("line 2 = %+v", entries[0])
	}
	if entries[2].Line != 4 || entries[2].Entry != nil || entries[3].Line != 5 || entries[3].Entry != nil {
		t.Fatalf("lines 4 and 5 = %+v %+v", entries[2], entries[3])
	}
	if two, _, _ := s.ReadSession(ctx, "gamma", 0, 2); len(two) != 2 || two[1].Line != 2 {
		t.Fatalf("a page of two = %+v", two)
	}
	if _, _, err := s.ReadSession(ctx, "nope", 0, 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing log: %v", err)
	}
	if _, _, err := s.ReadSession(ctx, "../x", 0, 10); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad session: %v", err)
	}
}
