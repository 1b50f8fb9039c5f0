package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/brainstem/brainstem/gateway"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// TestCuratorsDay is the acceptance's curator's day over HTTP: sign in at
// the dev IdP, open the payments inbox, edit a note's slug and hall and
// promote it, find it in search, open it and its history, restore an older
// version, archive a note, sign out; a cookie replayed after sign-out is
// refused, and every change is authored and audited as the signed-in email.
func TestCuratorsDay(t *testing.T) {
	env, audit := startEnv(t)
	alice := signIn(t, env, "alice@example.com", "")

	inbox := alice.mustGet("w/payments/inbox")
	if !strings.Contains(inbox.Body, "Black Friday ledger throughput numbers") {
		t.Fatalf("the payments inbox lacks its notes: %s", testbrowser.Text(inbox.Body))
	}
	note := alice.mustGet("w/payments/inbox/2026-11-29-black-friday-ledger-throughput")
	promoted := alice.submit(note, alice.form(note, "/promote"), map[string]string{
		"slug": "black-friday-2026-throughput", "hall": "sources", "title": "Black Friday 2026 ledger throughput"})
	if promoted.Status != http.StatusSeeOther || promoted.Location.Path != "/console/n/payments/sources/black-friday-2026-throughput" {
		t.Fatalf("promote: %d %v: %s", promoted.Status, promoted.Location, testbrowser.Text(promoted.Body))
	}
	page := alice.mustGet("n/payments/sources/black-friday-2026-throughput")
	for _, want := range []string{"Black Friday 2026 ledger throughput", "promoted_by", "alice@example.com", "Peak on 27 Nov"} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("the promoted note's page lacks %q", want)
		}
	}
	if strings.Contains(alice.mustGet("w/payments/inbox").Body, "Black Friday") {
		t.Error("the promoted note is still in the inbox")
	}

	found := alice.mustGet("search?q=" + url.QueryEscape("black friday throughput") + "&scope=all")
	if !strings.Contains(found.Body, `href="/console/n/payments/sources/black-friday-2026-throughput"`) {
		t.Fatalf("search does not find the promoted note: %s", testbrowser.Text(found.Body))
	}
	inboxHits := alice.mustGet("search?q=" + url.QueryEscape("chargeback evidence") + "&scope=inbox")
	if !strings.Contains(inboxHits.Body, `href="/console/w/payments/inbox/2026-11-25-chargeback-evidence-automation"`) {
		t.Fatalf("an inbox search does not link the inbox note: %s", testbrowser.Text(inboxHits.Body))
	}

	// An update makes a second version to restore from.
	target := "n/payments/facts/ledger-double-entry-model"
	hist := alice.mustGet(target + "/history")
	forms, _ := hist.Forms()
	restores := 0
	for _, f := range forms {
		if strings.HasSuffix(f.Action.Path, "/restore") {
			restores++
		}
	}
	if restores != 0 {
		t.Fatalf("a note with one version offers %d restores", restores)
	}
	edit := alice.mustGet("w/payments/new")
	wrote := alice.submit(edit, alice.form(edit, "/new"), map[string]string{"title": "Refunds post as reversals",
		"body": "A refund is a reversal of the [[facts/ledger-double-entry-model]] entries.\n", "hall": "decisions", "inbox": ""})
	if wrote.Status != http.StatusSeeOther || wrote.Location.Path != "/console/n/payments/decisions/refunds-post-as-reversals" {
		t.Fatalf("new note: %d %v: %s", wrote.Status, wrote.Location, testbrowser.Text(wrote.Body))
	}
	written := alice.mustGet("n/payments/decisions/refunds-post-as-reversals")
	arch := alice.submit(written, alice.form(written, "/archive"), map[string]string{"reason": "written by mistake"})
	if arch.Status != http.StatusSeeOther || arch.Location.Path != "/console/w/payments/archive" {
		t.Fatalf("archive: %d: %s", arch.Status, testbrowser.Text(arch.Body))
	}
	if p := alice.get("n/payments/decisions/refunds-post-as-reversals"); p.Status != http.StatusNotFound {
		t.Fatalf("an archived note's page: %d", p.Status)
	}
	archive := alice.mustGet("w/payments/archive")
	if !strings.Contains(archive.Body, "written by mistake") || !strings.Contains(archive.Body, "Refunds post as reversals") {
		t.Fatalf("the archive lacks the note: %s", testbrowser.Text(archive.Body))
	}
	// Restore the archived note's last version from its history.
	hist = alice.mustGet("n/payments/decisions/refunds-post-as-reversals/history")
	restored := alice.submit(hist, alice.form(hist, "/restore"), map[string]string{"reason": "it was right after all"})
	if restored.Status != http.StatusSeeOther {
		t.Fatalf("restore: %d: %s", restored.Status, testbrowser.Text(restored.Body))
	}
	if p := alice.mustGet("n/payments/decisions/refunds-post-as-reversals/history"); !strings.Contains(p.Body, "it was right after all") ||
		!strings.Contains(p.Body, "restore") {
		t.Fatalf("history lacks the restore: %s", testbrowser.Text(p.Body))
	}
	if p := alice.mustGet("n/payments/decisions/refunds-post-as-reversals"); !strings.Contains(p.Body, "ledger-double-entry-model") {
		t.Fatalf("the restored note: %s", testbrowser.Text(p.Body))
	}
	// The promoted note's history: the promotion's diff against the inbox version.
	ph := alice.mustGet("n/payments/sources/black-friday-2026-throughput/history")
	m := regexp.MustCompile(`href="/console/(n/payments/sources/black-friday-2026-throughput/diff\?from=[0-9a-f]{40}&amp;to=[0-9a-f]{40})"`).FindStringSubmatch(ph.Body)
	if m == nil {
		t.Fatalf("the history offers no diff of a change: %s", testbrowser.Text(ph.Body))
	}
	if d := alice.mustGet(strings.ReplaceAll(m[1], "&amp;", "&")); !strings.Contains(d.Body, `class="add"`) || !strings.Contains(d.Body, "promoted_by: alice@example.com") {
		t.Fatalf("the promotion's diff: %s", testbrowser.Text(d.Body))
	}

	// Every change is audited as a tool call by the signed-in email.
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(audit.String()), "\n") {
		var l gateway.AuditLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if l.Email != "alice@example.com" {
			t.Errorf("an audit line of another email: %s", line)
		}
		if l.Outcome == "ok" && l.Wing == "payments" {
			seen[l.Tool] = true
		}
	}
	for _, tool := range []string{"brain_pending", "brain_get", "brain_links", "brain_history", "brain_diff", "brain_promote", "brain_write", "brain_archive", "brain_restore"} {
		if !seen[tool] {
			t.Errorf("the audit log has no successful %s by alice in payments", tool)
		}
	}

	// Sign out; the old cookie replayed is refused.
	cookies := alice.b.Cookies(mustURL(t, env.ConsoleURL))
	home := alice.mustGet("")
	out := alice.submit(home, alice.form(home, "/logout"), nil)
	if out.Status != http.StatusSeeOther || out.Location.Path != "/console/signed-out" {
		t.Fatalf("sign-out: %d %v", out.Status, out.Location)
	}
	if p := alice.get(""); p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location.Path, "/console/login") {
		t.Fatalf("after sign-out the console should send to the sign-in: %d", p.Status)
	}
	thief := testbrowser.New()
	thief.SetCookies(mustURL(t, env.ConsoleURL), cookies)
	if p, err := thief.Get(t.Context(), env.ConsoleURL+"w/payments/inbox"); err != nil || p.Status != http.StatusUnauthorized || strings.Contains(p.Body, "Chargeback") {
		t.Fatalf("a cookie replayed after sign-out: %v %d: %s", err, p.Status, testbrowser.Text(p.Body))
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func body(t testing.TB, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUnreadableLikeMissing: as bob, people-ops (which he cannot reach)
// answers exactly as a wing that does not exist, its notes as missing
// notes; payments (read only) shows no promote or archive form, and a
// forged promote POST with his own valid CSRF token is refused by the
// shard's capability check.
func TestUnreadableLikeMissing(t *testing.T) {
	env, _ := startEnv(t)
	bob := signIn(t, env, "bob@example.com", "")
	pairs := [][2]string{
		{"w/people-ops", "w/no-such-wing"},
		{"w/people-ops/inbox", "w/no-such-wing/inbox"},
		{"w/people-ops/archive", "w/no-such-wing/archive"},
		{"w/people-ops/new", "w/no-such-wing/new"},
		{"w/people-ops/inbox/2026-11-21-on-call-swap-etiquette", "w/no-such-wing/inbox/2026-11-21-on-call-swap-etiquette"},
		{"n/people-ops/facts/leave-policy-summary", "n/payments/facts/no-such-note"},
		{"n/people-ops/facts/leave-policy-summary/history", "n/payments/facts/no-such-note/history"},
		{"n/people-ops/facts/leave-policy-summary", "no/such/page"},
	}
	for _, p := range pairs {
		hidden, missing := bob.get(p[0]), bob.get(p[1])
		if hidden.Status != http.StatusNotFound || missing.Status != http.StatusNotFound || hidden.Body != missing.Body {
			t.Errorf("%s (%d) and %s (%d) must be the same 404:\n%s\n%s", p[0], hidden.Status, p[1], missing.Status,
				testbrowser.Text(hidden.Body), testbrowser.Text(missing.Body))
		}
	}
	if home := bob.mustGet(""); strings.Contains(home.Body, "people-ops") {
		t.Error("bob's home names people-ops")
	}
	if s := bob.mustGet("search?q=leave+policy&scope=all"); strings.Contains(s.Body, `href="/console/n/people-ops/`) || strings.Contains(s.Body, `href="/console/w/people-ops/`) {
		t.Error("bob's search shows people-ops notes")
	}
	inboxNote := bob.mustGet("w/payments/inbox/2026-11-18-psp-timeout-tuning")
	if strings.Contains(inboxNote.Body, "/promote") || strings.Contains(inboxNote.Body, "/archive\"") {
		t.Error("bob sees a promote or archive form in payments, where he may not curate")
	}
	if inbox := bob.mustGet("w/payments/inbox"); !strings.Contains(inbox.Body, "needs the curate capability") {
		t.Error("bob's payments inbox does not say promoting needs curate")
	}
	// A forged promote: a well-formed form with bob's own CSRF token.
	resp := bob.post("w/payments/inbox/2026-11-18-psp-timeout-tuning/promote",
		url.Values{"csrf": {bob.csrf()}, "hall": {"decisions"}}, http.Header{"Origin": {strings.TrimSuffix(env.ConsoleURL, "/console/")}})
	if b := body(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(b, "forbidden") || !strings.Contains(b, "curate") {
		t.Fatalf("a forged promote by bob: %d: %s", resp.StatusCode, testbrowser.Text(b))
	}
	if p := bob.mustGet("w/payments/inbox"); !strings.Contains(p.Body, "psp-timeout-tuning") {
		t.Fatal("the inbox note is gone after a refused promote")
	}
}

// TestForgedRequests: a cross-site form post (Origin, Sec-Fetch-Site), a
// form without the CSRF token or with another session's, and a stolen
// cookie replayed after sign-out are refused and change nothing.
func TestForgedRequests(t *testing.T) {
	env, _ := startEnv(t)
	alice := signIn(t, env, "alice@example.com", "")
	other := signIn(t, env, "alice@example.com", "")
	origin := strings.TrimSuffix(env.ConsoleURL, "/console/")
	path := "w/payments/inbox/2026-11-18-psp-timeout-tuning/promote"
	good := url.Values{"csrf": {alice.csrf()}, "hall": {"decisions"}}
	for _, c := range []struct {
		name   string
		vals   url.Values
		header http.Header
		status int
	}{
		{"cross-site origin", good, http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"same-site other port", good, http.Header{"Origin": {"http://127.0.0.1:1"}}, http.StatusForbidden},
		{"sec-fetch-site cross-site", good, http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"sec-fetch-site same-site", good, http.Header{"Sec-Fetch-Site": {"same-site"}, "Origin": {origin}}, http.StatusForbidden},
		{"no csrf token", url.Values{"hall": {"decisions"}}, http.Header{"Origin": {origin}}, http.StatusForbidden},
		{"another session's token", url.Values{"csrf": {other.csrf()}, "hall": {"decisions"}}, http.Header{"Origin": {origin}}, http.StatusForbidden},
		{"a form over the limit", url.Values{"csrf": {alice.csrf()}, "hall": {"decisions"}, "body": {strings.Repeat("a", 600<<10)}}, http.Header{"Origin": {origin}}, http.StatusRequestEntityTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := alice.post(path, c.vals, c.header)
			if b := body(t, resp); resp.StatusCode != c.status {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, c.status, testbrowser.Text(b))
			}
		})
	}
	if p := alice.mustGet("w/payments/inbox"); !strings.Contains(p.Body, "psp-timeout-tuning") {
		t.Fatal("a refused request promoted the note")
	}
	// A post without the cookie (a cross-site post: SameSite=Lax keeps it
	// back) is refused and clears nothing; a tampered cookie is refused.
	anon := &user{t: t, b: testbrowser.New(), console: env.ConsoleURL}
	resp := anon.post(path, good, http.Header{"Origin": {"http://evil.example"}})
	if b := body(t, resp); resp.StatusCode != http.StatusUnauthorized || len(resp.Header.Values("Set-Cookie")) != 0 {
		t.Fatalf("a post without the cookie: %d %v: %s", resp.StatusCode, resp.Header.Values("Set-Cookie"), testbrowser.Text(b))
	}
	tampered := 0
	for _, c := range alice.b.Cookies(mustURL(t, env.ConsoleURL)) {
		if c.Name != "brainstem-console-signin" {
			continue
		}
		tampered++
		forged := testbrowser.New()
		v := []byte(c.Value)
		v[len(v)/2] ^= 1
		forged.SetCookies(mustURL(t, env.ConsoleURL), []*http.Cookie{{Name: c.Name, Value: string(v), Path: "/"}})
		if p, err := forged.Get(t.Context(), env.ConsoleURL+"w/payments/inbox"); err != nil || p.Status != http.StatusUnauthorized {
			t.Fatalf("a tampered cookie: %v %d", err, p.Status)
		}
	}
	if tampered != 1 {
		t.Fatalf("%d session cookies", tampered)
	}
	// Sign out, then replay the cookie and a valid-looking form.
	cookies := alice.b.Cookies(mustURL(t, env.ConsoleURL))
	token := alice.csrf()
	home := alice.mustGet("")
	alice.submit(home, alice.form(home, "/logout"), nil)
	thief := &user{t: t, b: testbrowser.New(), console: env.ConsoleURL}
	thief.b.SetCookies(mustURL(t, env.ConsoleURL), cookies)
	resp = thief.post(path, url.Values{"csrf": {token}, "hall": {"decisions"}}, http.Header{"Origin": {origin}})
	if b := body(t, resp); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a replayed cookie's POST: %d: %s", resp.StatusCode, testbrowser.Text(b))
	}
	if p := thief.get("w/payments/inbox"); p.Status != http.StatusUnauthorized {
		t.Fatalf("a replayed cookie's GET: %d", p.Status)
	}
	if p := other.mustGet("w/payments/inbox"); !strings.Contains(p.Body, "psp-timeout-tuning") {
		t.Fatal("the replayed POST promoted the note")
	}
}

