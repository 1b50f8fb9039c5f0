package brain

import (
	"errors"
	"strings"
	"testing"
)

func TestParseNoteURI(t *testing.T) {
	id, err := ParseNoteURI("brain://payments/facts/use-idempotency-keys")
	if err != nil || id != (ID{"payments", "facts", "use-idempotency-keys"}) || NoteURI(id) != "brain://payments/facts/use-idempotency-keys" {
		t.Fatalf("%+v %v", id, err)
	}
	for _, c := range []struct {
		uri  string
		want error
	}{
		{"brain://payments/facts", ErrBadURI},
		{"brain://payments/facts/x.md", ErrInvalidName},
		{"brain://payments/notes/x", ErrInvalidHall},
		{"brain://payments/facts/" + strings.Repeat("x", MaxURILen), ErrTooLong},
		{"http://payments/facts/x", ErrBadURI},
	} {
		_, err := ParseNoteURI(c.uri)
		if !errors.Is(err, ErrBadURI) || !errors.Is(err, c.want) {
			t.Errorf("ParseNoteURI(%.60q) = %v, want %v", c.uri, err, c.want)
		}
		if e, ok := As(err); !ok || e.Code != CodeInvalidArgument || e.Message == "" {
			t.Errorf("ParseNoteURI(%.60q): %#v is not an invalid_argument *Error", c.uri, err)
		}
	}
}

// FuzzParseNoteURI: a URI is accepted only if it is exactly the URI of a
// valid note id, and every refusal wraps ErrBadURI.
func FuzzParseNoteURI(f *testing.F) {
	for _, s := range []string{"brain://payments/facts/x", "brain://a/b/c", "brain://payments/facts/../x", "brain://payments/facts/x?y", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseNoteURI(s)
		if err != nil {
			if !errors.Is(err, ErrBadURI) {
				t.Fatalf("ParseNoteURI(%q): %v does not wrap ErrBadURI", s, err)
			}
			return
		}
		if NoteURI(id) != s {
			t.Fatalf("ParseNoteURI(%q) = %+v, whose URI is %q", s, id, NoteURI(id))
		}
		if back, err := ParseID(id.String()); err != nil || back != id {
			t.Fatalf("%q: id %+v does not parse back: %v", s, id, err)
		}
	})
}

// NoteURI returns the URI of the note id.
func NoteURI(id ID) string { return URIScheme + id.String() }
