package device

import (
	"html/template"

	"github.com/brainstem/brainstem/gateway/oauth"
)

// The device flow's pages: the code entry, the approval and the result
// (the core's page rules: oauth.Server.RenderPage).

var deviceCodePage = template.Must(template.New("device-code").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Brainstem: sign in a device</title><style>` + oauth.PageStyle + `</style></head>
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

type deviceCodeData struct{ Gateway, Action, Token, Code, Problem string }

var deviceApprovePage = template.Must(template.New("device-approve").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Allow {{.Name}} on another computer?</title><style>` + oauth.PageStyle + `</style></head>
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

type deviceApproveData struct {
	Name, ClientID, Gateway, MetadataHost, IP, YourIP, Computer, Age, Code string
	Dynamic                                                                bool
	TokenTTL, RefreshTTL, Action, Token                                    string
}

var deviceDonePage = template.Must(template.New("device-done").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Brainstem sign-in: {{.Title}}</title><style>` + oauth.PageStyle + `</style></head>
<body><h1>{{.Title}}</h1><p>{{.Message}}</p></body></html>
`))

type deviceDoneData struct{ Title, Message string }
