package history

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// applyPatch applies a unified diff to from (the hunks' - and context
// lines must match), the judge of Diff's output.
func applyPatch(t testing.TB, from, patch string) string {
	t.Helper()
	a := splitLines([]byte(from))
	lines := strings.SplitAfter(patch, "\n")
	var out []string
	pos := 0
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "@@ -") {
			f := strings.Fields(l)
			start := strings.Split(strings.TrimPrefix(f[1], "-"), ",")
			n := atoi(start[0])
			if len(start) == 2 && start[1] == "0" {
				n++ // "l,0" names the line before
			}
			for pos < n-1 {
				out = append(out, a[pos])
				pos++
			}
			continue
		}
		if strings.HasPrefix(l, `\ No newline`) {
			if lines[i-1][0] == '-' {
				continue
			}
			last := &out[len(out)-1]
			*last = strings.TrimSuffix(*last, "\n")
			continue
		}
		switch l[0] {
		case ' ', '-':
			want := l[1:]
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\ No newline`) {
				want = strings.TrimSuffix(want, "\n")
			}
			if pos >= len(a) || a[pos] != want {
				t.Fatalf("patch line %d %q does not match line %d of the source", i, l, pos+1)
			}
			if l[0] == ' ' {
				out = append(out, a[pos])
			}
			pos++
		case '+':
			out = append(out, l[1:])
		}
	}
	out = append(out, a[pos:]...)
	return strings.Join(out, "")
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestDiff(t *testing.T) {
	long := func(n int, mod map[int]string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if m, ok := mod[i]; ok {
				b.WriteString(m)
				continue
			}
			b.WriteString("line " + strings.Repeat("x", i%7) + fmt.Sprintf("%02d", i) + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, from, to string
	}{
		{"equal", "a\nb\n", "a\nb\n"},
		{"create", "", "a\nb\n"},
		{"remove", "a\nb\n", ""},
		{"middle", long(20, nil), long(20, map[int]string{10: "changed\n"})},
		{"two-hunks", long(40, nil), long(40, map[int]string{3: "x\n", 35: "y\n"})},
		{"merged-hunks", long(40, nil), long(40, map[int]string{10: "x\n", 16: "y\n"})},
		{"no-newline", "a\nb", "a\nc"},
		{"add-newline", "a\nb", "a\nb\n"},
		{"insert-start", "b\nc\n", "a\nb\nc\n"},
		{"frontmatter", "---\ntitle: A\nupdated_by: ann@acme.com\n---\nBody one.\nBody two.\n",
			"---\ntitle: A\nupdated_by: bob@acme.com\nsupersedes: 1234\n---\nBody one.\nBody three.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := Diff([]byte(tc.from), []byte(tc.to), "a/x.md", "b/x.md", 0)
			if cut {
				t.Fatal("cut without a limit")
			}
			if tc.from == tc.to {
				if got != "" {
					t.Fatalf("diff of equal inputs: %q", got)
				}
				return
			}
			if back := applyPatch(t, tc.from, got); back != tc.to {
				t.Fatalf("the patch gives\n%q\nwant\n%q\npatch:\n%s", back, tc.to, got)
			}
			golden(t, "diff-"+tc.name+".golden", got)
			gitApplies(t, tc.from, tc.to, got)
		})
	}
}

// gitApplies checks that `git apply` turns from into to with the patch.
func gitApplies(t *testing.T, from, to, patch string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.md"), []byte(from), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.diff"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "apply", "--unidiff-zero", "p.diff")
	if from == "" || to == "" {
		return // git wants /dev/null names for creation and removal
	}
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "x.md"))
	if string(got) != to {
		t.Fatalf("git apply gives %q, want %q", got, to)
	}
}

func TestDiffCut(t *testing.T) {
	from := strings.Repeat("same\n", 5) + strings.Repeat("old line\n", 50)
	to := strings.Repeat("same\n", 5) + strings.Repeat("new line\n", 50)
	full, _ := Diff([]byte(from), []byte(to), "a", "b", 0)
	got, cut := Diff([]byte(from), []byte(to), "a", "b", 200)
	if !cut || len(got) > 200 || !strings.HasPrefix(full, got) || !strings.HasSuffix(got, "\n") {
		t.Fatalf("cut=%v len=%d: %q", cut, len(got), got)
	}
}

// FuzzDiff: the patch Diff writes always turns from into to.
func FuzzDiff(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nc\nd"))
	f.Add([]byte(""), []byte("x"))
	f.Add([]byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n"), []byte("1\n2\nX\n4\n5\n6\n7\nY\n9\n"))
	f.Fuzz(func(t *testing.T, from, to []byte) {
		if len(from) > 4096 || len(to) > 4096 {
			return
		}
		got, _ := Diff(from, to, "a", "b", 0)
		if string(from) == string(to) {
			return
		}
		if back := applyPatch(t, string(from), got); back != string(to) {
			t.Fatalf("patch gives %q, want %q:\n%s", back, to, got)
		}
	})
}
