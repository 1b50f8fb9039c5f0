package helmtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyChart copies the chart under test into a temp dir and returns it.
func copyChart(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "brainstem")
	err := filepath.WalkDir(chartDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(chartDir, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// renderNotes renders templates/NOTES.txt. `helm template` never prints
// NOTES and `helm install --dry-run` needs a cluster, so the test copies the
// chart and adds one template that runs the unchanged NOTES.txt through
// helm's own `tpl` with the release's context, into a ConfigMap.
func renderNotes(t *testing.T, valuesFiles ...string) string {
	t.Helper()
	dir := copyChart(t)
	notes, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "notes-probe"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes-probe", "NOTES.txt"), notes, 0o644); err != nil {
		t.Fatal(err)
	}
	probe := `apiVersion: v1
kind: ConfigMap
metadata:
  name: notes-probe
data:
  notes: {{ tpl (.Files.Get "notes-probe/NOTES.txt") . | toJson }}
`
	if err := os.WriteFile(filepath.Join(dir, "templates", "zz-notes-probe.yaml"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"template", releaseName, dir, "--namespace", namespace, "--show-only", "templates/zz-notes-probe.yaml"}
	for _, f := range valuesFiles {
		args = append(args, "-f", f)
	}
	out, err := runHelm(args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(out)
	if err != nil || len(objs) != 1 {
		t.Fatalf("notes probe: %v (%d objects)", err, len(objs))
	}
	return digString(t, objs[0], "data", "notes")
}

// TestNotes: NOTES.txt prints the MCP URL and the join command for the
// public URL, and a rollout line per wing; with sign-in on, the redirect URI
// to register at the IdP and where the generated sign-in key lives.
func TestNotes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		values []string
		want   []string
	}{
		{"default", []string{defaultValues}, []string{
			"https://brain.acme.com/mcp\n",
			"brainstem join https://brain.acme.com\n",
			"statefulset/rel-brainstem-payments\n",
			"deployment/rel-brainstem-gateway\n",
		}},
		{"sign-in on", []string{defaultValues, valuesFile(t, oauthOverlay)}, []string{
			"claude mcp add --transport http brainstem https://brain.acme.com/mcp\n",
			"client brainstem must have this redirect URI:\n\n  https://brain.acme.com/oauth/callback\n",
			"the console in a browser, with the same sign-in: https://brain.acme.com/console/\n",
			"Secret rel-brainstem-gateway-oauth-signing;",
		}},
		{"a remote with a webhook", []string{defaultValues, valuesFile(t, `wings:
  - name: payments
    policy: {}
    remote: {enabled: true, url: "https://github.com/acme/brain.git", webhookSecret: {secretName: hook}, webhookIngress: {enabled: true, host: payments-hooks.acme.com}}
  - {name: legal, policy: {}, remote: {enabled: true, url: "git@github.com:acme/legal.git", branch: legal}}
  - {name: quiet, policy: {}}
`)}, []string{
			"Wing payments syncs with https://github.com/acme/brain.git (branch main). Its git host's push webhook:\n\n  https://payments-hooks.acme.com/remote/webhook  (content type application/json,\n  push events, the secret in Secret hook;",
			"Wing legal syncs with git@github.com:acme/legal.git (branch legal).\n",
		}},
		{"explicit public URL", []string{defaultValues, valuesFile(t, "publicURL: https://knowledge.acme.com/\ningress: {host: knowledge.acme.com}")}, []string{
			"https://knowledge.acme.com/mcp\n",
			"brainstem join https://knowledge.acme.com\n",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			notes := renderNotes(t, tc.values...)
			for _, w := range tc.want {
				if !strings.Contains(notes, w) {
					t.Errorf("NOTES lack %q:\n%s", w, notes)
				}
			}
			if strings.Contains(notes, "//mcp") {
				t.Errorf("NOTES print a double slash:\n%s", notes)
			}
		})
	}
}
