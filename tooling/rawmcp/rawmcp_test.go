package rawmcp_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
	"github.com/brainstem/brainstem/tooling/rawmcp"
)

// TestCallBothEras: against a running dev stack, a call succeeds under
// either era and returns the tool's answer; a tool error, an unknown tool
// and a refused token are ErrAnswer.
func TestCallBothEras(t *testing.T) {
	env := devenvtest.Start(t, devenv.Config{})
	tok, _, err := env.Token("alice@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, hc := context.Background(), rawmcp.Pool(4)
	for _, session := range []bool{false, true} {
		c, err := rawmcp.New(ctx, hc, env.MCPURL, tok, session)
		if err != nil {
			t.Fatalf("session=%v: %v", session, err)
		}
		answer, err := c.Call(ctx, "brain_wings", []byte(`{}`))
		if err != nil || !strings.Contains(string(answer), `payments`) {
			t.Fatalf("session=%v: brain_wings: %v %s", session, err, answer)
		}
		for _, tc := range []struct{ tool, args string }{
			{"brain_get", `{"id":"payments/decisions/no-such-note"}`},
			{"brain_nope", `{}`},
		} {
			if _, err := c.Call(ctx, tc.tool, []byte(tc.args)); !errors.Is(err, rawmcp.ErrAnswer) {
				t.Errorf("session=%v: %s answered %v, want ErrAnswer", session, tc.tool, err)
			}
		}
	}
	bad, err := rawmcp.New(ctx, hc, env.MCPURL, "not-a-token", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Call(ctx, "brain_wings", []byte(`{}`)); !errors.Is(err, rawmcp.ErrAnswer) {
		t.Errorf("a refused token answered %v, want ErrAnswer", err)
	}
	if _, err := rawmcp.New(ctx, hc, env.MCPURL, "not-a-token", true); !errors.Is(err, rawmcp.ErrAnswer) {
		t.Errorf("initialize with a refused token: %v, want ErrAnswer", err)
	}
}
