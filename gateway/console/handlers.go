package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
)

// request is one signed-in request to a page or a form.
type request struct {
	c      *Console
	w      http.ResponseWriter
	r      *http.Request
	id     auth.Identity
	signin signIn
	wings  []toolspec.WingCaps
	load   bool  // wings loaded
	werr   error // brain_wings's refusal: then no page can say what the person reaches
}

// answer is what a page handler decided: a page to render, or a redirect.
type answer struct {
	status     int
	page       string // template
	title      string
	data       any
	redirect   string
	retryAfter int // seconds, for Retry-After; 0: none
}

// retrySeconds is how long a person over the gateway's rate limit is told
// to wait: what the gateway's refusal to the console says ("wait a second";
// a token of the per-email bucket comes back at limits.calls_per_second),
// and Retry-After's smallest value.
const retrySeconds = 1

type pageHandler func(rq *request) answer

// layout is what every page's frame shows.
type layout struct {
	Title  string
	Prefix string
	Email  string
	CSRF   string
	Wings  []toolspec.WingCaps
	Data   any
}

// toolError is a tool's refusal.
type toolError struct {
	Code    brain.Code
	Message string
}

func (e *toolError) Error() string { return string(e.Code) + ": " + e.Message }

// call runs a tool as the signed-in person and decodes its result into out.
func (rq *request) call(tool string, args any, out any) error {
	b, err := brain.Marshal(args)
	if err != nil {
		return fmt.Errorf("console: %s arguments: %w", tool, err)
	}
	res := rq.c.tools.Call(rq.r.Context(), rq.id, tool, b)
	if res.IsError {
		code, msg, ok := brain.DecodeError(res.Text)
		if !ok {
			code, msg = brain.CodeInternal, "the tool failed"
		}
		return &toolError{Code: code, Message: msg}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res.Text, out); err != nil {
		return fmt.Errorf("console: %s answer: %w", tool, err)
	}
	return nil
}

// myWings is brain_wings, once per request.
func (rq *request) myWings() []toolspec.WingCaps {
	if !rq.load {
		rq.load = true
		var out struct {
			Wings []toolspec.WingCaps `json:"wings"`
		}
		if err := rq.call("brain_wings", struct{}{}, &out); err != nil {
			rq.werr = err
		} else {
			rq.wings = out.Wings
		}
	}
	return rq.wings
}

// caps is the person's capabilities in wing; nil when they cannot reach it.
func (rq *request) caps(wing string) []string {
	for _, w := range rq.myWings() {
		if w.Wing == wing {
			return w.Capabilities
		}
	}
	return nil
}

// page wraps a GET handler: signed in (else to the sign-in), then render.
func (c *Console) page(h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, id, err := c.authenticate(r)
		switch {
		case errors.Is(err, errNotSignedIn):
			http.Redirect(w, r, c.prefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		case err != nil:
			c.ended(w, err)
			return
		}
		rq := &request{c: c, w: w, r: r, id: id, signin: s}
		c.respond(rq, h(rq))
	}
}

// form wraps a POST handler: signed in, same origin, CSRF token, then act.
func (c *Console) form(h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, id, ok := c.signedForm(w, r, c.ended)
		if !ok {
			return
		}
		rq := &request{c: c, w: w, r: r, id: id, signin: s}
		c.respond(rq, h(rq))
	}
}

// ended answers a request whose sign-in cookie no longer holds: 401, the
// cookie cleared, and a link to sign in again.
func (c *Console) ended(w http.ResponseWriter, err error) {
	if !errors.Is(err, errNotSignedIn) {
		// Only a cookie that was sent is cleared: a cross-site post arrives
		// without the (SameSite=Lax) cookie, and must not sign anyone out.
		c.setCookie(w, cookieSignIn, "", -1)
	}
	c.unauthorized(w, err)
}

// unauthorized is ended without touching the cookie: 401 and a link to
// sign in again.
func (c *Console) unauthorized(w http.ResponseWriter, err error) {
	c.log.Debug("console: sign-in refused", "err", err)
	c.plainPage(w, http.StatusUnauthorized, "Signed out", "Your console session has ended or was signed out. Sign in again.", true)
}

