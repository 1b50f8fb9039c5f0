package tools

import (
	"testing"

	"github.com/brainstem/brainstem/brain"
)

// TestAuthorMustBeCanonical: a write records its author, so the shard
// applies the email rule to the caller's email too, whatever transport
// built the Caller.
func TestAuthorMustBeCanonical(t *testing.T) {
	s, _, root := fixture(t)
	before := tree(t, root)
	for _, email := range []string{"\u212aate@example.com", "Will@Example.com", "will\n@example.com", " will@example.com", ""} {
		c := Caller{Email: email, Caps: writer.Caps}
		res, isErr := call(t, s, c, "brain_write", `{"title":"Authored","body":"b","hall":"facts"}`)
		if !isErr {
			t.Errorf("a write authored by %q succeeded: %s", email, res)
			continue
		}
		if code, _ := errCode(t, res); code != brain.CodeForbidden {
			t.Errorf("author %q: %s", email, res)
		}
	}
	if after := tree(t, root); after != before {
		t.Errorf("refused writes changed the brain:\n%s\n---\n%s", before, after)
	}
}
