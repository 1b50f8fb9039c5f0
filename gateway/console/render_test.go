package console

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// attack is one line of testdata/attacks.txt.
type attack struct {
	Name  string   `json:"name"`
	Title string   `json:"title"`
	Tags  []string `json:"tags"`
	Body  string   `json:"body"`
}

func readAttacks(t *testing.T) []attack {
	t.Helper()
	f, err := os.Open("testdata/attacks.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []attack
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var a attack
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("attacks.txt: %v: %s", err, line)
		}
		out = append(out, a)
	}
	if len(out) < 15 {
		t.Fatalf("attacks.txt has %d attacks", len(out))
	}
	return out
}

// allowedElements is the sanitizer's allow-list, as the tests hold it.
var allowedElements = []string{"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code",
	"em", "strong", "del", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a"}

// checkSafe walks rendered HTML and reports any element or attribute
// outside the allow-list and any link to another scheme than http, https,
// mailto or a relative URL. Text that reads "javascript:" is harmless text.
func checkSafe(t *testing.T, name string, out string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(out))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		if !slices.Contains(allowedElements, tok.Data) {
			t.Errorf("%s: element <%s> in %q", name, tok.Data, out)
		}
		for _, a := range tok.Attr {
			switch a.Key {
			case "href":
				u, err := url.Parse(a.Val)
				if err != nil || (u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto") {
					t.Errorf("%s: href %q", name, a.Val)
				}
			case "rel", "class", "start", "align":
			default:
				t.Errorf("%s: attribute %s=%q on <%s>", name, a.Key, a.Val, tok.Data)
			}
		}
	}
}

// TestAttackNotesRenderSafely renders every attack note's body and checks
// the sanitized HTML element by element.
func TestAttackNotesRenderSafely(t *testing.T) {
	rd := newRenderer("/console/")
	for _, a := range readAttacks(t) {
		t.Run(a.Name, func(t *testing.T) {
			out, err := rd.render(a.Body, "payments")
			if err != nil {
				t.Fatal(err)
			}
			checkSafe(t, a.Name, string(out))
		})
	}
}

func TestWikilinks(t *testing.T) {
	rd := newRenderer("/console/")
	for _, c := range []struct{ in, want string }{
		{"[[facts/retry-budget]]", `<a href="/console/n/payments/facts/retry-budget" rel="nofollow noreferrer">facts/retry-budget</a>`},
		{"[[billing/decisions/ledger-entries|the ledger]]", `<a href="/console/n/billing/decisions/ledger-entries" rel="nofollow noreferrer">the ledger</a>`},
		{"[[payments/facts/x#anchor]]", `<a href="/console/n/payments/facts/x" rel="nofollow noreferrer">payments/facts/x</a>`},
		{"[[not a link]]", `[[not a link]]`},
		{"[[a/b/c/d]]", `[[a/b/c/d]]`},
		{"[[payments/nohall/x]]", `[[payments/nohall/x]]`},
	} {
		out, err := rd.render(c.in, "payments")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%q rendered %q, want %q in it", c.in, out, c.want)
		}
	}
}

