package examples

import (
	"bytes"
	"context"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/check"
)

// TestPolicyMatrix loads the embedded development policies with the real
// parser and checks every cell of the access matrix in policies/README.md.
func TestPolicyMatrix(t *testing.T) {
	const (
		none   = brain.Caps(0)
		read   = brain.CapRead
		write  = brain.CapRead | brain.CapWrite
		curate = brain.CapRead | brain.CapWrite | brain.CapCurate
	)
	people := []string{"people-team"}
	tests := []struct {
		wing   string
		email  string
		groups []string
		want   brain.Caps
	}{
		{"platform", "alice@example.com", nil, curate},
		{"platform", "bob@example.com", nil, write},
		{"platform", "carol@example.com", people, read},
		{"platform", "carol@example.com", nil, read},
		{"platform", "dave@example.com", nil, none},
		{"platform", "ci-bot@clients.brainstem.invalid", nil, write},
		{"payments", "ci-bot@clients.brainstem.invalid", nil, none},
		{"people-ops", "ci-bot@clients.brainstem.invalid", nil, none},
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
// parser (stricter than brainstem check: the sample's key order and tags
// too) and checks the fields against the
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

// TestSampleBrainPassesCheck: `brainstem check` (package shard/check, the CI
// check of brain repositories) finds no problem in the sample brain, and
// the sample has the shape the demo relies on: three wings, every hall
// used in every wing, two or three inbox notes per wing (one without a
// suggested hall), a sessions/ directory per wing, and no generated
// _index.md committed.
func TestSampleBrainPassesCheck(t *testing.T) {
	rep, err := check.Brain(context.Background(), "brain", check.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		t.Errorf("%s: %s", p.Path, p.Message)
	}
	brain := Brain()
	nohall := 0
	for _, wing := range []string{"payments", "people-ops", "platform"} {
		for _, hall := range []string{"facts", "decisions", "failures", "hypotheses", "sources"} {
			if es, err := fs.ReadDir(brain, path.Join("wiki", wing, hall)); err != nil || len(es) == 0 {
				t.Errorf("wiki/%s/%s: hall unused in the sample (%v)", wing, hall, err)
			}
		}
		inbox, err := fs.ReadDir(brain, path.Join("inbox", wing))
		if err != nil || len(inbox) < 2 || len(inbox) > 3 {
			t.Errorf("inbox/%s: %d notes, want 2-3 (%v)", wing, len(inbox), err)
		}
		for _, e := range inbox {
			raw, _ := fs.ReadFile(brain, path.Join("inbox", wing, e.Name()))
			if !bytes.Contains(raw, []byte("\nhall: ")) {
				nohall++
			}
		}
		if fi, err := fs.Stat(brain, path.Join("sessions", wing)); err != nil || !fi.IsDir() {
			t.Errorf("sessions/%s: missing (keep it with a .gitkeep)", wing)
		}
		if _, err := fs.Stat(brain, path.Join("wiki", wing, "_index.md")); err == nil {
			t.Errorf("wiki/%s/_index.md is generated by the shard; do not commit it to the sample", wing)
		}
	}
	if nohall == 0 {
		t.Error("no inbox note without a hall (the sample shows that hall is optional there)")
	}
	if strings.Join(rep.Wings, ",") != "payments,people-ops,platform" {
		t.Errorf("wings %v", rep.Wings)
	}
}
