package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/offboard"
	"github.com/brainstem/brainstem/auth/sso"
)

// Offboarding: an operator ends a person's sign-ins, on every replica,
// without a shared database. Each replica follows the ended sign-ins file
// (a ConfigMap in Kubernetes; offboard.Watcher reads it every second) and
// takes entries posted to its admin endpoint (brainstem signins end posts
// to every replica); a token of that person issued before the entry's
// not_before is refused at /mcp, at /token (refresh) and in the console,
// and their cached shard tokens are dropped.

// Bounds of the admin endpoints.
const (
	// MinAdminTokenBytes is the shortest admin token accepted.
	MinAdminTokenBytes = 32
	maxAdminTokenFile  = 4 << 10
	maxAdminFormBytes  = 16 << 10
)

// loadSignins loads the ended sign-ins file into g.ended and reads the
// admin token; the watcher runs from start.
func (g *Gateway) loadSignins() error {
	c := g.cfg.Signins
	if c.EndedFile != "" {
		w, err := offboard.NewWatcher(c.EndedFile, g.ended, g.log, g.signinsEnded)
		if err != nil {
			return fmt.Errorf("gateway: signins.ended_file: %w", err)
		}
		g.endedWatcher = w
	}
	if c.AdminTokenFile != "" {
		b, err := os.ReadFile(c.AdminTokenFile)
		if err != nil {
			return fmt.Errorf("gateway: signins.admin_token_file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if len(b) > maxAdminTokenFile || len(tok) < MinAdminTokenBytes {
			return fmt.Errorf("gateway: signins.admin_token_file %s: want %d to %d bytes (openssl rand -hex 32)", c.AdminTokenFile, MinAdminTokenBytes, maxAdminTokenFile)
		}
		sum := sha256.Sum256([]byte(tok))
		g.adminToken = sum[:]
	}
	return nil
}

// runSignins follows the ended sign-ins file until ctx ends.
func (g *Gateway) runSignins(ctx context.Context) {
	if g.endedWatcher != nil {
		g.endedWatcher.Run(ctx, offboard.DefaultPollInterval)
	}
}

// signinsEnded drops the cached shard tokens of people whose sign-ins
// just ended.
func (g *Gateway) signinsEnded(emails []string) {
	n := g.grants.DropEmails(emails)
	g.log.Warn("offboard: sign-ins ended; their cached sessions are dropped", "emails", emails, "sessions_dropped", n)
}

// adminAuthorized checks the operator's bearer token in constant time.
func (g *Gateway) adminAuthorized(w http.ResponseWriter, r *http.Request) bool {
	if g.adminToken == nil {
		http.Error(w, "the sign-in admin endpoints are off: set signins.admin_token_file", http.StatusNotFound)
		return false
	}
	raw, err := sso.BearerToken(r.Header)
	sum := sha256.Sum256([]byte(raw))
	if err != nil || subtle.ConstantTimeCompare(sum[:], g.adminToken) != 1 {
		g.log.Warn("offboard: admin request refused: wrong or missing operator token", "path", r.URL.Path, "client_ip", peerHost(r))
		w.Header().Set("WWW-Authenticate", `Bearer realm="brainstem-admin"`)
		http.Error(w, "send the operator token (signins.admin_token_file) as Authorization: Bearer", http.StatusUnauthorized)
		return false
	}
	return true
}

// serveSignins is GET /signins?email=: the person's entry and the
// sign-ins this replica saw (no email: every entry and sign-in).
func (g *Gateway) serveSignins(w http.ResponseWriter, r *http.Request) {
	if !g.adminAuthorized(w, r) {
		return
	}
	email := r.URL.Query().Get("email")
	if email != "" {
		var err error
		if email, err = auth.CanonicalEmail(email); err != nil {
			http.Error(w, "email: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	g.writeSignins(w, email, false)
}

// serveSigninsEnd is POST /signins/end (form: email, and optionally
// not_before in RFC 3339, default now rounded up to the second, and
// reason): the person's sign-ins end on this replica at once.
func (g *Gateway) serveSigninsEnd(w http.ResponseWriter, r *http.Request) {
	if !g.adminAuthorized(w, r) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxAdminFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read: "+err.Error(), http.StatusBadRequest)
		return
	}
	e := offboard.Entry{Email: r.PostForm.Get("email"), Reason: r.PostForm.Get("reason"), NotBefore: offboard.CeilSecond(g.now())}
	if nb := r.PostForm.Get("not_before"); nb != "" {
		t, err := time.Parse(time.RFC3339, nb)
		if err != nil {
			http.Error(w, "not_before: want RFC 3339, e.g. "+e.NotBefore.UTC().Format(time.RFC3339), http.StatusBadRequest)
			return
		}
		e.NotBefore = t
	}
	changed, err := g.ended.Post(e)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ce, _ := offboard.Check(e)
	if changed {
		g.signinsEnded([]string{ce.Email})
	}
	g.log.Warn("offboard: sign-ins ended by an operator on this replica", "email", ce.Email,
		"not_before", ce.NotBefore.Format(time.RFC3339), "reason", ce.Reason, "client_ip", peerHost(r))
	g.writeSignins(w, ce.Email, changed)
}

func (g *Gateway) writeSignins(w http.ResponseWriter, email string, changed bool) {
	rep := offboard.Report{Ended: []offboard.Entry{}, SignIns: []offboard.SignIn{}, Changed: changed}
	rep.Replica, _ = os.Hostname()
	for _, e := range g.ended.Entries() {
		if email == "" || e.Email == email {
			rep.Ended = append(rep.Ended, e)
		}
	}
	if g.facade != nil {
		if s := g.facade.SignIns(email); s != nil {
			rep.SignIns = s
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(rep)
}

func peerHost(r *http.Request) string {
	h := r.RemoteAddr
	if i := strings.LastIndexByte(h, ':'); i > 0 {
		h = h[:i]
	}
	return h
}
