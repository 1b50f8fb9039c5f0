package gateway

import (
	"strings"
	"testing"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
)

// TestRouteWingFile: a path of a file in a wing's own directory
// (wiki/<wing>/_index.md and the like) reaches that wing's shard, which
// answers for it as it would if called directly; it is never read as a
// note id of a wing called "wiki" (issue 34: brain_get
// {"path":"wiki/platform/_index.md"} answered `no wing "wiki"`). A real
// note id of the shape wiki/<hall>/<slug> still names the wing "wiki".
func TestRouteWingFile(t *testing.T) {
	e := newEnv(t, []string{"platform", "payments"}, map[string]auth.Policy{"platform": policyOpen, "payments": policyOpen})
	alice := e.client(t, e.idp.token(t, "alice@example.com"), false)
	for _, tc := range []struct {
		args, wing string
	}{
		{`{"path":"wiki/platform/_index.md"}`, "platform"},
		{`{"id":"wiki/platform/_index.md"}`, "platform"},
		{`{"path":"/wiki/platform/_index.md"}`, "platform"},
		{`{"path":"wiki/payments/_index"}`, "payments"},
		{`{"path":"wiki/facts/x.md"}`, ""}, // the note facts/x of a wing called wiki: none here
	} {
		t.Run(tc.args, func(t *testing.T) {
			before := map[string]int64{}
			for name, w := range e.wings {
				before[name] = w.toolCount("brain_get")
			}
			text, isErr := call(t, alice, "brain_get", tc.args)
			for name, w := range e.wings {
				if asked := w.toolCount("brain_get") != before[name]; asked != (name == tc.wing) {
					t.Errorf("wing %s asked: %v, want only wing %q asked", name, asked, tc.wing)
				}
			}
			if !isErr {
				t.Fatalf("an answer from a test shard that holds no such note: %s", text)
			}
			code, msg, _ := brain.DecodeError([]byte(text))
			if tc.wing == "" {
				if code != brain.CodeUnknownWing || !strings.Contains(msg, `no wing "wiki"`) {
					t.Errorf("%s: %s, want unknown_wing naming the wing wiki", tc.args, text)
				}
				return
			}
			// The shard's own answer (the test shard's not_found), not the
			// gateway's refusal of a wing "wiki".
			if code != brain.CodeNotFound || strings.Contains(msg, `"wiki"`) {
				t.Errorf("%s: %s, want wing %s's own answer", tc.args, text, tc.wing)
			}
		})
	}
}
