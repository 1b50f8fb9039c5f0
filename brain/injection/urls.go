package injection

import (
	"bytes"
	"slices"
	"strings"
)

// endpoints are hosts that collect what is sent to them (request bins,
// webhook catchers, paste sites, tunnels, out-of-band interaction
// servers, chat webhooks), each with the path a URL must start with to
// count ("" for any); a host matches with its subdomains.
var endpoints = map[string]string{
	"webhook.site": "", "webhook.cool": "", "requestbin.com": "", "requestbin.net": "", "requestbin.io": "", "requestcatcher.com": "",
	"requestrepo.com": "", "pipedream.net": "", "hookbin.com": "", "beeceptor.com": "", "postb.in": "", "ptsv2.com": "", "ptsv3.com": "",
	"mockbin.org": "", "mockbin.io": "", "pastebin.com": "", "paste.ee": "", "hastebin.com": "", "ghostbin.com": "", "ghostbin.co": "",
	"dpaste.com": "", "dpaste.org": "", "rentry.co": "", "rentry.org": "", "0x0.st": "", "transfer.sh": "", "termbin.com": "", "ix.io": "",
	"sprunge.us": "", "ngrok.io": "", "ngrok.app": "", "ngrok.dev": "", "ngrok-free.app": "", "ngrok-free.dev": "", "loca.lt": "",
	"localtunnel.me": "", "serveo.net": "", "trycloudflare.com": "", "interact.sh": "", "oast.fun": "", "oast.live": "", "oast.me": "",
	"oast.online": "", "oast.pro": "", "oast.site": "", "burpcollaborator.net": "", "oastify.com": "", "canarytokens.com": "",
	"canarytokens.org": "", "dnslog.cn": "", "ceye.io": "", "hooks.slack.com": "", "webhook.office.com": "",
	"discord.com": "/api/webhooks", "discordapp.com": "/api/webhooks", "api.telegram.org": "/bot",
}

// findEndpoint returns the first endpoint of low and the end of the token
// holding it (to the next space or quote), or -1. It reads each run of
// host bytes holding a dot once, looking up the run and each of its
// suffixes after a dot.
func findEndpoint(low []byte) (at, end int) {
	for i := 0; i < len(low); {
		if !isHostByte(low[i]) {
			i++
			continue
		}
		j, dot := i, false
		for j < len(low) && isHostByte(low[j]) {
			dot = dot || low[j] == '.'
			j++
		}
		if !dot {
			i = j // a word: no host
			continue
		}
		host := bytes.TrimRight(low[i:j], ".")
		for k := 0; k < len(host); k++ {
			if k > 0 && host[k-1] != '.' {
				continue
			}
			if path, ok := endpoints[string(host[k:])]; ok && bytes.HasPrefix(low[i+len(host):], []byte(path)) {
				end = len(low)
				if e := bytes.IndexAny(low[i+k:], " \t\n\r<>\"'`"); e >= 0 {
					end = i + k + e
				}
				return i + k, end
			}
		}
		i = j
	}
	return -1, -1
}

// urlAt returns the URL around the "://" at k: a scheme of a letter and up
// to 20 letters, digits, '+', '.' or '-' (starting a word), and the rest to
// the first space, quote, backquote, backslash or angle bracket.
func urlAt(low []byte, k int) (from, to int, ok bool) {
	from = k
	for from > 0 && k-from < 21 && (isAlnum(low[from-1]) || low[from-1] == '+' || low[from-1] == '.' || low[from-1] == '-') {
		from--
	}
	for from < k && !(low[from] >= 'a' && low[from] <= 'z') {
		from++
	}
	if from == k || from > 0 && isWordByte(low[from-1]) {
		return 0, 0, false
	}
	to = k + 3
	for to < len(low) && !strings.ContainsRune(" \t\n\r\f\v<>\"'`\\", rune(low[to])) {
		to++
	}
	return from, to, to > k+3
}

// urlFinding returns why the URL u (lower-cased) carries a credential or
// data to be filled in, or "".
func urlFinding(u string) string {
	_, rest, _ := strings.Cut(u, "://")
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		if _, pass, ok := strings.Cut(authority[:at], ":"); ok && pass != "" {
			return "a URL with a password in it"
		}
	}
	_, query, ok := strings.Cut(path, "?")
	if !ok {
		return ""
	}
	query, _, _ = strings.Cut(query, "#")
	for _, kv := range strings.FieldsFunc(query, func(r rune) bool { return r == '&' || r == ';' }) {
		name, value, _ := strings.Cut(kv, "=")
		if value == "" {
			continue
		}
		if secretName(name) {
			return "a URL carrying a secret in its query (" + name + "=…)"
		}
		if slices.ContainsFunc([]string{"$(", "${", "{{", "%7b%7b", "%24%28", "%24%7b"}, func(t string) bool { return strings.Contains(value, t) }) {
			return "a URL whose query is filled in from a command or a template (" + name + "=…)"
		}
	}
	return ""
}

// secretName reports a query parameter name that carries a credential.
func secretName(name string) bool {
	n := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r == '[' || r == ']' {
			return -1
		}
		return r
	}, name)
	return slices.ContainsFunc([]string{"token", "secret", "passw", "apikey", "accesskey", "privatekey", "credential", "sessionid", "signature", "amzsecurity"},
		func(part string) bool { return strings.Contains(n, part) }) ||
		slices.Contains([]string{"key", "pwd", "pass", "auth", "authorization", "bearer", "session", "sid", "cookie", "sig", "jwt"}, n)
}
