package oauth

import (
	"bytes"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The facade's pages: the consent page and an error page here, the device
// flow's code entry, approval and result pages in gateway/oauth/device. All are
// self-contained (no scripts, images or external styles), may not be
// framed, and are never cached.

// PageStyle is the style sheet of every page of the facade.
const PageStyle = `body{font-family:system-ui,sans-serif;max-width:34em;margin:3em auto;padding:0 1em;color:#1d1d1f;line-height:1.45}
h1{font-size:1.35em}.warn{background:#fff4e5;border-left:4px solid #e08a00;padding:.6em .9em}
.who{background:#f3f5f7;padding:.6em .9em;border-radius:6px}button{font-size:1em;padding:.5em 1.3em;margin-right:.6em}
.allow{background:#0b63ce;color:#fff;border:0;border-radius:5px}.deny{background:#fff;border:1px solid #888;border-radius:5px}
small{color:#555}`

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Allow {{.Name}} to use Brainstem?</title><style>` + PageStyle + `</style></head>
<body>
<h1>Allow {{.Name}} to use your team brain?</h1>
<p class="who"><strong>{{.Name}}</strong> is asking to act as you on Brainstem at <strong>{{.Gateway}}</strong>:
to search and read the notes of every wing you can reach, and to write where you may write.</p>
{{if .Dynamic}}<p class="warn"><strong>This application registered itself.</strong> Brainstem cannot confirm who made it
or that its name is true. Allow it only if you started this sign-in yourself, just now, from an application you trust.</p>
{{else}}<p>The application is described by a document published at <strong>{{.MetadataHost}}</strong>.</p>{{end}}
<p>After you sign in with your company account, your browser will be sent to <strong>{{.RedirectHost}}</strong>.
The application then receives a token that works for {{.TokenTTL}} at a time and that it can renew for up to {{.RefreshTTL}},
unless your company account is disabled.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="request" value="{{.Request}}">
<button class="allow" type="submit" name="decision" value="allow">Allow and sign in</button>
<button class="deny" type="submit" name="decision" value="deny">Deny</button>
</form>
<p><small>Brainstem remembers your answer for this application in this browser for {{.ConsentTTL}}.</small></p>
</body></html>
`))

type consentData struct {
	Name, Gateway, MetadataHost, RedirectHost string
	Dynamic                                   bool
	TokenTTL, RefreshTTL, ConsentTTL          string
	Action, Request                           string
}

var errorPage = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Brainstem sign-in: {{.Title}}</title><style>` + PageStyle + `</style></head>
<body><h1>{{.Title}}</h1><p>{{.Message}}</p>
<p><small>Nothing was shared with the application. You can close this window and start the sign-in again from your application.</small></p>
</body></html>
`))

// anyFormTarget, as a form target, lifts the form-action restriction.
const anyFormTarget = "*"

// pageSecurity sets the headers of every page: no framing, no caching, no
// sniffing, and a CSP that allows the form to post to the facade itself and
// the redirects that follow it (to the IdP, or back to the client). Chrome
// applies form-action to every redirect after a form's submission, so the
// targets must cover the whole chain.
func pageSecurity(w http.ResponseWriter, formTargets ...string) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // "no-referrer" would make browsers send Origin: null on the consent form
	formAction := "form-action 'self'"
	for _, t := range formTargets {
		switch {
		case t == anyFormTarget:
			formAction = ""
		case formAction != "" && t != "" && !strings.ContainsAny(t, " ;,'\""):
			formAction += " " + t
		}
	}
	if formAction != "" {
		formAction += "; "
	}
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "+formAction+"frame-ancestors 'none'")
}

func (s *Server) RenderPage(w http.ResponseWriter, status int, t *template.Template, data any, formTargets ...string) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		s.log.Error("oauth: render page", "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString("internal error\n")
	}
	pageSecurity(w, formTargets...)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorPageFor shows an error in the browser: used whenever the redirect
// URI is not (yet) trusted, so nothing is ever redirected to it.
func (s *Server) ErrorPage(w http.ResponseWriter, status int, title, message string) {
	s.RenderPage(w, status, errorPage, struct{ Title, Message string }{title, message})
}

// cookie names: __Host- prefixed (Secure, Path=/, no Domain) on https.
func (s *Server) cookieName(name string) string {
	if s.secure {
		return "__Host-" + name
	}
	return name
}

func (s *Server) SetCookie(w http.ResponseWriter, name, value string, maxAge time.Duration, sameSite http.SameSite) {
	c := &http.Cookie{
		Name: s.cookieName(name), Value: value, Path: "/", HttpOnly: true, Secure: s.secure, SameSite: sameSite,
		MaxAge: int(maxAge / time.Second),
	}
	if maxAge < 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

func (s *Server) Cookie(r *http.Request, name string) string {
	c, err := r.Cookie(s.cookieName(name))
	if err != nil {
		return ""
	}
	return c.Value
}

// human renders a duration for the pages: "1 hour", "30 days".
func Human(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return strconv.Itoa(int(d/(24*time.Hour))) + " days"
	case d >= 2*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " hours"
	case d >= time.Hour:
		return "1 hour"
	case d >= 2*time.Minute:
		return strconv.Itoa(int(d/time.Minute)) + " minutes"
	}
	return strconv.Itoa(int(d/time.Second)) + " seconds"
}
