package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/tooling/devenv"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// TestNextStaysInConsole: the page to return to after signing in is
// cleaned as the browser will resolve it (dot segments, encoded ones
// too) before it is checked, so a sign-in link never ends outside the
// console: /console/../device?user_code=… ended at the device flow's
// approval page (issue 34). A console page is kept, cleaned. The links of
// the attack note next-leaves-console, as its page shows them, are
// followed too.
func TestNextStaysInConsole(t *testing.T) {
	env, _ := startEnv(t)
	gw := mustURL(t, env.ConsoleURL)
	// landed stops the sign-in at the redirect that leaves the sign-in.
	landed := func(u *url.URL) bool {
		return u.Host == gw.Host && u.Path != "/console/callback" && !strings.HasPrefix(u.Path, "/oauth/")
	}
	next := func(n string) string { return "login?next=" + url.QueryEscape(n) }
	type signInCase struct{ name, login, want string }
	var noted []signInCase
	for i, link := range attackLinks(t, env, "next-leaves-console") {
		noted = append(noted, signInCase{fmt.Sprintf("the attack note's link %d", i+1), link, "/console/"})
	}
	if len(noted) < 6 {
		t.Fatalf("the attack note next-leaves-console shows %d sign-in links", len(noted))
	}
	for _, c := range append([]signInCase{
		// The reproduction of issue 34, as sent.
		{"dot-dot to the device page", "login?next=/console/../device?user_code=BCDF-GHJK", "/console/"},
		{"encoded dots", next("/console/%2e%2e/device?user_code=BCDF-GHJK"), "/console/"},
		{"upper-case encoded dots", next("/console/%2E%2E/device?user_code=BCDF-GHJK"), "/console/"},
		{"half-encoded dots", next("/console/.%2e/device?user_code=BCDF-GHJK"), "/console/"},
		{"an encoded slash", next("/console/..%2fdevice?user_code=BCDF-GHJK"), "/console/"},
		{"dot then dot-dot", next("/console/./../device?user_code=BCDF-GHJK"), "/console/"},
		{"deeper dot-dots", next("/console/w/payments/../../../device"), "/console/"},
		{"to the console's sibling", next("/console/../consolex/"), "/console/"},
		{"a backslash", next("/console/\\..\\device"), "/console/"},
		{"an encoded backslash", next("/console/%5c..%5cdevice"), "/console/"},
		{"another host", next("//evil.example/console/"), "/console/"},
		{"another host, backslashed", next("/\\evil.example/console/"), "/console/"},
		{"a console page", next("/console/w/payments/inbox"), "/console/w/payments/inbox"},
		{"a console page after dots, cleaned", next("/console/w/../search?q=ledger"), "/console/search?q=ledger"},
	}, noted...) {
		t.Run(c.name, func(t *testing.T) {
			p, err := testbrowser.New().SignIn(context.Background(), env.ConsoleURL+c.login, landed, "alice@example.com", "")
			if err != nil {
				t.Fatal(err)
			}
			if p.URL.Path != "/console/callback" || p.Status != http.StatusSeeOther || p.Location.Host != gw.Host || p.Location.RequestURI() != c.want {
				t.Fatalf("%s answered %d, Location %v; want %s", p.URL.Path, p.Status, p.Location, c.want)
			}
		})
	}
}

// attackLinks writes the attack note name of testdata/attacks.txt through
// the console's form and returns the sign-in links its page shows,
// relative to the console, as a reader would follow them.
func attackLinks(t *testing.T, env *devenv.Env, name string) []string {
	t.Helper()
	i := slices.IndexFunc(attacks(t), func(a attack) bool { return a.Name == name })
	if i < 0 {
		t.Fatalf("attacks.txt has no %s", name)
	}
	a := attacks(t)[i]
	alice := signIn(t, env, "alice@example.com", "")
	form := alice.mustGet("w/payments/new")
	ans := alice.submit(form, alice.form(form, "/new"), map[string]string{"title": a.Title, "body": a.Body, "hall": "facts", "slug": "attack-" + a.Name, "inbox": ""})
	if ans.Status != http.StatusSeeOther {
		t.Fatalf("write: %d: %s", ans.Status, testbrowser.Text(ans.Body))
	}
	page := alice.mustGet(strings.TrimPrefix(ans.Location.Path, "/console/"))
	var links []string
	for _, m := range regexp.MustCompile(`href="/console/(login\?[^"]*)"`).FindAllStringSubmatch(page.Body, -1) {
		links = append(links, html.UnescapeString(m[1]))
	}
	return links
}
