package frontmatter

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSampleBrain parses every note of the sample brain shipped in deploy/:
// each must parse, round-trip byte for byte, carry the fields the design
// names, and accept the store's stamps without disturbing other lines.
func TestSampleBrain(t *testing.T) {
	root := filepath.Join("..", "..", "deploy", "examples", "brain")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no sample brain: %v", err)
	}
	n := 0
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		d, err := Parse(raw)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		n++
		if !bytes.Equal(d.Bytes(), raw) {
			t.Errorf("%s: round trip changed the file", p)
		}
		if strings.Contains(filepath.ToSlash(p), "/wiki/") && !strings.HasSuffix(p, "_index.md") {
			for _, k := range []string{"title", "wing", "hall"} {
				if v, ok := d.Get(k); !ok || v == "" {
					t.Errorf("%s: no %s", p, k)
				}
			}
		}
		before := string(raw)
		d.Set("updated_by", "dana@example.com")
		d.Set("updated_at", "2026-03-01T10:00:00Z")
		d.Set("supersede_reason", "Rewritten: new data")
		if d.Err() != nil {
			t.Errorf("%s: %v", p, d.Err())
			return nil
		}
		after := string(d.Bytes())
		head, _, _ := strings.Cut(before[4:], "\n---\n")
		if !strings.HasPrefix(after, "---\n"+head+"\n") || !strings.HasSuffix(after, d.Body()) {
			t.Errorf("%s: stamping changed existing lines:\n%s", p, after)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("only %d sample notes found", n)
	}
}
