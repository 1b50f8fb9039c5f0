package console

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/oauth"
)

// PathPrefix is the console's path below the gateway's public URL.
const PathPrefix = "/console/"

// clientName is the console's name as a client of the facade.
const clientName = "Brainstem console"

// Result is a tool's answer: its text content and whether it is a tool
// error (a brain.ErrorBody).
type Result struct {
	Text    []byte
	IsError bool
}

// Tools runs the brain tools as a verified person, exactly as /mcp does.
type Tools interface {
	Call(ctx context.Context, id auth.Identity, tool string, args []byte) Result
}

// Options are the console's dependencies.
type Options struct {
	// PublicURL is the gateway's public URL, without a trailing slash.
	PublicURL string
	// Facade is the gateway's authorization server, which signs the
	// console's users in and seals its cookies.
	Facade *oauth.Server
	// Tools calls the brain tools.
	Tools Tools
	// Logger receives sign-in events and failures; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Console serves the console's pages. It is safe for concurrent use.
type Console struct {
	facade   *oauth.Server
	tools    Tools
	log      *slog.Logger
	now      func() time.Time
	origin   string // scheme://host of the public URL
	prefix   string // the path of the console, ending in "/"
	url      string // the console's URL
	callback string // the redirect URI registered with the facade
	clientID string
	pages    map[string]*template.Template
	rd       *renderer
	static   http.Handler
	mux      *http.ServeMux
}

//go:embed templates/*.html static/*
var assets embed.FS

// New builds the console and registers it with the facade as a first-party
// client.
func New(opt Options) (*Console, error) {
	if opt.Facade == nil || opt.Tools == nil {
		return nil, errors.New("console: needs the authorization server and the tools")
	}
	u, err := url.Parse(strings.TrimRight(opt.PublicURL, "/"))
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("console: public URL %q is not a URL", opt.PublicURL)
	}
	c := &Console{facade: opt.Facade, tools: opt.Tools, log: opt.Logger, now: opt.Now,
		origin: u.Scheme + "://" + u.Host, prefix: u.Path + PathPrefix}
	c.log = cmp.Or(c.log, slog.New(slog.DiscardHandler))
	if c.now == nil {
		c.now = time.Now
	}
	c.url = c.origin + c.prefix
	c.rd = newRenderer(c.prefix)
	c.callback = c.url + "callback"
	if c.clientID, err = opt.Facade.RegisterFirstParty(clientName, c.callback); err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	sub, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c.static = http.StripPrefix(c.prefix+"static/", http.FileServer(http.FS(sub)))
	c.routes()
	return c, nil
}

// Prefix is the path the console serves, ending in "/" (a ServeMux pattern
// for the whole console).
func (c *Console) Prefix() string { return c.prefix }

// URL is the console's address.
func (c *Console) URL() string { return c.url }

// routes registers every page.
func (c *Console) routes() {
	p := c.prefix
	m := http.NewServeMux()
	get := func(path string, h pageHandler) { m.HandleFunc("GET "+p+path, c.page(h)) }
	post := func(path string, h pageHandler) { m.HandleFunc("POST "+p+path, c.form(h)) }
	m.HandleFunc("GET "+p+"login", c.serveLogin)
	m.HandleFunc("GET "+p+"callback", c.serveCallback)
	m.HandleFunc("GET "+p+"signed-out", func(w http.ResponseWriter, _ *http.Request) {
		c.plainPage(w, http.StatusOK, "Signed out", "You are signed out of the Brainstem console.", true)
	})
	m.HandleFunc("POST "+p+"logout", c.serveLogout)
	m.HandleFunc("GET "+p+"static/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		c.static.ServeHTTP(w, r)
	})
	get("{$}", c.home)
	get("search", c.search)
	get("w/{wing}", c.listPage(false))
	get("w/{wing}/inbox", of((*request).wingOf, c.inbox))
	get("w/{wing}/inbox/{name}", of((*request).inboxOf, c.inboxNote))
	post("w/{wing}/inbox/{name}/promote", of((*request).inboxOf, c.promote))
	post("w/{wing}/inbox/{name}/archive", of((*request).inboxOf, c.archiveInbox))
	get("w/{wing}/archive", c.listPage(true))
	get("w/{wing}/new", of((*request).wingOf, c.newNote))
	post("w/{wing}/new", of((*request).wingOf, c.writeNote))
	get("n/{wing}/{hall}/{slug}", of((*request).noteOf, c.note))
	get("n/{wing}/{hall}/{slug}/history", of((*request).noteOf, c.history))
	get("n/{wing}/{hall}/{slug}/diff", of((*request).noteOf, c.diff))
	post("n/{wing}/{hall}/{slug}/restore", of((*request).noteOf, c.restore))
	post("n/{wing}/{hall}/{slug}/archive", of((*request).noteOf, c.archiveNote))
	c.mux = m
}

// ServeHTTP serves the console, every answer with its security headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if _, pattern := c.mux.Handler(r); pattern == "" {
		// No page here: the same answer as a page of a missing wing, for a
		// signed-in person, else the sign-in.
		c.page(func(*request) answer { return notFound() })(w, r)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// csp is the Content-Security-Policy of every answer: the console's own
// files only (no inline script or style, no other origin), no plugins, no
// <base>, forms to the console itself, no framing.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers every console answer carries.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
}
