package remote

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/brainstem/brainstem/brain"
)

// Defaults of Config.
const (
	DefaultBranch       = "main"
	DefaultUsername     = "brainstem"
	DefaultPushDelay    = 2 * time.Second
	DefaultPushMaxDelay = 10 * time.Second
	DefaultPullInterval = 30 * time.Second
	// MinPullInterval bounds how often the remote is polled.
	MinPullInterval = 100 * time.Millisecond
)

// Named configuration errors (each joined with the details by Validate).
var (
	ErrNoURL          = errors.New("remote: no URL")
	ErrBadURL         = errors.New("remote: the URL is not https://, http://, ssh://, git://, user@host:path, file:// or an absolute path")
	ErrPasswordInURL  = errors.New("remote: the URL carries a password; put the token in TokenFile instead")
	ErrBadBranch      = errors.New("remote: invalid branch name")
	ErrBadWing        = errors.New("remote: invalid wing name")
	ErrCredentialKind = errors.New("remote: the credentials do not match the URL's transport")
	ErrBadDuration    = errors.New("remote: invalid duration")
)

// Config is one wing's remote. The zero value of each optional field
// takes the default named.
type Config struct {
	// URL of the remote repository (required): https:// (or http:// on a
	// trusted network), ssh:// or user@host:path, git://, file:// or an
	// absolute path to a bare repository. It must not carry a password.
	URL string
	// Branch of the remote the wings share (default DefaultBranch).
	Branch string
	// Wing whose notes this remote holds under wiki/<Wing>/ (required).
	Wing string
	// SharedWings are the other wings served from the same brain
	// directory, and so from the same repository (the dev stack): one
	// remote per repository integrates every wing's notes, and the other
	// wings' shards run none.
	SharedWings []string
	// TokenFile holds the HTTPS token, sent as the password of basic auth
	// with Username (default DefaultUsername; GitHub takes any name, GitLab
	// "oauth2", Gitea the token's owner). HTTPS only.
	TokenFile string
	Username  string
	// SSHKeyFile is the private key of an SSH deploy key (unencrypted), and
	// KnownHostsFile the known_hosts file the host key is checked against
	// (required with SSHKeyFile). SSH only.
	SSHKeyFile, KnownHostsFile string
	// PushDelay is the quiet gap a push waits for: commits not yet pushed
	// are pushed once no new one came for PushDelay (default
	// DefaultPushDelay). PushMaxDelay bounds the wait while commits keep
	// coming (default the larger of DefaultPushMaxDelay and PushDelay).
	PushDelay, PushMaxDelay time.Duration
	// PullInterval is how often the remote is fetched (default
	// DefaultPullInterval; at least MinPullInterval).
	PullInterval time.Duration
	// ForcePushOnPurge lets a purge rewrite the remote branch (default
	// off: a purge with a remote set is refused).
	ForcePushOnPurge bool
	// WebhookSecretFile holds the shared secret that signs webhook calls
	// (optional: without it the webhook endpoint is off).
	WebhookSecretFile string
}

// Transport is the kind of a URL.
type Transport string

// The transports Config accepts.
const (
	HTTPS Transport = "https"
	SSH   Transport = "ssh"
	Git   Transport = "git"
	File  Transport = "file"
)

// WithDefaults returns c with its zero optional fields filled.
func (c Config) WithDefaults() Config {
	c.Branch = cmp.Or(c.Branch, DefaultBranch)
	c.Username = cmp.Or(c.Username, DefaultUsername)
	c.PushDelay = cmp.Or(c.PushDelay, DefaultPushDelay)
	c.PushMaxDelay = cmp.Or(c.PushMaxDelay, max(DefaultPushMaxDelay, c.PushDelay))
	c.PullInterval = cmp.Or(c.PullInterval, DefaultPullInterval)
	return c
}

// Validate reports every problem of c (after WithDefaults), joined. No
// message quotes a secret or the URL's user information.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	kind, err := c.Transport()
	if err != nil {
		errs = append(errs, err)
	}
	for _, w := range c.Wings() {
		if err := brain.ValidWing(w); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", ErrBadWing, err))
		}
	}
	if !validBranch(c.Branch) {
		errs = append(errs, fmt.Errorf("%w %q", ErrBadBranch, c.Branch))
	}
	errs = append(errs, c.credentialProblems(kind)...)
	errs = append(errs, c.durationProblems()...)
	return errors.Join(errs...)
}

