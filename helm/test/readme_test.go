package helmtest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite the values table of helm/brainstem/README.md")

// valueDoc is one documented key of values.yaml.
type valueDoc struct {
	key, def, desc string
}

// documentedValues walks values.yaml: a key whose head comment starts with
// "# --" is documented (its comment, up to the next key, is the description);
// an undocumented mapping is descended into; an undocumented leaf is an error.
func documentedValues(t *testing.T) []valueDoc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	var out []valueDoc
	var walk func(prefix string, m *yaml.Node)
	walk = func(prefix string, m *yaml.Node) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			key := prefix + k.Value
			if strings.ContainsAny(k.Value, "./") {
				key = prefix + "\"" + k.Value + "\""
			}
			desc, ok := docComment(k.HeadComment)
			switch {
			case ok:
				def, err := compactJSON(v)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				out = append(out, valueDoc{key, def, desc})
			case v.Kind == yaml.MappingNode && len(v.Content) > 0:
				walk(key+".", v)
			default:
				t.Errorf("values.yaml: %s has no `# --` comment", key)
			}
		}
	}
	walk("", root.Content[0])
	return out
}

// docComment extracts the description from a "# -- ..." head comment (the
// "# --" line and the comment lines after it, before a blank line).
func docComment(c string) (string, bool) {
	lines := strings.Split(c, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "# --") {
			continue
		}
		parts := []string{strings.TrimSpace(strings.TrimPrefix(l, "# --"))}
		for _, more := range lines[i+1:] {
			if !strings.HasPrefix(more, "#") {
				break
			}
			parts = append(parts, strings.TrimSpace(strings.TrimPrefix(more, "#")))
		}
		return strings.Join(parts, " "), true
	}
	return "", false
}

func compactJSON(n *yaml.Node) (string, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

const (
	readmeBegin = "<!-- values:begin (generated from values.yaml by `go test ./helm/test -run TestChartReadme -update`) -->\n"
	readmeEnd   = "<!-- values:end -->\n"
)

func valuesTable(docs []valueDoc) string {
	var b strings.Builder
	b.WriteString("| Key | Default | Description |\n|---|---|---|\n")
	esc := strings.NewReplacer("|", `\|`, "\n", " ")
	for _, d := range docs {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", esc.Replace(d.key), esc.Replace(d.def), esc.Replace(d.desc))
	}
	return b.String()
}

// TestChartReadme: every key of values.yaml is documented with a `# --`
// comment, and the chart README's values table is up to date (run with
// -update to regenerate it).
func TestChartReadme(t *testing.T) {
	docs := documentedValues(t)
	if len(docs) < 50 {
		t.Fatalf("only %d documented values found", len(docs))
	}
	p := filepath.Join(chartDir, "README.md")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, readmeBegin), strings.Index(text, readmeEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no values table markers", p)
	}
	want := text[:i+len(readmeBegin)] + valuesTable(docs) + text[j:]
	if want == text {
		return
	}
	if *update {
		if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the values table is stale; run go test -run TestChartReadme -update", p)
}
