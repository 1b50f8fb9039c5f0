package console_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

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

	for _, tool := range []string{"brain_promote", "brain_write", "brain_archive", "brain_restore"} {
		if !strings.Contains(audit.String(), `"email":"alice@example.com"`) || !strings.Contains(audit.String(), `"tool":"`+tool+`"`) {
			t.Errorf("the audit log has no %s by alice", tool)
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
