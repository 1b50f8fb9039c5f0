package frontmatter

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

func addSeeds(f *testing.F, add func(raw string)) {
	add(example)
	for _, rt := range roundTrips {
		add(rt.in)
	}
	add("---\na: &x 1\nb: *x\n---\n")
	add("---\ntags:\n- a\n# c\n- b\n\nnext: |+\n  x\n\n---\nbody\n")
	add("---\r\na: 1 # c\r\n---\r\n")
}

func isSentinel(err error) bool {
	for _, s := range []error{ErrUnterminated, ErrInvalidYAML, ErrTooLarge, ErrInvalidKey} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// snapshot is what a reader sees of every key.
type snapshot struct {
	get     string
	ok      bool
	strings []string
}

func snap(d *Doc) map[string]snapshot {
	m := make(map[string]snapshot)
	for _, k := range d.Keys() {
		v, ok := d.Get(k)
		m[k] = snapshot{v, ok, d.Strings(k)}
	}
	return m
}

// checkEdit verifies an applied edit of key: the note re-parses, other keys
// read the same, and every header line outside key's lines is unchanged.
// want is the number of lines the key must occupy afterwards (0: deleted).
func checkEdit(t *testing.T, before *Doc, beforeKeys map[string]snapshot, after *Doc, key string, want int) *Doc {
	t.Helper()
	out := after.Bytes()
	d2, err := Parse(out)
	if err != nil {
		t.Fatalf("edit of %q produced an unparseable note %q: %v", key, out, err)
	}
	if !bytes.Equal(d2.Bytes(), out) {
		t.Fatalf("edited note does not round-trip")
	}
	if d2.Body() != before.Body() || d2.prefix != before.prefix {
		t.Fatalf("edit of %q changed the body or prefix", key)
	}
	now := snap(d2)
	for k, s := range beforeKeys {
		if k == key {
			continue
		}
		if n, ok := now[k]; !ok || n.get != s.get || n.ok != s.ok || !slices.Equal(n.strings, s.strings) {
			t.Fatalf("edit of %q changed key %q: %+v -> %+v", key, k, s, now[k])
		}
	}
	var wantLines []string
	if e := before.find(key); e != nil {
		wantLines = append(wantLines, before.lines[:e.start]...)
		if want > 0 {
			wantLines = append(wantLines, "\x00edited")
		}
		wantLines = append(wantLines, before.lines[e.end:]...)
	} else {
		wantLines = append(slices.Clone(before.lines), "\x00edited")
	}
	if len(wantLines) != len(d2.lines) {
		t.Fatalf("edit of %q: %d header lines, want %d:\n%q", key, len(d2.lines), len(wantLines), out)
	}
	for i, l := range wantLines {
		if l != "\x00edited" && l != d2.lines[i] {
			t.Fatalf("edit of %q changed untouched line %d: %q -> %q", key, i+1, l, d2.lines[i])
		}
	}
	wantKeys := before.Keys()
	switch {
	case want == 0:
		wantKeys = slices.DeleteFunc(wantKeys, func(k string) bool { return k == key })
	case !slices.Contains(wantKeys, key):
		wantKeys = append(wantKeys, key)
	}
	if !slices.Equal(d2.Keys(), wantKeys) {
		t.Fatalf("edit of %q: keys %q, want %q", key, d2.Keys(), wantKeys)
	}
	return d2
}

func FuzzParse(f *testing.F) {
	addSeeds(f, func(raw string) { f.Add([]byte(raw)) })
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := Parse(raw)
		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("Parse error %v wraps no sentinel", err)
			}
			return
		}
		if got := d.Bytes(); !bytes.Equal(got, raw) {
			t.Fatalf("round trip: %q -> %q", raw, got)
		}
		keys := d.Keys()
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				t.Fatalf("key %q listed twice", k)
			}
			seen[k] = true
			d.Get(k)
			d.Strings(k)
		}
		var m map[string]any
		_ = d.Decode(&m)
	})
}

func FuzzSet(f *testing.F) {
	addSeeds(f, func(raw string) {
		f.Add([]byte(raw), "title", "New: value # x")
		f.Add([]byte(raw), "tags", "")
		f.Add([]byte(raw), "fresh", "line\nbreak")
	})
	f.Fuzz(func(t *testing.T, raw []byte, key, value string) {
		d, err := Parse(raw)
		if err != nil {
			return
		}
		before, _ := Parse(raw)
		beforeKeys := snap(before)
		d.Set(key, value)
		if err := d.Err(); err != nil {
			if !isSentinel(err) {
				t.Fatalf("Set error %v wraps no sentinel", err)
			}
			if !bytes.Equal(d.Bytes(), raw) {
				t.Fatalf("refused Set(%q, %q) changed the note", key, value)
			}
			return
		}
		d2 := checkEdit(t, before, beforeKeys, d, key, 1)
		if got, ok := d2.Get(key); !ok || got != strings.ToValidUTF8(value, "\uFFFD") {
			t.Fatalf("Set(%q, %q): Get = %q, %v", key, value, got, ok)
		}
	})
}

// FuzzEdit covers SetStrings (op%3 == 0), Delete (1) and SetBody (2, the
// body being list): the note always reads back as edited.
func FuzzEdit(f *testing.F) {
	addSeeds(f, func(raw string) {
		f.Add([]byte(raw), "tags", "a,b c", uint8(0))
		f.Add([]byte(raw), "title", "", uint8(1))
		f.Add([]byte(raw), "a", "", uint8(1))
		f.Add([]byte(raw), "", "---\nx: 1\n---\n", uint8(2))
	})
	f.Fuzz(func(t *testing.T, raw []byte, key, list string, op uint8) {
		d, err := Parse(raw)
		if err != nil {
			return
		}
		before, _ := Parse(raw)
		beforeKeys := snap(before)
		var vals []string
		if list != "" {
			vals = strings.Split(list, ",")
		}
		existed := d.find(key) != nil
		switch op % 3 {
		case 0:
			d.SetStrings(key, vals)
		case 1:
			d.Delete(key)
		case 2:
			d.SetBody(list)
			d2, err := Parse(d.Bytes())
			if err != nil {
				t.Fatalf("SetBody(%q) made the note unparseable: %v", list, err)
			}
			if d2.Body() != list || !slices.Equal(d2.Keys(), before.Keys()) {
				t.Fatalf("SetBody(%q): body %q, keys %q", list, d2.Body(), d2.Keys())
			}
			return
		}
		if err := d.Err(); err != nil {
			if !isSentinel(err) {
				t.Fatalf("edit error %v wraps no sentinel", err)
			}
			if !bytes.Equal(d.Bytes(), raw) {
				t.Fatalf("refused edit of %q changed the note", key)
			}
			return
		}
		if op%3 == 1 {
			if !existed {
				if !bytes.Equal(d.Bytes(), raw) {
					t.Fatalf("Delete of a missing key changed the note")
				}
				return
			}
			d2 := checkEdit(t, before, beforeKeys, d, key, 0)
			if _, ok := d2.Get(key); ok || d2.Strings(key) != nil {
				t.Fatalf("Delete(%q) left the key", key)
			}
			return
		}
		d2 := checkEdit(t, before, beforeKeys, d, key, 1)
		got := d2.Strings(key)
		want := make([]string, len(vals))
		for i, v := range vals {
			want[i] = strings.ToValidUTF8(v, "\uFFFD")
		}
		if len(got) != len(want) || (len(want) > 0 && !slices.Equal(got, want)) {
			t.Fatalf("SetStrings(%q, %q): Strings = %q", key, vals, got)
		}
	})
}
