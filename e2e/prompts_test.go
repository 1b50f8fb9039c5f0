package e2e

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

func getPrompt(ctx context.Context, c *client.Client, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	req := mcp.GetPromptRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	return c.GetPrompt(ctx, req)
}

func promptText(res *mcp.GetPromptResult) string {
	var b strings.Builder
	for _, m := range res.Messages {
		if tc, ok := m.Content.(mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String()
}

// TestPrompts: on each protocol revision, the shards' prompts are listed
// to whoever holds their capability in a wing (bob curates nowhere: no
// review_inbox), prompts/get answers messages naming the tools to call
// with the caller's arguments in them, and bad arguments are refused as
// invalid params with the tool arguments' messages.
func TestPrompts(t *testing.T) {
	env := startResourcesEnv(t)
	for _, version := range protocolVersions {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			alice := versionClient(t, env, "alice@example.com", version)
			bob := versionClient(t, env, "bob@example.com", version)
			names := func(c *client.Client) []string {
				res, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, p := range res.Prompts {
					out = append(out, p.Name)
					if p.Description == "" || p.Title == "" {
						t.Errorf("prompt %s: title %q, description %q", p.Name, p.Title, p.Description)
					}
				}
				return out
			}
			if got := names(alice); !slices.Equal(got, []string{"capture_learnings", "review_inbox", "search_before_task"}) {
				t.Errorf("alice's prompts: %v", got)
			}
			if got := names(bob); !slices.Equal(got, []string{"capture_learnings", "search_before_task"}) {
				t.Errorf("bob's prompts: %v (he curates no wing)", got)
			}

			res, err := getPrompt(ctx, bob, "search_before_task", map[string]string{"task": `Add a "PSP" <retry>`})
			if err != nil {
				t.Fatal(err)
			}
			if txt := promptText(res); !strings.Contains(txt, `brain_query`) || !strings.Contains(txt, `"Add a \"PSP\" <retry>"`) || strings.Contains(txt, "Search wing") {
				t.Errorf("search_before_task: %s", txt)
			}
			res, err = getPrompt(ctx, bob, "search_before_task", map[string]string{"task": "x", "wing": "payments"})
			if err != nil || !strings.Contains(promptText(res), `"wing": "payments"`) {
				t.Errorf("search_before_task in payments: %v %v", res, err)
			}
			res, err = getPrompt(ctx, alice, "review_inbox", map[string]string{"wing": "people-ops", "limit": "10"})
			if err != nil {
				t.Fatal(err)
			}
			if txt := promptText(res); !strings.Contains(txt, `brain_pending with {"wing": "people-ops"}`) || !strings.Contains(txt, "brain_promote") || !strings.Contains(txt, "at most \"10\"") {
				t.Errorf("review_inbox: %s", txt)
			}
			res, err = getPrompt(ctx, bob, "capture_learnings", map[string]string{"wing": "platform", "session": "s-1"})
			if err != nil || !strings.Contains(promptText(res), `"inbox": true`) || !strings.Contains(promptText(res), `"session": "s-1"`) {
				t.Errorf("capture_learnings: %v %v", res, err)
			}

			for _, c := range []struct {
				who        *client.Client
				name       string
				args       map[string]string
				wantInText string
			}{
				{alice, "search_before_task", nil, "task is required"},
				{alice, "search_before_task", map[string]string{"task": strings.Repeat("x", 5000)}, "over the 4096-byte limit"},
				{alice, "search_before_task", map[string]string{"task": "x", "colour": "red"}, `unknown argument "colour"`},
				{alice, "review_inbox", map[string]string{"wing": "payments", "limit": "7"}, "limit must be one of"},
				{alice, "review_inbox", map[string]string{}, "wing is required"},
				{alice, "capture_learnings", map[string]string{"wing": "payments", "session": "../x"}, "session"},
				{bob, "capture_learnings", map[string]string{"wing": "people-ops"}, `no wing "people-ops" that you can reach`},
				{bob, "capture_learnings", map[string]string{"wing": "payments"}, "write capability"},
				{bob, "review_inbox", map[string]string{"wing": "platform"}, "not found"},
				{alice, "no_such_prompt", nil, "not found"},
			} {
				_, err := getPrompt(ctx, c.who, c.name, c.args)
				if !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), c.wantInText) {
					t.Errorf("%s %v: %v, want invalid params saying %q", c.name, c.args, err, c.wantInText)
				}
			}
		})
	}
}