// TestSecurityHeaders: every answer of the console, signed in or not,
// carries the CSP, framing, sniffing and referrer headers; the session
// cookie is HttpOnly, SameSite=Lax, and not Secure on loopback http.
func TestSecurityHeaders(t *testing.T) {
	env, _ := startEnv(t)
	alice := signIn(t, env, "alice@example.com", "")
	anon := &user{t: t, b: testbrowser.New(), console: env.ConsoleURL}
	pages := []*testbrowser.Page{anon.get(""), anon.get("signed-out"), anon.get("callback"), anon.get("static/console.css"),
		alice.get(""), alice.get("w/payments"), alice.get("w/payments/inbox"), alice.get("n/payments/facts/ledger-double-entry-model"),
		alice.get("n/payments/facts/ledger-double-entry-model/history"), alice.get("search?q=ledger"), alice.get("w/payments/new"),
		alice.get("w/payments/archive"), alice.get("nope")}
	for _, p := range pages {
		h := p.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP %q", p.URL.Path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s: headers %v", p.URL.Path, h)
		}
	}
	if strings.Contains(alice.mustGet("").Body, "<script") || strings.Contains(alice.mustGet("").Body, "style=") {
		t.Error("a page carries inline script or style")
	}
	login := anon.get("login")
	var found bool
	for _, c := range login.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "brainstem-console-login=") {
			found = true
			if !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Lax") || strings.Contains(c, "Secure") {
				t.Errorf("login cookie %q", c)
			}
		}
	}
	if !found || login.Status != http.StatusFound {
		t.Errorf("login: %d, cookies %v", login.Status, login.Header.Values("Set-Cookie"))
	}
}

