package remote

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestParsePurged(t *testing.T) {
	a, b := strings.Repeat("ab", 20), strings.Repeat("0f", 20)
	for _, tc := range []struct {
		name, in string
		want     int // -1: refused
	}{
		{"empty", "", 0},
		{"two", a + "\n" + b + "\n", 2},
		{"duplicates and spaces", " " + a + "\n\n" + a + "\t\n", 1},
		{"upper case", strings.ToUpper(a) + "\n", 1},
		{"short", a[:39] + "\n", -1},
		{"not hex", strings.Repeat("zz", 20) + "\n", -1},
		{"sha256 length", strings.Repeat("ab", 32) + "\n", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := parsePurged([]byte(tc.in))
			switch {
			case tc.want < 0 && err == nil:
				t.Fatalf("accepted: %v", set)
			case tc.want >= 0 && (err != nil || len(set) != tc.want):
				t.Fatalf("got %v %v, want %d ids", set, err, tc.want)
			}
		})
	}
	if _, err := formatPurged(nil, []string{"HEAD"}); err == nil {
		t.Error("formatPurged took a non-id")
	}
}

// FuzzPurged: what parsePurged accepts formats back to a file that parses
// to the same set.
func FuzzPurged(f *testing.F) {
	f.Add([]byte(strings.Repeat("ab", 20) + "\n"))
	f.Add([]byte(""))
	f.Add([]byte(strings.Repeat("AB", 20) + " " + strings.Repeat("01", 20)))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := parsePurged(b)
		if err != nil {
			return
		}
		out, err := formatPurged(set, nil)
		if err != nil {
			t.Fatal(err)
		}
		again, err := parsePurged(out)
		if err != nil || !maps.Equal(set, again) {
			t.Fatalf("round trip: %v → %q → %v %v", set, out, again, err)
		}
	})
}

// FuzzForcePush: the lease parseForcePush accepts formats back to a file
// that parses to the same lease.
func FuzzForcePush(f *testing.F) {
	f.Add([]byte(`{"lease":"` + strings.Repeat("ab", 20) + `","since":"2026-01-02T03:04:05Z"}`))
	f.Add([]byte(`{"since":"2026-01-02T03:04:05Z"}`))
	f.Add([]byte(`{"lease":"HEAD"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		lease, err := parseForcePush(b)
		if err != nil {
			return
		}
		out, err := formatForcePush(lease, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		again, err := parseForcePush(out)
		if err != nil || again != lease {
			t.Fatalf("round trip: %s → %q → %s %v", lease, out, again, err)
		}
	})
}

func TestParseForcePush(t *testing.T) {
	h := strings.Repeat("ab", 20)
	for _, tc := range []struct {
		in   string
		want plumbing.Hash
		ok   bool
	}{
		{`{"lease":"` + h + `"}`, plumbing.NewHash(h), true},
		{`{"lease":""}`, plumbing.ZeroHash, true},
		{`{"lease":"main"}`, plumbing.ZeroHash, false},
		{`not json`, plumbing.ZeroHash, false},
	} {
		got, err := parseForcePush([]byte(tc.in))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s: %s %v", tc.in, got, err)
		}
	}
}
