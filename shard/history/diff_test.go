package history

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
			got, cut, err := Diff(context.Background(), []byte(tc.from), []byte(tc.to), "a/x.md", "b/x.md", 0)
			if err != nil || cut {
				t.Fatalf("err=%v, cut=%v (no limit)", err, cut)
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
	full, _, err1 := Diff(context.Background(), []byte(from), []byte(to), "a", "b", 0)
	got, cut, err2 := Diff(context.Background(), []byte(from), []byte(to), "a", "b", 200)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !cut || len(got) > 200 || !strings.HasPrefix(full, got) || !strings.HasSuffix(got, "\n") {
		t.Fatalf("cut=%v len=%d: %q", cut, len(got), got)
	}
}

// lines is n lines "<word> <i>\n" from first on.
func lines(word string, first, n int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, "%s %d\n", word, i)
	}
	return b.String()
}

// countEdits counts the lines a patch removes and adds.
func countEdits(patch string) int {
	n := 0
	for i, l := range strings.SplitAfter(patch, "\n") {
		if i >= 2 && (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) {
			n++
		}
	}
	return n
}

// TestDiffTooDifferentIssue34 is issue 34's reproduction: a note of
// 131,072 lines "a" updated to 131,072 lines "b". Before the bound the
// diff took minutes of CPU; now it is refused as too different.
func TestDiffTooDifferentIssue34(t *testing.T) {
	from := strings.Repeat("a\n", 131072)
	to := strings.Repeat("b\n", 131072)
	text, cut, err := Diff(context.Background(), []byte(from), []byte(to), "a/x.md", "b/x.md", 128<<10)
	if !errors.Is(err, ErrTooDifferent) || text != "" || cut {
		t.Fatalf("Diff = %d bytes, cut %v, err %v; want ErrTooDifferent", len(text), cut, err)
	}
}

