package devidp

import (
	"net/url"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/internal/loopback"
)

// FuzzCheckRedirectURI: whatever it accepts is an http URL on a loopback
// host without credentials or fragment.
func FuzzCheckRedirectURI(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:8080/cb", "http://localhost/x", "http://[::1]:1/", "https://evil.com",
		"http://127.0.0.1.evil.com/", "http://user@127.0.0.1/", "http://127.0.0.1/#f", "//127.0.0.1/", "http://127.1/",
		"http://0x7f000001/", "http://localhost.:80/", "javascript:alert(1)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkRedirectURI(s) != nil {
			return
		}
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "http" || !loopback.Is(u.Hostname()) || u.User != nil || u.Fragment != "" {
			t.Fatalf("accepted %q", s)
		}
		// What the redirect builder makes of it stays on the same host.
		r, err := url.Parse(withQuery(s, url.Values{"code": {"c"}}))
		if err != nil || r.Host != u.Host || r.Scheme != "http" {
			t.Fatalf("redirect for %q went to %v (%v)", s, r, err)
		}
	})
}

// FuzzParseGroups: accepted groups are trimmed, non-empty, unique, printable
// and within the limits.
func FuzzParseGroups(f *testing.F) {
	for _, s := range []string{"", "eng", "eng, ops", " a ,, a ,b", "a\nb", strings.Repeat("g,", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gs, err := parseGroups(s)
		if err != nil {
			return
		}
		if len(gs) > MaxGroups {
			t.Fatalf("%d groups", len(gs))
		}
		seen := map[string]bool{}
		for _, g := range gs {
			if g == "" || g != strings.TrimSpace(g) || seen[g] || strings.ContainsAny(g, ",\n\r\x00") || len(g) > 256 {
				t.Fatalf("bad group %q from %q", g, s)
			}
			seen[g] = true
		}
	})
}