func (c *Console) respond(rq *request, a answer) {
	if a.redirect != "" {
		http.Redirect(rq.w, rq.r, a.redirect, http.StatusSeeOther)
		return
	}
	wings := rq.myWings()
	if rq.werr != nil {
		// Without brain_wings a page would answer as if the person reached
		// no wing (a readable wing's page as a missing one): say why
		// instead. The refusal does not depend on the page, so it tells
		// nothing of which wings or notes exist.
		a = failed(rq.werr)
	}
	if a.retryAfter > 0 {
		rq.w.Header().Set("Retry-After", strconv.Itoa(a.retryAfter))
		wings = nil // the same page whichever call went over the limit
	}
	c.render(rq.w, a.status, a.page, layout{Title: a.title, Prefix: c.prefix, Email: rq.id.Email, CSRF: rq.signin.CSRF, Wings: wings, Data: a.data})
}

func (c *Console) render(w http.ResponseWriter, status int, page string, l layout) {
	var buf bytes.Buffer
	err := fmt.Errorf("console: no page %q", page)
	if t := c.pages[page]; t != nil {
		err = t.ExecuteTemplate(&buf, "layout", l)
	}
	if err != nil {
		c.log.Error("console: render", "page", page, "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString("internal error\n")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// message is the data of the message page.
type message struct {
	Text   string
	SignIn bool
}

// plainPage is a page outside a sign-in (sign-in errors, signed out, a
// refused form).
func (c *Console) plainPage(w http.ResponseWriter, status int, title, text string, signIn bool) {
	c.render(w, status, "message", layout{Title: title, Prefix: c.prefix, Data: message{Text: text, SignIn: signIn}})
}

func (c *Console) serverError(w http.ResponseWriter, err error) {
	c.log.Error("console: internal error", "err", err)
	c.plainPage(w, http.StatusInternalServerError, "Internal error", "The console failed; the gateway's log has the details.", false)
}

// notFound is the one answer for a page that does not exist, a wing the
// person cannot reach and a note they cannot read: the same status, title
// and text, so the answer tells nobody which exists.
func notFound() answer {
	return answer{status: http.StatusNotFound, page: "message", title: "Not found",
		data: message{Text: "There is no such page, or you cannot read it."}}
}

// failed is the page for a tool's refusal or a refused input.
func failed(err error) answer {
	var in *InputError
	if errors.As(err, &in) {
		return answer{status: http.StatusBadRequest, page: "message", title: "Invalid input", data: message{Text: in.Msg}}
	}
	var te *toolError
	if !errors.As(err, &te) {
		return answer{status: http.StatusInternalServerError, page: "message", title: "Internal error",
			data: message{Text: "The console failed; the gateway's log has the details."}}
	}
	status := http.StatusInternalServerError
	switch te.Code {
	case brain.CodeNotFound, brain.CodeUnknownWing:
		return notFound()
	case brain.CodeInvalidArgument, brain.CodeTooLarge, brain.CodeMoved:
		status = http.StatusBadRequest
	case brain.CodeAlreadyExists, brain.CodeConflict:
		status = http.StatusConflict
	case brain.CodeForbidden:
		status = http.StatusForbidden
	case brain.CodeRateLimited:
		return overLimit()
	case brain.CodeUnavailable, brain.CodeTimeout, brain.CodeOutcomeUnknown:
		status = http.StatusServiceUnavailable
	}
	return answer{status: status, page: "message", title: "Refused: " + string(te.Code), data: message{Text: te.Message}}
}

// overLimit is the page of a person over the gateway's rate limit (a tool
// refused with rate_limited): 429, Retry-After, and when to try again.
func overLimit() answer {
	return answer{status: http.StatusTooManyRequests, page: "message", title: "Too many requests", retryAfter: retrySeconds,
		data: message{Text: fmt.Sprintf("You are over your rate limit: the gateway allows each person a number of calls per second, "+
			"and the console's pages are calls. Try again in %d second%s.", retrySeconds, plural(retrySeconds))}}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// readFailed is failed for a read: a note the person may not read
// (forbidden) is answered as a missing one.
func readFailed(err error) answer {
	var te *toolError
	if errors.As(err, &te) && te.Code == brain.CodeForbidden {
		return notFound()
	}
	return failed(err)
}

// parsePages parses every page with the layout.
func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"short": func(s string) string { return s[:min(len(s), 12)] },
		"has":   func(list []string, v string) bool { return slices.Contains(list, v) },
		"halls": brain.Halls,
	}
	base, err := template.New("layout").Funcs(funcs).ParseFS(assets, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, p := range []string{"message", "home", "search", "wing", "inbox", "inboxnote", "note", "history", "diff", "archive", "new"} {
		t, err := template.Must(base.Clone()).ParseFS(assets, "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", p, err)
		}
		pages[p] = t
	}
	return pages, nil
}