// TestDiffEditBound: a diff of exactly DiffMaxEdits edits is written, one
// of DiffMaxEdits+1 refused, whether the lines are replaced, added or
// removed, with an odd or even difference of lengths, in a long note.
func TestDiffEditBound(t *testing.T) {
	head, tail := lines("head", 0, 20000), lines("tail", 0, 20000)
	for _, tc := range []struct {
		name     string
		from, to string
		edits    int
	}{
		{"replaced", lines("old", 0, DiffMaxEdits/2), lines("new", 0, DiffMaxEdits/2), DiffMaxEdits},
		{"replaced+1", lines("old", 0, DiffMaxEdits/2), lines("new", 0, DiffMaxEdits/2+1), DiffMaxEdits + 1},
		{"replaced-1", lines("old", 0, DiffMaxEdits/2-1), lines("new", 0, DiffMaxEdits/2), DiffMaxEdits - 1},
		{"added", "", lines("new", 0, DiffMaxEdits), DiffMaxEdits},
		{"added+1", "", lines("new", 0, DiffMaxEdits+1), DiffMaxEdits + 1},
		{"removed", lines("old", 0, DiffMaxEdits), "", DiffMaxEdits},
		{"removed+1", lines("old", 0, DiffMaxEdits+1), "", DiffMaxEdits + 1},
		{"replaced+2", lines("old", 0, DiffMaxEdits/2+1), lines("new", 0, DiffMaxEdits/2+1), DiffMaxEdits + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := head+tc.from+tail, head+tc.to+tail
			text, _, err := Diff(context.Background(), []byte(from), []byte(to), "a", "b", 0)
			if tc.edits > DiffMaxEdits {
				if !errors.Is(err, ErrTooDifferent) {
					t.Fatalf("%d edits: err %v, want ErrTooDifferent", tc.edits, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%d edits: %v", tc.edits, err)
			}
			if got := countEdits(text); got != tc.edits {
				t.Fatalf("the diff has %d edits, want %d", got, tc.edits)
			}
			if back := applyPatch(t, from, text); back != to {
				t.Fatal("the patch does not give the new version")
			}
		})
	}
}

// TestDiffLongNoteRealEdit: a real edit of a long note (hundreds of lines
// changed, added and removed here and there in 131,072) still diffs.
func TestDiffLongNoteRealEdit(t *testing.T) {
	from, to := realEdit(131072, 300)
	text, cut, err := Diff(context.Background(), from, to, "a", "b", 0)
	if err != nil || cut {
		t.Fatalf("err %v, cut %v", err, cut)
	}
	if back := applyPatch(t, string(from), text); back != string(to) {
		t.Fatal("the patch does not give the new version")
	}
	if n := countEdits(text); n < 300 || n > DiffMaxEdits {
		t.Fatalf("%d edits", n)
	}
}

// realEdit is a note of n lines and a new version of it with changes
// lines changed, one in three at every 400th line, one in three added
// there, one in three removed.
func realEdit(n, changes int) (from, to []byte) {
	var a, b strings.Builder
	step := n / changes
	for i := range n {
		l := fmt.Sprintf("Line %d of a long note, with some words in it.\n", i)
		a.WriteString(l)
		switch {
		case i%step != 0:
			b.WriteString(l)
		case i/step%3 == 0:
			b.WriteString("Changed: " + l)
		case i/step%3 == 1:
			b.WriteString(l + "Added after it.\n")
		}
	}
	return []byte(a.String()), []byte(b.String())
}

// TestDiffWorkBound: versions within the edit bound whose search would
// take more than the work bound are refused too, and the same versions
// diff with a larger budget.
func TestDiffWorkBound(t *testing.T) {
	from, to := repetitive(4000, 1), repetitive(4000, 2)
	ctx := context.Background()
	if _, _, err := diffWithin(ctx, from, to, "a", "b", 0, diffBounds{edits: 1 << 20, work: 1000}); !errors.Is(err, ErrTooDifferent) {
		t.Fatalf("with 1,000 steps: %v, want ErrTooDifferent", err)
	}
	text, _, err := diffWithin(ctx, from, to, "a", "b", 0, diffBounds{edits: 1 << 20, work: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if back := applyPatch(t, string(from), text); back != string(to) {
		t.Fatal("the patch does not give the new version")
	}
}

// repetitive is a note of n paragraphs, each a line of its own (numbered
// with version) and a blank line: every blank line equals every other, so
// the search meets long runs of equal lines on every diagonal.
func repetitive(n, version int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "Paragraph %d, version %d.\n\n", i, version)
	}
	return []byte(b.String())
}

// TestDiffStopsWhenCancelled: a diff that would run for seconds without
// bounds ends with the context's error once the context ends.
func TestDiffStopsWhenCancelled(t *testing.T) {
	from, to := []byte(lines("old", 0, 32768)), []byte(lines("new", 0, 32768))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err := diffWithin(ctx, from, to, "a", "b", 0, diffBounds{edits: 1 << 30, work: 1 << 62})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want context.DeadlineExceeded", err)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if _, _, err := Diff(cancelled, from, to, "a", "b", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestLineCount(t *testing.T) {
	for in, want := range map[string]int{"": 0, "a": 1, "a\n": 1, "a\nb": 2, "\n\n": 2} {
		if got := LineCount([]byte(in)); got != want || got != len(splitLines([]byte(in))) {
			t.Errorf("LineCount(%q) = %d, want %d", in, got, want)
		}
	}
}

// editDistance is the number of lines removed plus added of a minimal
// line diff (lengths minus twice the longest common subsequence).
func editDistance(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return len(a) + len(b) - 2*prev[len(b)]
}

// FuzzDiff: the patch Diff writes always turns from into to, and is
// minimal; with a small edit bound (taken from the input), Diff refuses
// exactly the versions whose edit distance is over it.
func FuzzDiff(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), []byte("a\nc\nd"))
	f.Add([]byte(""), []byte("x"))
	f.Add([]byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n"), []byte("1\n2\nX\n4\n5\n6\n7\nY\n9\n"))
	f.Add([]byte("a\n\nb\n\nc\n\n"), []byte("\nx\n\ny\n\nz\n"))
	f.Add([]byte(lines("a", 0, 40)), []byte(lines("b", 0, 40)))
	f.Fuzz(func(t *testing.T, from, to []byte) {
		if len(from) > 4096 || len(to) > 4096 {
			return
		}
		ctx := context.Background()
		got, _, err := Diff(ctx, from, to, "a", "b", 0)
		if string(from) == string(to) {
			if got != "" || err != nil {
				t.Fatalf("equal versions: %q, %v", got, err)
			}
			return
		}
		a, b := splitLines(from), splitLines(to)
		dist := -1
		if len(a)*len(b) <= 1<<18 {
			dist = editDistance(a, b)
		}
		switch {
		case errors.Is(err, ErrTooDifferent):
			if dist >= 0 && dist <= DiffMaxEdits {
				t.Fatalf("refused at %d edits", dist)
			}
			return
		case err != nil:
			t.Fatal(err)
		}
		if back := applyPatch(t, string(from), got); back != string(to) {
			t.Fatalf("patch gives %q, want %q:\n%s", back, to, got)
		}
		if dist >= 0 && countEdits(got) != dist {
			t.Fatalf("the patch has %d edits, the minimum is %d:\n%s", countEdits(got), dist, got)
		}
		if dist < 0 {
			return
		}
		edits := (len(from) + 3*len(to)) % 32
		small, _, err := diffWithin(ctx, from, to, "a", "b", 0, diffBounds{edits: edits, work: 1 << 40})
		switch {
		case dist > edits && !errors.Is(err, ErrTooDifferent):
			t.Fatalf("%d edits within a bound of %d: %v", dist, edits, err)
		case dist <= edits && (err != nil || small != got):
			t.Fatalf("%d edits within a bound of %d: %v, or another diff:\n%s", dist, edits, err, small)
		}
	})
}

