package hooks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/smallfile"
	"github.com/brainstem/brainstem/signin"
)

// Which gateway the hooks call, first that applies:
//
//  1. --url (or BRAINSTEM_URL): the plugin passes its configured URL so;
//  2. url in the settings file (hooks.json);
//  3. the one sign-in `brainstem login` stored.
//
// The token is that URL's stored sign-in. session-start, stop and
// pre-compact refresh it when it expires within refreshMargin (and save
// the new tokens where `brainstem login` keeps them); prompt, whose time
// box is short, uses it only while it is fresh and never refreshes, so
// that a refresh is never cut off half-way.
const (
	refreshMargin = 10 * time.Minute
	freshMargin   = 5 * time.Second
	// maxStoredScan bounds the sign-in files read to find the one stored.
	maxStoredScan = 64
)

// account is the gateway a hook calls and who the person is there.
type account struct {
	gw    *gatewayClient
	email string
}

// signIn finds the gateway and the person's token. On failure it returns
// the systemMessage naming the fix, or "" for a failure the person cannot
// fix (the hook then says nothing).
func (r *runner) signIn(ctx context.Context, refresh bool) (*account, string) {
	mcpURL, msg := r.gatewayURL()
	if msg != "" {
		return nil, msg
	}
	store := &signin.Store{Dir: filepath.Join(r.configDir, "signins")}
	var rec *signin.Record
	var err error
	if refresh {
		sc := &signin.Client{Store: store, HTTP: r.hc, Now: r.now, RefreshMargin: refreshMargin}
		rec, err = sc.Token(ctx, mcpURL)
	} else if rec, err = store.Load(mcpURL); err == nil && !rec.Fresh(r.now(), freshMargin) {
		return nil, "" // stale: the next session-start or stop refreshes it
	}
	login := fmt.Sprintf("run `brainstem login %s`", mcpURL)
	switch {
	case errors.Is(err, signin.ErrNotSignedIn):
		return nil, fmt.Sprintf("Brainstem hooks: not signed in to %s; %s.", mcpURL, login)
	case errors.Is(err, signin.ErrSignInEnded):
		return nil, fmt.Sprintf("Brainstem hooks: your sign-in to %s has ended; %s.", mcpURL, login)
	case errors.Is(err, signin.ErrInsecureFile), errors.Is(err, signin.ErrRecord):
		return nil, fmt.Sprintf("Brainstem hooks: the stored sign-in for %s is unusable (other users may read it, or it is damaged); %s.", mcpURL, login)
	case err != nil:
		return nil, "" // the token endpoint is down, or the time box ended: nothing to fix
	}
	return &account{gw: &gatewayClient{url: mcpURL, token: rec.AccessToken, hc: r.hc}, email: rec.Email}, ""
}

// gatewayURL is the MCP URL of the gateway, or the message naming the fix.
func (r *runner) gatewayURL() (string, string) {
	raw, from := r.opt.URL, "--url (or BRAINSTEM_URL)"
	if raw == "" {
		raw, from = r.settings.URL, "url in "+settingsPath(r.configDir)
	}
	if raw != "" {
		u := raw
		if r.opt.MCPURL != nil {
			var err error
			if u, err = r.opt.MCPURL(raw); err != nil {
				return "", fmt.Sprintf("Brainstem hooks: %s is not a gateway URL (%v); fix %s.", jsonString(raw), err, from)
			}
		}
		return u, ""
	}
	urls := storedURLs(filepath.Join(r.configDir, "signins"))
	switch len(urls) {
	case 0:
		return "", "Brainstem hooks: not signed in to a brain; run `brainstem login <url>` (or pass --url)."
	case 1:
		return urls[0], ""
	default:
		return "", fmt.Sprintf("Brainstem hooks: you are signed in to several brains (%s); choose one with url in %s or --url.",
			strings.Join(urls, ", "), settingsPath(r.configDir))
	}
}

// storedURLs are the MCP URLs of the sign-ins kept in dir, sorted.
func storedURLs(dir string) []string {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	names, _ := f.Readdirnames(maxStoredScan)
	_ = f.Close()
	var urls []string
	for _, n := range names {
		if filepath.Ext(n) != ".json" || strings.HasPrefix(n, ".") {
			continue
		}
		b, err := smallfile.Read(filepath.Join(dir, n), signin.MaxRecordBytes)
		if err != nil {
			continue
		}
		if rec, err := signin.DecodeRecord(b); err == nil && !slices.Contains(urls, rec.MCPURL) {
			urls = append(urls, rec.MCPURL)
		}
	}
	slices.Sort(urls)
	return urls
}
