// Package testbrowser is a scripted browser for end-to-end tests of the
// sign-in flow: it keeps cookies per site as a browser does, follows
// redirects one hop at a time (so a test can stop at a client's loopback
// redirect URI), and submits HTML forms with their hidden fields and the
// Origin header a browser sends. It understands the simple forms of the
// gateway's consent page and the development IdP's login page; it runs no
// scripts.
package testbrowser

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
)

// maxPageBytes bounds a page the browser reads.
const maxPageBytes = 1 << 20

// Browser is one browser profile (one cookie jar).
type Browser struct {
	client *http.Client
}

// New returns a browser with an empty cookie jar.
func New() *Browser { return NewWith(nil) }

// NewWith is New with the requests made by rt (nil: http.DefaultTransport).
func NewWith(rt http.RoundTripper) *Browser {
	jar, _ := cookiejar.New(nil) // never fails without options
	return &Browser{client: &http.Client{
		Jar: jar, Transport: rt,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // redirects are followed by Follow, hop by hop
		},
	}}
}

// Page is one answer: a page, or a redirect (Location set).
type Page struct {
	URL      *url.URL
	Status   int
	Header   http.Header
	Body     string
	Location *url.URL // the resolved redirect target, when Status is 3xx
}

// Get loads a URL without following a redirect.
func (b *Browser) Get(ctx context.Context, target string) (*Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	return b.do(req)
}

func (b *Browser) do(req *http.Request) (*Page, error) {
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	req.Header.Set("User-Agent", "brainstem-testbrowser")
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBytes))
	if err != nil {
		return nil, err
	}
	p := &Page{URL: req.URL, Status: resp.StatusCode, Header: resp.Header, Body: string(body)}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		loc, err := resp.Location()
		if err != nil {
			return nil, fmt.Errorf("testbrowser: %s answered %d without a usable Location: %w", req.URL, resp.StatusCode, err)
		}
		p.Location = loc
	}
	return p, nil
}

// ErrTooManyRedirects is returned by Follow after 20 hops.
var ErrTooManyRedirects = errors.New("testbrowser: too many redirects")

// Follow follows p's redirects until a page that is not a redirect, or a
// redirect whose target stop accepts (returned without being loaded: a
// client's loopback redirect URI, say). stop may be nil.
func (b *Browser) Follow(ctx context.Context, p *Page, stop func(*url.URL) bool) (*Page, error) {
	for range 20 {
		if p.Location == nil {
			return p, nil
		}
		if stop != nil && stop(p.Location) {
			return p, nil
		}
		next, err := b.Get(ctx, p.Location.String())
		if err != nil {
			return nil, err
		}
		p = next
	}
	return nil, ErrTooManyRedirects
}

// Form is an HTML form of a page.
type Form struct {
	Action *url.URL
	Method string
	Fields url.Values // hidden and other inputs with their values
	// Buttons are the submit buttons' name=value pairs, in order.
	Buttons [][2]string
}

var (
	formRE   = regexp.MustCompile(`(?is)<form\b([^>]*)>(.*?)</form>`)
	inputRE  = regexp.MustCompile(`(?is)<input\b([^>]*)>`)
	buttonRE = regexp.MustCompile(`(?is)<button\b([^>]*)>`)
	attrRE   = regexp.MustCompile(`(?is)([a-z-]+)\s*=\s*"([^"]*)"`)
)

func attrs(s string) map[string]string {
	m := map[string]string{}
	for _, a := range attrRE.FindAllStringSubmatch(s, -1) {
		m[strings.ToLower(a[1])] = html.UnescapeString(a[2])
	}
	return m
}

// Forms parses the page's forms.
func (p *Page) Forms() ([]*Form, error) {
	var out []*Form
	for _, f := range formRE.FindAllStringSubmatch(p.Body, -1) {
		fa := attrs(f[1])
		action, err := p.URL.Parse(fa["action"])
		if err != nil {
			return nil, fmt.Errorf("testbrowser: form action %q: %w", fa["action"], err)
		}
		form := &Form{Action: action, Method: strings.ToUpper(fa["method"]), Fields: url.Values{}}
		if form.Method == "" {
			form.Method = http.MethodGet
		}
		for _, in := range inputRE.FindAllStringSubmatch(f[2], -1) {
			ia := attrs(in[1])
			if ia["name"] != "" {
				form.Fields.Set(ia["name"], ia["value"])
			}
		}
		for _, bt := range buttonRE.FindAllStringSubmatch(f[2], -1) {
			ba := attrs(bt[1])
			if ba["name"] != "" {
				form.Buttons = append(form.Buttons, [2]string{ba["name"], ba["value"]})
			}
		}
		out = append(out, form)
	}
	return out, nil
}

