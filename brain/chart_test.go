package brain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// chartDir is the Helm chart. Its tests live in their own module
// (helm/test); this one reads the chart's files directly.
var chartDir = filepath.Join("..", "helm", "brainstem")

// schemaString is the subset of JSON Schema the chart uses for a string
// name. A keyword outside it fails the test, so a schema change this test
// cannot judge is never passed silently.
type schemaString struct {
	Type        string        `json:"type"`
	Pattern     string        `json:"pattern"`
	MinLength   *int          `json:"minLength"`
	MaxLength   *int          `json:"maxLength"`
	Not         *schemaString `json:"not"`
	Description string        `json:"description"`
}

func (s *schemaString) accepts(t *testing.T, v string) bool {
	t.Helper()
	if s.Type != "" && s.Type != "string" {
		t.Fatalf("schema type %q", s.Type)
	}
	if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(v) {
		return false
	}
	n := utf8.RuneCountInString(v)
	if s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
		return false
	}
	return s.Not == nil || !s.Not.accepts(t, v)
}

// chartWingName returns the chart schema of wings[].name.
func chartWingName(t *testing.T) (*schemaString, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties struct {
			Wings struct {
				Items struct {
					Properties struct {
						Name json.RawMessage `json:"name"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"wings"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	raw := doc.Properties.Wings.Items.Properties.Name
	if raw == nil {
		t.Fatal("values.schema.json has no properties.wings.items.properties.name")
	}
	var s schemaString
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("wings[].name schema uses a keyword this test does not know: %v", err)
	}
	if s.Pattern == "" {
		t.Fatal("wings[].name has no pattern")
	}
	return &s, s.Pattern
}

// TestChartWingPattern: the Helm chart's schema accepts exactly the wing
// names ValidWing accepts (the gateway's configuration and the shard use
// ValidWing), over a table of names at and around every edge of the rule,
// and the chart's documentation quotes the pattern it enforces.
func TestChartWingPattern(t *testing.T) {
	s, pattern := chartWingName(t)
	names := []string{"-", "a-", "a-b-", "0-0", "a_b", "A", "ü", "aux1", "lpt", "com", strings.Repeat("a", 61) + "-b"}
	for _, c := range wingCases {
		names = append(names, c.in)
	}
	for _, n := range names {
		chart, brain := s.accepts(t, n), ValidWing(n) == nil
		if chart != brain {
			t.Errorf("wing %q: the chart schema accepts it: %v, ValidWing: %v (%v)", n, chart, brain, ValidWing(n))
		}
	}
	for _, doc := range []string{"values.yaml", "README.md"} {
		b, err := os.ReadFile(filepath.Join(chartDir, doc))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "`"+pattern+"`") {
			t.Errorf("helm/brainstem/%s does not quote the wing pattern `%s` of values.schema.json", doc, pattern)
		}
	}
}