// TestAttackNotesThroughTheGateway writes every attack note through the
// console's form, then reads its page: nothing of the attack is left as
// markup (the browser test checks that no script runs).
func TestAttackNotesThroughTheGateway(t *testing.T) {
	env, _ := startEnv(t)
	alice := signIn(t, env, "alice@example.com", "")
	for _, a := range attacks(t) {
		t.Run(a.Name, func(t *testing.T) {
			form := alice.mustGet("w/payments/new")
			ans := alice.submit(form, alice.form(form, "/new"), map[string]string{"title": a.Title, "body": a.Body,
				"tags": strings.Join(a.Tags, ","), "hall": "facts", "slug": "attack-" + a.Name, "inbox": ""})
			if ans.Status != http.StatusSeeOther {
				t.Fatalf("write: %d: %s", ans.Status, testbrowser.Text(ans.Body))
			}
			p := alice.mustGet(strings.TrimPrefix(ans.Location.Path, "/console/"))
			checkPage(t, p.Body)
			if !strings.Contains(p.Body, "Frontmatter") {
				t.Error("the page shows no frontmatter")
			}
		})
	}
}

// pageElements are the elements a console page may hold: its own frame and
// forms, and the sanitizer's allow-list inside a note.
const pageElements = "html head meta title link body header nav main section article aside h1 h2 h3 h4 h5 h6 p br hr " +
	"a ul ol li span strong em del code pre blockquote table caption thead tbody tr th td form input button label select option textarea fieldset legend"

