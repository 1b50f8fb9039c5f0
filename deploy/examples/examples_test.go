package examples

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/brainstem/brainstem/auth"
)

// TestPolicyMatrix loads the embedded development policies with the real
// parser and checks every cell of the access matrix in policies/README.md.
func TestPolicyMatrix(t *testing.T) {
	const (
		none   = auth.Caps(0)
		read   = auth.CapRead
		write  = auth.CapRead | auth.CapWrite
		curate = auth.CapRead | auth.CapWrite | auth.CapCurate
	)
	people := []string{"people-team"}
	tests := []struct {
		wing   string
		email  string
		groups []string
		want   auth.Caps
	}{
		{"platform", "alice@example.com", nil, curate},
		{"platform", "bob@example.com", nil, write},
		{"platform", "carol@example.com", people, read},
		{"platform", "carol@example.com", nil, read},
		{"platform", "dave@example.com", nil, none},
		{"payments", "alice@example.com", nil, curate},
		{"payments", " Alice@Example.COM ", nil, curate},
		{"payments", "bob@example.com", nil, read},
		{"payments", "carol@example.com", people, none},
		{"payments", "dave@example.com", people, none},
		{"people-ops", "alice@example.com", nil, curate},
		{"people-ops", "bob@example.com", nil, none},
		{"people-ops", "carol@example.com", people, curate},
		{"people-ops", "carol@example.com", nil, none},
		{"people-ops", "dave@example.com", people, curate},
		{"people-ops", "dave@example.com", []string{"People-Team"}, none},
		{"people-ops", "mallory@example.org", nil, none},
	}
	policies := map[string]auth.Policy{}
	for _, wing := range []string{"platform", "payments", "people-ops"} {
		data, err := fs.ReadFile(Policies(), wing+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := auth.ParsePolicy(data)
		if err != nil {
			t.Fatalf("%s.yaml: %v", wing, err)
		}
		policies[wing] = p
	}
	for _, tt := range tests {
		if got := policies[tt.wing].Caps(tt.email, tt.groups); got != tt.want {
			t.Errorf("%s: Caps(%q, %v) = %s, want %s", tt.wing, tt.email, tt.groups, got, tt.want)
		}
	}
}

// TestPolicyFiles makes sure the policies directory holds one YAML file per
// sample wing and nothing else a loader could mistake for a wing.
func TestPolicyFiles(t *testing.T) {
	entries, err := fs.ReadDir(Policies(), ".")
	if err != nil {
		t.Fatal(err)
	}
	var yamls []string
	for _, e := range entries {
		switch {
		case strings.HasSuffix(e.Name(), ".yaml"):
			yamls = append(yamls, e.Name())
		case e.Name() == "README.md":
		default:
			t.Errorf("unexpected file policies/%s", e.Name())
		}
	}
	if want := "payments.yaml people-ops.yaml platform.yaml"; strings.Join(yamls, " ") != want {
		t.Errorf("policy files = %v, want %s", yamls, want)
	}
}

// note is the frontmatter every sample note carries.
type note struct {
	Title     string    `yaml:"title"`
	Wing      string    `yaml:"wing"`
	Hall      string    `yaml:"hall"`
	Tags      []string  `yaml:"tags"`
	CreatedBy string    `yaml:"created_by"`
	CreatedAt time.Time `yaml:"created_at"`
}

var (
	slugRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	linkRE = regexp.MustCompile(`\[\[([^\]|#]*)[^\]]*\]\]`)
	halls  = map[string]bool{"facts": true, "decisions": true, "failures": true, "hypotheses": true, "sources": true}
)

// TestSampleBrainYAML decodes every sample note's frontmatter with a real YAML
// parser (which check-brain.sh cannot do) and checks the fields against the
// path, the key order, and that every wikilink resolves.
func TestSampleBrainYAML(t *testing.T) {
	brain := Brain()
	wantOrder := []string{"title", "wing", "hall", "tags", "created_by", "created_at"}
	perWing := map[string]int{}
	tunnels := 0
	err := fs.WalkDir(brain, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		parts := strings.Split(p, "/")
		inbox := parts[0] == "inbox"
		if !(parts[0] == "wiki" && len(parts) == 4) && !(inbox && len(parts) == 3) {
			t.Errorf("%s: not in a valid place", p)
			return nil
		}
		slug := strings.TrimSuffix(parts[len(parts)-1], ".md")
		if !slugRE.MatchString(slug) || len(slug) > 96 {
			t.Errorf("%s: invalid slug %q", p, slug)
		}
		raw, err := fs.ReadFile(brain, p)
		if err != nil {
			return err
		}
		header, body, ok := splitFrontmatter(raw)
		if !ok {
			t.Errorf("%s: no frontmatter between --- lines", p)
			return nil
		}
		var n note
		var doc yaml.Node
		if err := yaml.Unmarshal(header, &n); err != nil {
			t.Errorf("%s: frontmatter is not valid YAML: %v", p, err)
			return nil
		}
		if err := yaml.Unmarshal(header, &doc); err != nil || len(doc.Content) != 1 {
			t.Errorf("%s: frontmatter is not one YAML mapping: %v", p, err)
			return nil
		}
		var keys []string
		for i := 0; i < len(doc.Content[0].Content); i += 2 {
			k := doc.Content[0].Content[i].Value
			for _, w := range wantOrder {
				if k == w {
					keys = append(keys, k)
				}
			}
		}
		want := wantOrder
		if inbox && n.Hall == "" {
			want = append(append([]string{}, wantOrder[:2]...), wantOrder[3:]...)
		}
		if strings.Join(keys, ",") != strings.Join(want, ",") {
			t.Errorf("%s: keys %v, want %v in that order", p, keys, want)
		}
		if n.Title == "" || len(n.Tags) == 0 || !strings.HasSuffix(n.CreatedBy, "@example.com") || n.CreatedAt.IsZero() {
			t.Errorf("%s: incomplete frontmatter %+v", p, n)
		}
		if n.Wing != parts[1] {
			t.Errorf("%s: wing %q does not match the path", p, n.Wing)
		}
		if inbox {
			if n.Hall != "" && !halls[n.Hall] {
				t.Errorf("%s: suggested hall %q is not a hall", p, n.Hall)
			}
		} else {
			perWing[n.Wing]++
			if n.Hall != parts[2] || !halls[n.Hall] {
				t.Errorf("%s: hall %q does not match the path", p, n.Hall)
			}
		}
		for _, m := range linkRE.FindAllSubmatch(body, -1) {
			target := string(m[1])
			if _, err := fs.Stat(brain, path.Join("wiki", target+".md")); err != nil {
				t.Errorf("%s: link [[%s]] does not resolve: %v", p, target, err)
			}
			if w, _, _ := strings.Cut(target, "/"); w != parts[1] {
				tunnels++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for w, c := range perWing {
		total += c
		if c < 18 {
			t.Errorf("wing %s has %d notes, want at least 18", w, c)
		}
	}
	if len(perWing) != 3 || total < 60 || total > 75 {
		t.Errorf("notes per wing %v (total %d), want 3 wings and 60-75 notes", perWing, total)
	}
	if tunnels < 10 {
		t.Errorf("%d tunnels, want at least 10", tunnels)
	}
}

// splitFrontmatter returns the YAML between a first line "---" and the next
// "---" line, and the rest of the file.
func splitFrontmatter(raw []byte) (header, body []byte, ok bool) {
	rest, found := bytes.CutPrefix(raw, []byte("---\n"))
	if !found {
		return nil, nil, false
	}
	if i := bytes.Index(rest, []byte("\n---\n")); i >= 0 {
		return rest[:i+1], rest[i+5:], true
	}
	return nil, nil, false
}

// TestCheckBrainScript runs deploy/examples/check-brain.sh: it must accept the
// sample brain and reject a small brain with a dangling link and a bad slug.
// (check-brain_test.sh covers every other defect the script claims to catch.)
func TestCheckBrainScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(bash, append([]string{"check-brain.sh"}, args...)...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if out, code := run(); code != 0 {
		t.Fatalf("check-brain.sh rejects the sample brain (exit %d):\n%s", code, out)
	}

	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	front := "---\ntitle: T\nwing: ops\nhall: facts\ntags: [x]\ncreated_by: a@example.com\ncreated_at: 2026-01-01T00:00:00Z\n---\n"
	write("wiki/ops/facts/good.md", front+"ok\n")
	if out, code := run(dir); code != 0 {
		t.Fatalf("check-brain.sh rejects a valid one-note brain (exit %d):\n%s", code, out)
	}
	write("wiki/ops/facts/Bad_Slug.md", front+"see [[ops/facts/missing]]\n")
	write("wiki/ops/facts/linker.md", front+"see [[ops/facts/missing]]\n")
	out, code := run(dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	var got []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "ERROR ") {
			got = append(got, line)
		}
	}
	sort.Strings(got)
	want := []string{
		"ERROR wiki/ops/facts/Bad_Slug.md: wiki file name must be <slug>.md with a valid slug",
		"ERROR wiki/ops/facts/linker.md: link [[ops/facts/missing]] points at a note that does not exist",
	}
	if len(got) != len(want) {
		t.Fatalf("errors:\n%s\nwant %d errors", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}
