package index

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brainstem/brainstem/search"
)

// firstMatch is the byte offset of the first token of body that is one of
// the tokens of terms, as the index records it (-1 if none).
func firstMatch(body string, terms []string) int64 {
	var want []string
	for _, t := range terms {
		want = append(want, search.Tokenize(t)...)
	}
	at := int64(-1)
	search.ForEachToken(body, func(tok string, s, _ int) {
		if at < 0 && slices.Contains(want, tok) {
			at = int64(s)
		}
	})
	return at
}

// TestSnippetAtEqualsSnippet: the windowed snippet is the whole-body
// snippet, whatever the first span (small spans force the window to grow).
func TestSnippetAtEqualsSnippet(t *testing.T) {
	long := strings.Repeat("lorem ipsum dolor sit amet ", 200)
	bodies := []struct {
		body  string
		terms []string
	}{
		{"needle " + long, []string{"needle"}},
		{long + "needle " + long, []string{"NEEDLE"}},
		{long + "final needle", []string{"needle"}},
		{long + "final needle   \n\t  ", []string{"needle"}},
		{long + "beta x alpha " + long, []string{"alpha", "beta"}},
		{strings.Repeat("日本語 ", 300) + "目標 " + strings.Repeat("中文 ", 300), []string{"目標"}},
		{strings.Repeat("語", 5000), nil},
		{"  \n  " + long, []string{"zzz"}},
		{long + strings.Repeat(" ", 3000) + "needle" + strings.Repeat("\n", 3000) + long, []string{"needle"}},
		{strings.Repeat("\xff\xfe", 500) + " needle " + strings.Repeat("é\xe2\x82", 400), []string{"needle"}},
		{"short needle body", []string{"needle"}},
	}
	for i, b := range bodies {
		match := firstMatch(b.body, b.terms)
		for _, max := range []int{1, 5, 8, 12, 40, 200, 1000} {
			want := Snippet(b.body, b.terms, max)
			for _, span := range []int64{1, 7, 64, 1 << 20} {
				got, err := snippetAt(strings.NewReader(b.body), int64(len(b.body)), match, max, span, 1<<30)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("body %d max %d span %d: SnippetAt = %q, Snippet = %q", i, max, span, got, want)
				}
			}
			if got, _ := SnippetAt(strings.NewReader(b.body), int64(len(b.body)), match, max); got != want {
				t.Errorf("body %d max %d: SnippetAt = %q, Snippet = %q", i, max, got, want)
			}
		}
	}
}

// TestSnippetAtStaleOffset: an offset that is not a token start (the file
// changed) gives the excerpt of a body without a match, never garbage.
func TestSnippetAtStaleOffset(t *testing.T) {
	body := strings.Repeat("lorem ipsum dolor sit amet ", 100)
	want := Snippet(body, nil, 60)
	for _, off := range []int64{1, 5, 1000, int64(len(body)) + 10} {
		got, err := SnippetAt(strings.NewReader(body), int64(len(body)), off, 60)
		if err != nil || got != want {
			t.Errorf("offset %d: %q, %v; want %q", off, got, err, want)
		}
	}
	if _, err := SnippetAt(strings.NewReader("short"), 100, 0, 60); err == nil {
		t.Error("a body shorter than its size: no error")
	}
}

// TestSnippetAtReadsABoundedWindow: the bytes read do not grow with the
// body.
func TestSnippetAtReadsABoundedWindow(t *testing.T) {
	for _, n := range []int{1 << 10, 1 << 16, 1 << 21} {
		body := strings.Repeat("lorem ipsum dolor sit amet ", n/27) + " needle " + strings.Repeat("lorem ipsum ", n/12)
		r := &countingReader{r: strings.NewReader(body)}
		if _, err := SnippetAt(r, int64(len(body)), firstMatch(body, []string{"needle"}), 200); err != nil {
			t.Fatal(err)
		}
		if r.n > 4096 {
			t.Errorf("body of %d bytes: read %d bytes", len(body), r.n)
		}
	}
}

type countingReader struct {
	r interface {
		ReadAt([]byte, int64) (int, error)
	}
	n int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += n
	return n, err
}

// TestHitOffsetIsFirstBodyMatch: the index records where a hit's first
// matching body token starts, and -1 for a title-only match.
func TestHitOffsetIsFirstBodyMatch(t *testing.T) {
	ix := New()
	ix.Put(Doc{ID: "w/facts/a", Title: "Gamma", Body: "alpha beta Gamma beta"})
	ix.Put(Doc{ID: "w/facts/b", Title: "Gamma", Body: "nothing here"})
	for _, tt := range []struct {
		q    string
		want map[string]int
	}{
		{"beta", map[string]int{"w/facts/a": 6}},
		{"gamma", map[string]int{"w/facts/a": 11, "w/facts/b": -1}},
		{"gamma beta", map[string]int{"w/facts/a": 6, "w/facts/b": -1}},
	} {
		got := map[string]int{}
		for _, h := range ix.Search(tt.q, Options{}) {
			got[h.ID] = h.Offset
		}
		for _, h := range ix.Score(tt.q, []string{"w/facts/a", "w/facts/b"}, Options{}) {
			if got[h.ID] != h.Offset {
				t.Errorf("%q: Score offset of %s %d, Search %d", tt.q, h.ID, h.Offset, got[h.ID])
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("%q: hits %v, want %v", tt.q, got, tt.want)
		}
		for id, off := range tt.want {
			if got[id] != off {
				t.Errorf("%q: %s offset %d, want %d", tt.q, id, got[id], off)
			}
		}
	}
}

// FuzzSnippetAt: for any body, term, size and first span, the windowed
// snippet equals the whole-body one.
func FuzzSnippetAt(f *testing.F) {
	f.Add("the quick brown fox jumps over the lazy dog", "fox", 12, 3)
	f.Add(strings.Repeat("日本語 ", 40)+"目標", "目標", 9, 1)
	f.Add("ab\xff\xfecd efgh", "cd", 3, 2)
	f.Add("00 0 000000", "0", 10, 1)
	f.Add("  a\u00a0\u00a0b  c\xe2\x82 d ", "c", 8, 1)
	f.Fuzz(func(t *testing.T, body, term string, max, span int) {
		max %= 1 << 12
		span = 1 + (span&0xffff)%4096
		match := firstMatch(body, []string{term})
		want := Snippet(body, []string{term}, max)
		got, err := snippetAt(strings.NewReader(body), int64(len(body)), match, max, int64(span), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("snippetAt(%q, match %d, max %d, span %d) = %q, Snippet = %q", body, match, max, span, got, want)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("not valid UTF-8: %q", got)
		}
		// The index records the same first match.
		ix := New()
		ix.Put(Doc{ID: "w/facts/x", Title: "", Body: body})
		if len(search.Tokenize(term)) > search.MaxQueryTerms {
			return // the index scores only the first MaxQueryTerms terms
		}
		if hits := ix.Search(term, Options{}); len(hits) == 1 && int64(hits[0].Offset) != match {
			t.Fatalf("index offset %d, first match %d (body %q, term %q)", hits[0].Offset, match, body, term)
		} else if len(hits) == 0 && match >= 0 {
			t.Fatalf("no hit, first match %d (body %q, term %q)", match, body, term)
		}
	})
}
