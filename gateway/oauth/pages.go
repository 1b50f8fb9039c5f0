package oauth

import (
	"bytes"
	"html/template"
	"net/http"
	"time"

	"github.com/brainstem/brainstem/gateway/oauth/pages"
)

func (s *Server) RenderPage(w http.ResponseWriter, status int, t *template.Template, data any, formTargets ...string) {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		s.log.Error("oauth: render page", "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString("internal error\n")
	}
	pages.Security(w, formTargets...)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorPageFor shows an error in the browser: used whenever the redirect
// URI is not (yet) trusted, so nothing is ever redirected to it.
func (s *Server) ErrorPage(w http.ResponseWriter, status int, title, message string) {
	s.RenderPage(w, status, pages.Error, struct{ Title, Message string }{title, message})
}

// RefusePage counts a refusal of endpoint and shows it (ErrorPage).
func (s *Server) RefusePage(w http.ResponseWriter, endpoint string, status int, title, message string) {
	s.Count(endpoint, "refused")
	s.ErrorPage(w, status, title, message)
}

// cookie names: __Host- prefixed (Secure, Path=/, no Domain) on https.
func (s *Server) cookieName(name string) string {
	if s.secure {
		return "__Host-" + name
	}
	return name
}

// SetCookie sets one of the facade's cookies (HttpOnly, Path=/, Secure and
// __Host- prefixed on https); a negative maxAge deletes it.
func (s *Server) SetCookie(w http.ResponseWriter, name, value string, maxAge time.Duration, sameSite http.SameSite) {
	c := &http.Cookie{
		Name: s.cookieName(name), Value: value, Path: "/", HttpOnly: true, Secure: s.secure, SameSite: sameSite, MaxAge: int(maxAge / time.Second),
	}
	if maxAge < 0 {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// Cookie is the value of one of the facade's cookies, "" without.
func (s *Server) Cookie(r *http.Request, name string) string {
	c, err := r.Cookie(s.cookieName(name))
	if err != nil {
		return ""
	}
	return c.Value
}
