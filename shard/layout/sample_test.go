package layout

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

// TestSampleBrain checks every file of the sample brain shipped in deploy/
// against the layout: wiki notes parse as ids, and every path resolves.
func TestSampleBrain(t *testing.T) {
	root := filepath.Join("..", "..", "deploy", "examples", "brain")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no sample brain: %v", err)
	}
	notes := 0
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.Count(rel, "/") < 2 {
			return nil // README and the like at the top
		}
		if _, err := Resolve(root, rel); err != nil {
			t.Errorf("Resolve(%q): %v", rel, err)
		}
		if strings.HasPrefix(rel, brain.TopWiki+"/") && !strings.HasSuffix(rel, "/"+brain.IndexSlug+brain.NoteExt) {
			id, err := brain.ParseID(rel)
			if err != nil {
				t.Errorf("ParseID(%q): %v", rel, err)
			} else if id.Path() != rel {
				t.Errorf("ParseID(%q).Path() = %q", rel, id.Path())
			}
			notes++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if notes < 10 {
		t.Fatalf("only %d wiki notes found", notes)
	}
}