// TestInputLimits: every input limit refuses with its named error.
func TestInputLimits(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"title over the limit", second(text("title", long(MaxTitleBytes+1), MaxTitleBytes, true, true)), ErrTooLong},
		{"title at the limit", second(text("title", long(MaxTitleBytes), MaxTitleBytes, true, true)), nil},
		{"blank title", second(text("title", "  ", MaxTitleBytes, true, true)), ErrRequired},
		{"title with a newline", second(text("title", "a\nb", MaxTitleBytes, true, true)), ErrInvalid},
		{"body over the limit", second(text("body", long(MaxBodyBytes+1), MaxBodyBytes, true, false)), ErrTooLong},
		{"body with newlines", second(text("body", "a\nb", MaxBodyBytes, true, false)), nil},
		{"invalid UTF-8", second(text("reason", "\xff", MaxReasonBytes, true, true)), ErrInvalid},
		{"reason over the limit", second(text("reason", long(MaxReasonBytes+1), MaxReasonBytes, true, true)), ErrTooLong},
		{"query over the limit", second(text("query", long(MaxQueryBytes+1), MaxQueryBytes, true, true)), ErrTooLong},
		{"cursor over the limit", second(token("cursor", long(MaxCursorBytes+1), MaxCursorBytes)), ErrTooLong},
		{"cursor with a space", second(token("cursor", "a b", MaxCursorBytes)), ErrInvalid},
		{"key over the limit", second(token("key", long(MaxKeyBytes+1), MaxKeyBytes)), ErrTooLong},
		{"too many tags", second(tags(strings.Repeat("t,", MaxTags+1))), ErrTooLong},
		{"a tag over the limit", second(tags(long(MaxTagBytes + 1))), ErrTooLong},
		{"tags", second(tags("a, b ,,c")), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.want == nil {
				if c.err != nil {
					t.Fatalf("refused: %v", c.err)
				}
				return
			}
			var in *InputError
			if !errors.Is(c.err, c.want) || !errors.As(c.err, &in) || in.Msg == "" {
				t.Fatalf("got %v, want %v in an *InputError", c.err, c.want)
			}
		})
	}
}

func second[T any](_ T, err error) error { return err }

// TestSafeNext: the page to return to after signing in is a console path,
// cleaned, never another site or another page of the gateway.
func TestSafeNext(t *testing.T) {
	c := &Console{prefix: "/console/"}
	for in, want := range map[string]string{
		"":                              "/console/",
		"/console/w/payments/inbox":     "/console/w/payments/inbox",
		"/console/search?q=a&scope=all": "/console/search?q=a&scope=all",
		"https://evil.example/":         "/console/",
		"//evil.example/console/":       "/console/",
		"/console/\\evil.example":       "/console/",
		"/consolex":                     "/console/",
		"/mcp":                          "/console/",
		"/console/\r\nLocation: x":      "/console/",
		"javascript:alert(1)":           "/console/",
		"/console/" + strings.Repeat("a", maxNextBytes): "/console/",
		// Cleaned before it is checked (issue 34): dot segments, encoded
		// ones too, never leave the console.
		"/console/../device?user_code=BCDF-GHJK":  "/console/",
		"/console/./../device":                    "/console/",
		"/console/%2e%2e/device":                  "/console/",
		"/console/%2E%2e/device":                  "/console/",
		"/console/.%2e/device":                    "/console/",
		"/console/..%2fdevice":                    "/console/",
		"/console/%2e%2e%2f%2e%2e%2fdevice":       "/console/",
		"/console/w/payments/../../../mcp":        "/console/",
		"/console/../consolex/":                   "/console/",
		"/console/%5c..%5cdevice":                 "/console/",
		"/console/%0d%0aLocation:%20x":            "/console/",
		"/console/%00":                            "/console/",
		"/\\evil.example/":                        "/console/",
		"/console/..":                             "/console/",
		"/console":                                "/console/",
		"console/w/payments":                      "/console/",
		"/console/w/../search?q=a":                "/console/search?q=a",
		"/console/./w/payments/":                  "/console/w/payments/",
		"/console/n/payments/facts/a%20b":         "/console/n/payments/facts/a%20b",
		"/console/search?q=%2e%2e%2f&next=//evil": "/console/search?q=%2e%2e%2f&next=//evil",
		"/console/w/payments#x":                   "/console/w/payments",
	} {
		if got := c.safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzRenderSafe: whatever the markdown, the rendered note holds only the
// allow-list's elements and attributes and links of the allowed schemes.
func FuzzRenderSafe(f *testing.F) {
	b, err := os.ReadFile("testdata/attacks.txt")
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var a attack
		if json.Unmarshal([]byte(line), &a) == nil {
			f.Add(a.Body)
		}
	}
	rd := newRenderer("/console/")
	f.Fuzz(func(t *testing.T, body string) {
		out, err := rd.render(body, "payments")
		if err != nil {
			t.Fatal(err)
		}
		checkSafe(t, "fuzz", string(out))
	})
}
