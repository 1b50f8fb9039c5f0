package frontmatter

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the out and err sections of testdata/golden/*.txt")

// golden is one testdata/golden file: a description, then sections
// "-- name --" (ops: one JSON edit per line; in: the input note; err: the
// expected Err() text; out: the expected Bytes()).
type golden struct {
	desc     string
	sections map[string]string
	order    []string
}

func readGolden(t *testing.T, path string) *golden {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g := &golden{sections: map[string]string{}}
	cur := ""
	var b strings.Builder
	flush := func() {
		if cur == "" {
			g.desc = b.String()
		} else {
			g.sections[cur] = b.String()
			g.order = append(g.order, cur)
		}
		b.Reset()
	}
	for line := range strings.Lines(string(raw)) {
		trimmed := strings.TrimRight(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			flush()
			cur = trimmed[3 : len(trimmed)-3]
			continue
		}
		b.WriteString(line)
	}
	flush()
	return g
}

func (g *golden) write(t *testing.T, path string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(g.desc)
	for _, name := range g.order {
		b.WriteString("-- " + name + " --\n")
		b.WriteString(g.sections[name])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

type op struct {
	Op     string      `json:"op"`
	Key    string      `json:"key"`
	Value  string      `json:"value"`
	Vals   []string    `json:"vals"`
	Fields [][2]string `json:"fields"`
	Body   string      `json:"body"`
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			g := readGolden(t, path)
			var d *Doc
			if in := g.sections["in"]; in != "" {
				if d, err = Parse([]byte(in)); err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if got := string(d.Bytes()); got != in {
					t.Fatalf("round trip changed the input:\n%s", got)
				}
			}
			for line := range strings.Lines(g.sections["ops"]) {
				var o op
				if err := json.Unmarshal([]byte(line), &o); err != nil {
					t.Fatalf("op %q: %v", line, err)
				}
				if d == nil && o.Op != "new" {
					t.Fatalf("op %q before any input", line)
				}
				switch o.Op {
				case "set":
					d.Set(o.Key, o.Value)
				case "setstrings":
					d.SetStrings(o.Key, o.Vals)
				case "delete":
					d.Delete(o.Key)
				case "body":
					d.SetBody(o.Body)
				case "new":
					d = New(o.Fields, o.Body)
				default:
					t.Fatalf("unknown op %q", o.Op)
				}
			}
			got := d.Bytes()
			gotErr := ""
			if d.Err() != nil {
				gotErr = d.Err().Error() + "\n"
			}
			if *update {
				g.sections["out"] = string(got)
				if gotErr != "" {
					if _, ok := g.sections["err"]; !ok {
						t.Fatalf("unexpected error %q: add an err section by hand first", gotErr)
					}
					g.sections["err"] = gotErr
				}
				g.write(t, path)
				return
			}
			if want := g.sections["out"]; string(got) != want {
				t.Errorf("output differs\n--- got ---\n%s--- want ---\n%s", got, want)
			}
			if want := g.sections["err"]; gotErr != want {
				t.Errorf("Err() = %q, want %q", gotErr, want)
			}
			// The result is itself a valid note that round-trips.
			again, err := Parse(got)
			if err != nil {
				t.Fatalf("Parse(output): %v", err)
			}
			if !bytes.Equal(again.Bytes(), got) {
				t.Fatal("output does not round-trip")
			}
		})
	}
}
