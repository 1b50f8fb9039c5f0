package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/devenv/devenvtest"
)

// protocolVersions are the revisions the gateway serves; every resources
// and prompts test runs on each.
var protocolVersions = []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618}

// versionClient is an MCP client of the gateway speaking one revision.
func versionClient(t *testing.T, env *devenv.Env, email, version string) *client.Client {
	t.Helper()
	c := initialize(t, client.NewClient(mustTransport(t, env.MCPURL, token(t, env, email)), client.WithProtocolVersion(version)))
	if got := c.ProtocolVersion(); got != version {
		t.Fatalf("the client speaks %s, not %s", got, version)
	}
	return c
}

// resourcePage is the page size the resources tests run with: small, so
// that a listing takes several pages and pages end inside and at the end
// of a wing.
const resourcePage = 7

func startResourcesEnv(t *testing.T) *devenv.Env {
	return devenvtest.Start(t, devenv.Config{Gateway: func(c *config.Config) {
		c.Limits.CallsPerSecond, c.Limits.Burst = 1e6, 1e6
		c.Limits.ResourcesPageSize = resourcePage
	}})
}

// wikiURIs are the note URIs of the brain's curated notes in the wings
// given, sorted, read from the files.
func wikiURIs(t *testing.T, brainDir string, wings ...string) []string {
	t.Helper()
	var out []string
	for _, w := range wings {
		root := filepath.Join(brainDir, "wiki", w)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") || filepath.Base(p) == "_index.md" {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			out = append(out, "brain://"+w+"/"+strings.TrimSuffix(filepath.ToSlash(rel), ".md"))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// listAll pages through resources/list and returns the URIs in order, the
// number of pages, and the resources by URI.
func listAll(t *testing.T, c *client.Client) ([]string, int, map[string]mcp.Resource) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var uris []string
	byURI := map[string]mcp.Resource{}
	var cursor mcp.Cursor
	pages := 0
	for {
		req := mcp.ListResourcesRequest{}
		req.Params.Cursor = cursor
		res, err := c.ListResourcesByPage(ctx, req)
		if err != nil {
			t.Fatalf("resources/list page %d: %v", pages+1, err)
		}
		pages++
		if len(res.Resources) > resourcePage {
			t.Fatalf("page %d has %d resources, over the page size %d", pages, len(res.Resources), resourcePage)
		}
		for _, r := range res.Resources {
			if _, dup := byURI[r.URI]; dup {
				t.Fatalf("%s listed twice", r.URI)
			}
			if r.MIMEType != "text/markdown" || r.Name == "" || r.Title == "" {
				t.Errorf("%s: mimeType %q, name %q, title %q", r.URI, r.MIMEType, r.Name, r.Title)
			}
			byURI[r.URI] = r
			uris = append(uris, r.URI)
		}
		if res.NextCursor == "" {
			return uris, pages, byURI
		}
		if pages > 100 {
			t.Fatal("resources/list does not end")
		}
		cursor = res.NextCursor
	}
}

func readResource(ctx context.Context, c *client.Client, uri string) (*mcp.ReadResourceResult, error) {
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	return c.ReadResource(ctx, req)
}

// TestResources: on each protocol revision, alice (every wing) and bob (not
// people-ops) page through resources/list and get exactly the notes of
// the wings they can read, in id order; a resource reads as brain_get
// reads the note; bob's read of a people-ops note is answered exactly as
// a missing note is; bad URIs and cursors are refused as invalid params;
// the template is listed.
func TestResources(t *testing.T) {
	env := startResourcesEnv(t)
	all := wikiURIs(t, env.BrainDir, "payments", "people-ops", "platform")
	bobs := wikiURIs(t, env.BrainDir, "payments", "platform")
	const secret = "brain://people-ops/facts/leave-policy-summary"
	for _, version := range protocolVersions {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			alice := versionClient(t, env, "alice@example.com", version)
			bob := versionClient(t, env, "bob@example.com", version)

			got, pages, byURI := listAll(t, alice)
			if !slices.Equal(got, all) {
				t.Fatalf("alice lists %d resources, want the %d notes of every wing in id order:\n got %v\nwant %v", len(got), len(all), got, all)
			}
			if want := (len(all) + resourcePage - 1) / resourcePage; pages != want {
				t.Errorf("alice: %d pages, want %d", pages, want)
			}
			if r := byURI[secret]; r.Name != "people-ops/facts/leave-policy-summary" || r.Annotations == nil || r.Annotations.LastModified == "" {
				t.Errorf("%s listed as %+v", secret, r)
			}
			got, _, _ = listAll(t, bob)
			if !slices.Equal(got, bobs) {
				t.Fatalf("bob lists %v, want exactly the payments and platform notes %v", got, bobs)
			}

			// A read is brain_get's note.
			res, err := readResource(ctx, alice, secret)
			if err != nil {
				t.Fatalf("alice reads %s: %v", secret, err)
			}
			text, isErr := call(t, alice, "brain_get", `{"id":"people-ops/facts/leave-policy-summary"}`)
			var note struct {
				Body        string `json:"body"`
				ContentHash string `json:"content_hash"`
			}
			if isErr || json.Unmarshal([]byte(text), &note) != nil {
				t.Fatalf("brain_get: %s", text)
			}
			tc, ok := res.Contents[0].(mcp.TextResourceContents)
			if len(res.Contents) != 1 || !ok || tc.Text != note.Body || tc.URI != secret || tc.MIMEType != "text/markdown" || tc.Meta["brainstem/content_hash"] != note.ContentHash {
				t.Fatalf("resources/read %s = %+v, want the body and hash brain_get gives", secret, res.Contents)
			}

			// bob: a people-ops note is a missing note.
			_, errSecret := readResource(ctx, bob, secret)
			const missing = "brain://payments/facts/no-such-note"
			_, errMissing := readResource(ctx, bob, missing)
			if errSecret == nil || errMissing == nil {
				t.Fatalf("bob reads %s: %v; %s: %v", secret, errSecret, missing, errMissing)
			}
			wantKind := mcp.ErrResourceNotFound
			if version == mcp.ProtocolVersion20260728 {
				wantKind = mcp.ErrInvalidParams
			}
			if !errors.Is(errSecret, wantKind) || !errors.Is(errMissing, wantKind) {
				t.Errorf("bob's reads: %v / %v, want %v", errSecret, errMissing, wantKind)
			}
			if a, b := strings.ReplaceAll(errSecret.Error(), secret, "URI"), strings.ReplaceAll(errMissing.Error(), missing, "URI"); a != b {
				t.Errorf("bob can tell a people-ops note from a missing note:\n%s\n%s", a, b)
			}
			// ... and so is a note of a wing that does not exist.
			_, errNoWing := readResource(ctx, bob, "brain://no-such-wing/facts/x")
			if a, b := strings.ReplaceAll(errNoWing.Error(), "brain://no-such-wing/facts/x", "URI"), strings.ReplaceAll(errMissing.Error(), missing, "URI"); a != b {
				t.Errorf("a wing that does not exist answers otherwise:\n%s\n%s", a, b)
			}

			for _, bad := range []string{"brain://payments/facts", "https://example.com/x", "brain://payments/facts/../x", "brain://payments/Facts/x", "brain://payments/facts/x?y"} {
				_, err := readResource(ctx, alice, bad)
				if !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "brain://{wing}/{hall}/{slug}") && !strings.Contains(err.Error(), "resource URI") {
					t.Errorf("resources/read %q: %v, want invalid params naming the URI form", bad, err)
				}
			}
			req := mcp.ListResourcesRequest{}
			req.Params.Cursor = "bm90IGEgY3Vyc29y" // base64 of "not a cursor"
			if _, err := alice.ListResourcesByPage(ctx, req); !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "cursor") {
				t.Errorf("a forged cursor: %v, want invalid params", err)
			}

			tpl, err := alice.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
			if err != nil || len(tpl.ResourceTemplates) != 1 || tpl.ResourceTemplates[0].URITemplate.Template.Raw() != "brain://{wing}/{hall}/{slug}" {
				t.Fatalf("resources/templates/list: %+v, %v", tpl, err)
			}
		})
	}
}