func (c Config) credentialProblems(kind Transport) []error {
	var errs []error
	if c.TokenFile != "" && kind != HTTPS && kind != "" {
		errs = append(errs, fmt.Errorf("%w: TokenFile is for https URLs, not %s", ErrCredentialKind, kind))
	}
	if (c.SSHKeyFile != "" || c.KnownHostsFile != "") && kind != SSH && kind != "" {
		errs = append(errs, fmt.Errorf("%w: SSHKeyFile and KnownHostsFile are for ssh URLs, not %s", ErrCredentialKind, kind))
	}
	if c.SSHKeyFile != "" && c.KnownHostsFile == "" {
		errs = append(errs, fmt.Errorf("%w: SSHKeyFile needs KnownHostsFile (the host key is always checked)", ErrCredentialKind))
	}
	return errs
}

func (c Config) durationProblems() []error {
	var errs []error
	if c.PushDelay < 0 {
		errs = append(errs, fmt.Errorf("%w: PushDelay %v is negative", ErrBadDuration, c.PushDelay))
	}
	if c.PushMaxDelay < c.PushDelay {
		errs = append(errs, fmt.Errorf("%w: PushMaxDelay %v is below PushDelay %v", ErrBadDuration, c.PushMaxDelay, c.PushDelay))
	}
	if c.PullInterval < MinPullInterval {
		errs = append(errs, fmt.Errorf("%w: PullInterval %v is below %v", ErrBadDuration, c.PullInterval, MinPullInterval))
	}
	return errs
}

// Transport returns the kind of c.URL, or why it has none.
func (c Config) Transport() (Transport, error) {
	raw := c.URL
	switch {
	case raw == "":
		return "", ErrNoURL
	case filepath.IsAbs(raw):
		return File, nil
	case isSCP(raw):
		return SSH, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", ErrBadURL // url's error quotes the URL, password and all
	}
	if _, has := u.User.Password(); has {
		return "", ErrPasswordInURL
	}
	switch u.Scheme {
	case "https", "http":
		return HTTPS, hostOrBad(u)
	case "ssh":
		return SSH, hostOrBad(u)
	case "git":
		return Git, hostOrBad(u)
	case "file":
		return File, nil
	}
	return "", ErrBadURL
}

func hostOrBad(u *url.URL) error {
	if u.Host == "" {
		return ErrBadURL
	}
	return nil
}

// isSCP reports whether raw is git's scp-like SSH form user@host:path.
func isSCP(raw string) bool {
	at, colon := strings.Index(raw, "@"), strings.Index(raw, ":")
	return at > 0 && colon > at+1 && !strings.Contains(raw[:colon], "/") && colon < len(raw)-1
}

// Redacted is c.URL without its user information, for logs.
func (c Config) Redacted() string {
	if isSCP(c.URL) || filepath.IsAbs(c.URL) {
		return c.URL
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}

// Wings are the wings whose notes the remote integrates: Wing, then
// SharedWings.
func (c Config) Wings() []string { return append([]string{c.Wing}, c.SharedWings...) }

// Prefix is the directory of the wing's notes in the remote's tree
// (wiki/{a,b}/ for several wings).
func (c Config) Prefix() string {
	if len(c.SharedWings) == 0 {
		return "wiki/" + c.Wing + "/"
	}
	return "wiki/{" + strings.Join(c.Wings(), ",") + "}/"
}

// validBranch applies git's check-ref-format rules that matter here.
func validBranch(b string) bool {
	if b == "" || strings.HasPrefix(b, "-") || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".lock") || strings.HasSuffix(b, ".") || strings.Contains(b, "..") ||
		strings.Contains(b, "//") || strings.Contains(b, "@{") {
		return false
	}
	if strings.ContainsFunc(b, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune("~^:?*[\\", r) }) {
		return false
	}
	return !strings.HasPrefix(b, ".") && !strings.Contains(b, "/.") // no component starts with a dot
}