// checkPage parses a page and fails on any element outside pageElements,
// any event-handler or style attribute, a link, form or resource to
// another scheme than http(s), mailto or relative, a stylesheet or form
// target of another origin, and any meta but the charset and viewport.
func checkPage(t *testing.T, page string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		if !slices.Contains(strings.Fields(pageElements), tok.Data) {
			t.Errorf("element <%s>", tok.Data)
		}
		for _, a := range tok.Attr {
			k := strings.ToLower(a.Key)
			switch {
			case strings.HasPrefix(k, "on") || k == "style" || k == "srcdoc" || k == "formaction" || k == "src":
				t.Errorf("attribute %s=%q on <%s>", k, a.Val, tok.Data)
			case k == "href" || k == "action":
				u, err := url.Parse(strings.TrimSpace(a.Val))
				if err != nil || (u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "mailto") {
					t.Errorf("%s=%q on <%s>", k, a.Val, tok.Data)
				}
				if (tok.Data == "form" || tok.Data == "link") && !strings.HasPrefix(a.Val, "/console/") {
					t.Errorf("<%s %s=%q> leaves the console", tok.Data, k, a.Val)
				}
			case tok.Data == "meta" && k != "charset" && !(k == "name" && a.Val == "viewport") && k != "content":
				t.Errorf("<meta %s=%q>", k, a.Val)
			}
		}
	}
}

// TestNoteLinks: a note page shows its outbound links, backlinks, tunnels
// to other wings and tunnels in from the other wings the reader reads.
func TestNoteLinks(t *testing.T) {
	env, _ := startEnv(t)
	alice := signIn(t, env, "alice@example.com", "")
	p := alice.mustGet("n/payments/facts/pci-dss-scope-boundary")
	if !strings.Contains(p.Body, `href="/console/n/platform/facts/cluster-inventory"`) {
		t.Errorf("no tunnel in from platform: %s", testbrowser.Text(p.Body))
	}
	p = alice.mustGet("n/platform/facts/rpc-latency-budgets")
	for _, want := range []string{`href="/console/n/payments/facts/psp-integrations-overview"`, `href="/console/n/platform/decisions/standardise-on-opentelemetry-tracing"`} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("the note page lacks the link %s", want)
		}
	}
}
