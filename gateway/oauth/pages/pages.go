// Package pages is the pages of the gateway's authorization server
// (gateway/oauth): the consent page and an error page, and the device
// flow's code entry, approval and result pages. All are self-contained
// (no scripts, images or external styles), may not be framed, and are
// never cached (Security).
package pages

import (
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// PageStyle is the style sheet of every page of the facade.
const PageStyle = `body{font-family:system-ui,sans-serif;max-width:34em;margin:3em auto;padding:0 1em;color:#1d1d1f;line-height:1.45}
h1{font-size:1.35em}.warn{background:#fff4e5;border-left:4px solid #e08a00;padding:.6em .9em}
.who{background:#f3f5f7;padding:.6em .9em;border-radius:6px}button{font-size:1em;padding:.5em 1.3em;margin-right:.6em}
.allow{background:#0b63ce;color:#fff;border:0;border-radius:5px}.deny{background:#fff;border:1px solid #888;border-radius:5px}
small{color:#555}`

var Consent = template.Must(template.New("consent").Parse(`<!doctype html>
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

type ConsentData struct {
	Name, Gateway, MetadataHost, RedirectHost string
	Dynamic                                   bool
	TokenTTL, RefreshTTL, ConsentTTL          string
	Action, Request                           string
}

var Error = template.Must(template.New("error").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Brainstem sign-in: {{.Title}}</title><style>` + PageStyle + `</style></head>
<body><h1>{{.Title}}</h1><p>{{.Message}}</p>
<p><small>Nothing was shared with the application. You can close this window and start the sign-in again from your application.</small></p>
</body></html>
`))

// AnyFormTarget, as a form target, lifts the form-action restriction.
const AnyFormTarget = "*"

// Security sets the headers of every page: no framing, no caching, no
// sniffing, and a CSP that allows the form to post to the facade itself and
// the redirects that follow it (to the IdP, or back to the client). Chrome
// applies form-action to every redirect after a form's submission, so the
// targets must cover the whole chain.
func Security(w http.ResponseWriter, formTargets ...string) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // "no-referrer" would make browsers send Origin: null on the consent form
	formAction := "form-action 'self'"
	for _, t := range formTargets {
		switch {
		case t == AnyFormTarget:
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

var DeviceCode = template.Must(template.New("device-code").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Brainstem: sign in a device</title><style>` + PageStyle + `</style></head>
<body>
<h1>Sign in a device to your team brain</h1>
<p>Type the code that <code>brainstem login --device</code> (or another application) shows on the other computer.
This is Brainstem at <strong>{{.Gateway}}</strong>.</p>
{{if .Problem}}<p class="warn">{{.Problem}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="step" value="code">
<input type="hidden" name="token" value="{{.Token}}">
<p><label>Code <input name="user_code" value="{{.Code}}" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="32" placeholder="BCDF-GHJK" autofocus></label></p>
<button class="allow" type="submit">Continue</button>
</form>
<p><small>Only type a code you got yourself, just now, from a computer you are using. Nobody from your company will ever ask you to type a code they send you.</small></p>
</body></html>
`))

type DeviceCodeData struct{ Gateway, Action, Token, Code, Problem string }

var DeviceApprove = template.Must(template.New("device-approve").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Allow {{.Name}} on another computer?</title><style>` + PageStyle + `</style></head>
<body>
<h1>Allow {{.Name}} on another computer to use your team brain?</h1>
<p class="who"><strong>{{.Name}}</strong> (client <code>{{.ClientID}}</code>) asked {{.Age}} ago, with the code <strong>{{.Code}}</strong>,
to act as you on Brainstem at <strong>{{.Gateway}}</strong>: to search and read the notes of every wing you can reach, and to write where you may write.</p>
<p class="who">The request came from the computer at <strong>{{.IP}}</strong>, whose program describes itself as <strong>{{.Computer}}</strong>
(a description the program chose). Your browser is at {{.YourIP}}.</p>
<p class="warn"><strong>Allow only if you started this sign-in yourself, just now, on that computer.</strong>
If someone sent you this code or asked you to type it, deny: they would get access as you.</p>
{{if .Dynamic}}<p>This application registered itself: Brainstem cannot confirm who made it or that its name is true.</p>
{{else}}<p>The application is described by a document published at <strong>{{.MetadataHost}}</strong>.</p>{{end}}
<p>After you sign in with your company account, the application receives a token that works for {{.TokenTTL}} at a time and that it can renew
for up to {{.RefreshTTL}}, unless your company account is disabled.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="step" value="approve">
<input type="hidden" name="token" value="{{.Token}}">
<button class="allow" type="submit" name="decision" value="allow">Allow and sign in</button>
<button class="deny" type="submit" name="decision" value="deny">Deny</button>
</form>
</body></html>
`))

type DeviceApproveData struct {
	Name, ClientID, Gateway, MetadataHost, IP, YourIP, Computer, Age, Code string
	Dynamic                                                                bool
	TokenTTL, RefreshTTL, Action, Token                                    string
}

var DeviceDone = template.Must(template.New("device-done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Brainstem sign-in: {{.Title}}</title><style>` + PageStyle + `</style></head>
<body><h1>{{.Title}}</h1><p>{{.Message}}</p></body></html>
`))

type DeviceDoneData struct{ Title, Message string }
