package signin

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseChallenges(t *testing.T) {
	type ch = Challenge
	tests := []struct {
		in   string
		want []Challenge
	}{
		{`Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
			[]ch{{Scheme: "Bearer", Params: map[string]string{"resource_metadata": "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", "scope": "mcp"}}}},
		{`Bearer error="invalid_token", error_description="the token expired", resource_metadata="https://b/x"`,
			[]ch{{Scheme: "Bearer", Params: map[string]string{"error": "invalid_token", "error_description": "the token expired", "resource_metadata": "https://b/x"}}}},
		{`bearer Realm=example`, []ch{{Scheme: "bearer", Params: map[string]string{"realm": "example"}}}},
		{`Basic realm="a, b", Bearer scope="x y"`,
			[]ch{{Scheme: "Basic", Params: map[string]string{"realm": "a, b"}}, {Scheme: "Bearer", Params: map[string]string{"scope": "x y"}}}},
		{`Negotiate abc+/==, Bearer`, []ch{{Scheme: "Negotiate", Params: map[string]string{}, Token68: "abc+/=="}, {Scheme: "Bearer", Params: map[string]string{}}}},
		{`Bearer`, []ch{{Scheme: "Bearer", Params: map[string]string{}}}},
		{`Bearer a="q\"uo\\te"`, []ch{{Scheme: "Bearer", Params: map[string]string{"a": `q"uo\te`}}}},
		{`Bearer a = "x" ,b=y,, Newer c=d`, []ch{{Scheme: "Bearer", Params: map[string]string{"a": "x", "b": "y"}}, {Scheme: "Newer", Params: map[string]string{"c": "d"}}}},
	}
	for _, tt := range tests {
		got, err := ParseChallenges(tt.in)
		if err != nil {
			t.Errorf("ParseChallenges(%q): %v", tt.in, err)
			continue
		}
		if !sameChallenges(got, tt.want) {
			t.Errorf("ParseChallenges(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseChallengesRefusals(t *testing.T) {
	for _, in := range []string{
		``, ` , `, `Bearer a="unterminated`, `Bearer a= "x" b`, `Bearer a="x" b="y"`, `Bearer a=x, a=y`,
		`Bearer a="` + "\x01" + `"`, `=x`, `Bearer a="x"junk`, strings.Repeat("B ", MaxChallengeBytes),
		strings.Repeat("Bearer, ", maxChallenges+1),
	} {
		if got, err := ParseChallenges(in); !errors.Is(err, ErrChallenge) {
			t.Errorf("ParseChallenges(%.60q) = %+v, %v; want ErrChallenge", in, got, err)
		}
	}
}

func TestBearer(t *testing.T) {
	cs, err := ParseChallenges(`Basic realm="x"`, `Bearer resource_metadata="https://m"`)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := Bearer(cs)
	if !ok || b.Params["resource_metadata"] != "https://m" {
		t.Errorf("Bearer = %+v, %v", b, ok)
	}
	if _, ok := Bearer(cs[:1]); ok {
		t.Error("found a Bearer challenge among Basic ones")
	}
}

func sameChallenges(a, b []Challenge) bool {
	return slices.EqualFunc(a, b, func(x, y Challenge) bool {
		return x.Scheme == y.Scheme && x.Token68 == y.Token68 && maps.Equal(x.Params, y.Params)
	})
}

// render writes challenges back as a header value.
func render(cs []Challenge) string {
	var parts []string
	for _, c := range cs {
		s := c.Scheme
		if c.Token68 != "" {
			s += " " + c.Token68
		} else {
			var ps []string
			for _, k := range slices.Sorted(maps.Keys(c.Params)) {
				ps = append(ps, fmt.Sprintf("%s=%q", k, c.Params[k]))
			}
			if len(ps) > 0 {
				s += " " + strings.Join(ps, ", ")
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// FuzzParseChallenges: any input parses or fails with ErrChallenge, and a
// parsed header rendered again parses to the same challenges.
func FuzzParseChallenges(f *testing.F) {
	for _, s := range []string{
		`Bearer resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
		`Bearer error="invalid_token", error_description="expired"`, `Basic realm="a, b", Bearer scope="x y"`,
		`Negotiate abc+/==, Bearer`, `Bearer a="q\"uo\\te"`, `x y=z,,w`, `Bearer a="`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cs, err := ParseChallenges(in)
		if err != nil {
			if !errors.Is(err, ErrChallenge) {
				t.Fatalf("error %v is not ErrChallenge", err)
			}
			return
		}
		for _, c := range cs {
			if c.Scheme == "" || strings.ContainsFunc(c.Scheme, func(r rune) bool { return r > 0x7e || !isTchar(byte(r)) }) {
				t.Fatalf("scheme %q is not a token", c.Scheme)
			}
			for _, v := range c.Params {
				if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r > 0x7e }) {
					t.Fatalf("value %q holds a control or non-ASCII byte", v)
				}
			}
		}
		// %q quoting is valid quoted-string only for printable ASCII
		// without tabs; skip the rest of the round trip otherwise.
		again := render(cs)
		if strings.Contains(again, `\t`) {
			return
		}
		cs2, err := ParseChallenges(again)
		if err != nil {
			t.Fatalf("re-rendered %q does not parse: %v", again, err)
		}
		if !sameChallenges(cs, cs2) {
			t.Fatalf("round trip changed %+v into %+v (via %q)", cs, cs2, again)
		}
	})
}
