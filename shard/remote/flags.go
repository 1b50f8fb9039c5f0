package remote

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"gopkg.in/yaml.v3"
)

// maxConfigFile bounds the --git-config file.
const maxConfigFile = 64 << 10

// ErrConfigFile: the --git-config file cannot be read or holds an
// unknown key or a bad value.
var ErrConfigFile = errors.New("remote: bad --git-config file")

// ConfigFile is the --git-config file: the remote's settings in YAML, one key
// per flag (url, branch, token_file, username, ssh_key_file,
// known_hosts_file, push_delay, push_max_delay, pull_interval,
// webhook_secret_file, force_push_on_purge). A flag given on the command line wins over the
// file's key.
type ConfigFile struct {
	URL               string        `yaml:"url"`
	Branch            string        `yaml:"branch"`
	TokenFile         string        `yaml:"token_file"`
	Username          string        `yaml:"username"`
	SSHKeyFile        string        `yaml:"ssh_key_file"`
	KnownHostsFile    string        `yaml:"known_hosts_file"`
	PushDelay         time.Duration `yaml:"push_delay"`
	PushMaxDelay      time.Duration `yaml:"push_max_delay"`
	PullInterval      time.Duration `yaml:"pull_interval"`
	WebhookSecretFile string        `yaml:"webhook_secret_file"`
	ForcePushOnPurge  bool          `yaml:"force_push_on_purge"`
}

// ReadFile reads a --git-config file (unknown keys are refused).
func ReadFile(path string) (ConfigFile, error) {
	b, err := readBounded(path, maxConfigFile)
	if err != nil {
		return ConfigFile{}, fmt.Errorf("%w: %w", ErrConfigFile, err)
	}
	return parseFile(path, b)
}

func parseFile(path string, b []byte) (ConfigFile, error) {
	var file ConfigFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil && !errors.Is(err, io.EOF) {
		return ConfigFile{}, fmt.Errorf("%w: %s: %w", ErrConfigFile, path, err)
	}
	return file, nil
}

// Flags declares the remote's command-line flags on fs (`brainstem shard
// --git-remote …`, or `--git-config FILE` with the same settings) and
// returns the function that gives the configuration they set once parsed:
// nil when no URL is set (no remote).
func Flags(fs *flag.FlagSet) func() *Config {
	var c, fromFile Config
	fileSet := false
	fs.Func("git-config", "YAML `file` of the wing's remote (keys: url, branch, token_file, username, ssh_key_file, known_hosts_file, push_delay, push_max_delay, pull_interval, webhook_secret_file, force_push_on_purge); a --git-* flag wins over its key", func(path string) error {
		f, err := ReadFile(path)
		fromFile = Config{URL: f.URL, Branch: f.Branch, TokenFile: f.TokenFile, Username: f.Username, SSHKeyFile: f.SSHKeyFile,
			KnownHostsFile: f.KnownHostsFile, PushDelay: f.PushDelay, PushMaxDelay: f.PushMaxDelay, PullInterval: f.PullInterval,
			WebhookSecretFile: f.WebhookSecretFile, ForcePushOnPurge: f.ForcePushOnPurge}
		fileSet = true
		return err
	})
	fields := map[string]func(dst, src *Config){}
	str := func(name, value, usage string, field func(*Config) *string) {
		fs.StringVar(field(&c), name, value, usage)
		fields[name] = func(dst, src *Config) { *field(dst) = *field(src) }
	}
	dur := func(name string, value time.Duration, usage string, field func(*Config) *time.Duration) {
		fs.DurationVar(field(&c), name, value, usage)
		fields[name] = func(dst, src *Config) { *field(dst) = *field(src) }
	}
	str("git-remote", "", "`url` of the wing's git remote: https://, ssh://, user@host:path, git:// or a bare repository's path (empty: none); the wing's notes are under wiki/<wing>/ there", func(c *Config) *string { return &c.URL })
	str("git-branch", DefaultBranch, "`branch` of the git remote the wings share", func(c *Config) *string { return &c.Branch })
	str("git-token-file", "", "`file` holding the HTTPS token (basic auth password; never logged)", func(c *Config) *string { return &c.TokenFile })
	str("git-username", DefaultUsername, "basic auth `user` sent with the token (GitLab: oauth2)", func(c *Config) *string { return &c.Username })
	str("git-ssh-key-file", "", "`file` of the SSH deploy key (unencrypted private key)", func(c *Config) *string { return &c.SSHKeyFile })
	str("git-known-hosts", "", "known_hosts `file` the SSH host key is checked against (required with --git-ssh-key-file)", func(c *Config) *string { return &c.KnownHostsFile })
	dur("git-push-delay", DefaultPushDelay, "push the wing's commits once no new one came for this long", func(c *Config) *time.Duration { return &c.PushDelay })
	dur("git-push-max-delay", 0, "push the wing's commits at the latest this long after they are made, while new ones keep coming (0: 10s, or the push delay when longer)", func(c *Config) *time.Duration { return &c.PushMaxDelay })
	dur("git-pull-interval", DefaultPullInterval, "fetch the remote this often (a webhook call pulls at once)", func(c *Config) *time.Duration { return &c.PullInterval })
	str("git-webhook-secret-file", "", "`file` of the secret git host webhooks are signed with (POST /remote/webhook on the admin endpoint; empty: off)", func(c *Config) *string { return &c.WebhookSecretFile })
	fs.BoolVar(&c.ForcePushOnPurge, "git-force-push-on-purge", false, "let a purge rewrite the remote's history (off: purge and a remote exclude each other)")
	fields["git-force-push-on-purge"] = func(dst, src *Config) { dst.ForcePushOnPurge = src.ForcePushOnPurge }
	return func() *Config {
		out := c
		if fileSet {
			out = fromFile
			fs.Visit(func(f *flag.Flag) {
				if set := fields[f.Name]; set != nil {
					set(&out, &c)
				}
			})
		}
		if out.URL == "" {
			return nil
		}
		out = out.WithDefaults()
		return &out
	}
}