// Form returns the page's only form.
func (p *Page) Form() (*Form, error) {
	forms, err := p.Forms()
	if err != nil {
		return nil, err
	}
	if len(forms) != 1 {
		return nil, fmt.Errorf("testbrowser: %s has %d forms, want 1 (status %d): %.300s", p.URL, len(forms), p.Status, p.Body)
	}
	return forms[0], nil
}

// Submit posts the form with its fields, overridden by set, and the named
// submit button's value (button "" sends none). Like a browser it sends the
// page's origin as Origin and does not follow the answer's redirect.
func (b *Browser) Submit(ctx context.Context, from *Page, f *Form, set map[string]string, button string) (*Page, error) {
	vals := url.Values{}
	for k, v := range f.Fields {
		vals[k] = append([]string(nil), v...)
	}
	for k, v := range set {
		vals.Set(k, v)
	}
	if button != "" {
		found := false
		for _, bt := range f.Buttons {
			if bt[0]+"="+bt[1] == button || bt[1] == button {
				vals.Set(bt[0], bt[1])
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("testbrowser: the form has no button %q (has %v)", button, f.Buttons)
		}
	}
	var req *http.Request
	var err error
	if f.Method == http.MethodPost {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, f.Action.String(), strings.NewReader(vals.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", from.URL.Scheme+"://"+from.URL.Host)
		}
	} else {
		u := *f.Action
		u.RawQuery = vals.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	}
	if err != nil {
		return nil, err
	}
	return b.do(req)
}

// Cookies returns the cookies the browser would send to u.
func (b *Browser) Cookies(u *url.URL) []*http.Cookie { return b.client.Jar.Cookies(u) }

// SetCookies stores cookies for u, as a response would.
func (b *Browser) SetCookies(u *url.URL, cs []*http.Cookie) { b.client.Jar.SetCookies(u, cs) }

// SignIn is what a user does in the browser an MCP client opened: it loads
// authURL, allows the gateway's consent page when shown, fills the
// development IdP's login form with email and groups when shown, and
// follows redirects. With isClient nil it follows them to the end (the
// client's loopback listener answers) and returns the last page; otherwise
// it stops at the first redirect whose target isClient accepts and returns
// that redirect, unloaded (its Location is the client's redirect URI).
func (b *Browser) SignIn(ctx context.Context, authURL string, isClient func(*url.URL) bool, email, groups string) (*Page, error) {
	p, err := b.Get(ctx, authURL)
	if err != nil {
		return nil, err
	}
	for range 4 {
		if p, err = b.Follow(ctx, p, isClient); err != nil {
			return nil, err
		}
		switch {
		case p.Location != nil:
			return p, nil
		case p.Status == http.StatusOK && strings.Contains(p.Body, `name="decision"`):
			f, err := p.Form()
			if err != nil {
				return nil, err
			}
			if p, err = b.Submit(ctx, p, f, nil, "allow"); err != nil {
				return nil, err
			}
		case p.Status == http.StatusOK && strings.Contains(p.Body, `name="email"`):
			f, err := p.Form()
			if err != nil {
				return nil, err
			}
			if p, err = b.Submit(ctx, p, f, map[string]string{"email": email, "groups": groups}, ""); err != nil {
				return nil, err
			}
		case isClient == nil:
			return p, nil
		default:
			return nil, fmt.Errorf("testbrowser: sign-in stopped at %s with %d: %s", p.URL, p.Status, Text(p.Body))
		}
	}
	return nil, fmt.Errorf("testbrowser: sign-in did not reach the client")
}

var tagRE = regexp.MustCompile(`(?s)<style.*?</style>|<[^>]*>`)

// Text is a page's visible text in one line, for error messages.
func Text(body string) string {
	s := strings.Join(strings.Fields(html.UnescapeString(tagRE.ReplaceAllString(body, " "))), " ")
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}