// benchPair is one benchmark's two versions.
type benchPair struct {
	name     string
	from, to []byte
}

func benchPairs() []benchPair {
	long, edited := realEdit(131072, 300)
	note, noteEdited := realEdit(200, 5)
	head, tail := lines("head", 0, 20000), lines("tail", 0, 20000)
	return []benchPair{
		// issue 34: 131,072 lines, all different (refused)
		{"worst-131072-all-different", []byte(strings.Repeat("a\n", 131072)), []byte(strings.Repeat("b\n", 131072))},
		{"worst-131072-numbered", []byte(lines("old", 0, 131072)), []byte(lines("new", 0, 131072))},
		// the issue's smaller sizes (0.38 s and 6.1 s before), refused
		{"all-different-8192", []byte(lines("old", 0, 8192)), []byte(lines("new", 0, 8192))},
		{"all-different-32768", []byte(lines("old", 0, 32768)), []byte(lines("new", 0, 32768))},
		// 4,096 edits, at the bound: diffed
		{"all-different-2048", []byte(lines("old", 0, 2048)), []byte(lines("new", 0, 2048))},
		// at the edit bound, in a long note
		{"bound-2048-replaced", []byte(head + lines("old", 0, DiffMaxEdits/2) + tail), []byte(head + lines("new", 0, DiffMaxEdits/2) + tail)},
		{"repetitive-4000-paragraphs", repetitive(4000, 1), repetitive(4000, 2)},
		{"long-131072-300-changes", long, edited},
		{"typical-200-5-changes", note, noteEdited},
	}
}

// BenchmarkDiff times Diff on the worst cases and on real edits, beside
// the floor of any answer: hashing both versions (hash/<name>), which the
// too-different answer does too. work-bound is the most the work bound
// lets a diff cost: all of DiffMaxWork spent (the edit bound lifted) on
// 131,072 lines that differ. Each reports the process's CPU time per
// operation (cpu-ns/op) beside the wall time, which a loaded machine
// stretches.
func BenchmarkDiff(b *testing.B) {
	ctx := context.Background()
	b.Run("work-bound-131072", func(b *testing.B) {
		from, to := []byte(lines("old", 0, 131072)), []byte(lines("new", 0, 131072))
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if _, _, err := diffWithin(ctx, from, to, "a", "b", 128<<10, diffBounds{edits: 1 << 30, work: DiffMaxWork}); !errors.Is(err, ErrTooDifferent) {
				b.Fatal(err)
			}
		}
	})
	for _, p := range benchPairs() {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(p.from) + len(p.to)))
			defer reportCPU(b)()
			for b.Loop() {
				if _, _, err := Diff(ctx, p.from, p.to, "a", "b", 128<<10); err != nil && !errors.Is(err, ErrTooDifferent) {
					b.Fatal(err)
				}
			}
		})
		b.Run("hash/"+p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(p.from) + len(p.to)))
			defer reportCPU(b)()
			for b.Loop() {
				sha256.Sum256(p.from)
				sha256.Sum256(p.to)
			}
		})
	}
}

// reportCPU starts counting the process's CPU time (user and system, of
// every thread: the garbage collector's too); the function it returns
// reports it per operation as cpu-ns/op, where the system tells it
// (processCPU).
func reportCPU(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		if end, ok2 := processCPU(); ok && ok2 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
