package remote

import "flag"

// Flags declares the remote's command-line flags on fs (`brainstem shard
// --git-remote …`) and returns the function that gives the configuration
// they set once parsed: nil when --git-remote is empty (no remote).
func Flags(fs *flag.FlagSet) func() *Config {
	var c Config
	fs.StringVar(&c.URL, "git-remote", "", "`url` of the wing's git remote: https://, ssh://, user@host:path, git:// or a bare repository's path (empty: none); the wing's notes are under wiki/<wing>/ there")
	fs.StringVar(&c.Branch, "git-branch", DefaultBranch, "`branch` of the git remote the wings share")
	fs.StringVar(&c.TokenFile, "git-token-file", "", "`file` holding the HTTPS token (basic auth password; never logged)")
	fs.StringVar(&c.Username, "git-username", DefaultUsername, "basic auth `user` sent with the token (GitLab: oauth2)")
	fs.StringVar(&c.SSHKeyFile, "git-ssh-key-file", "", "`file` of the SSH deploy key (unencrypted private key)")
	fs.StringVar(&c.KnownHostsFile, "git-known-hosts", "", "known_hosts `file` the SSH host key is checked against (required with --git-ssh-key-file)")
	fs.DurationVar(&c.PushDelay, "git-push-delay", DefaultPushDelay, "push the wing's commits at most this long after they are made")
	fs.DurationVar(&c.PullInterval, "git-pull-interval", DefaultPullInterval, "fetch the remote this often (a webhook call pulls at once)")
	fs.StringVar(&c.WebhookSecretFile, "git-webhook-secret-file", "", "`file` of the secret git host webhooks are signed with (POST /remote/webhook on the admin endpoint; empty: off)")
	fs.BoolVar(&c.ForcePushOnPurge, "git-force-push-on-purge", false, "let a purge rewrite the remote's history (off: purge and a remote exclude each other)")
	return func() *Config {
		if c.URL == "" {
			return nil
		}
		c.PushMaxDelay = max(c.PushDelay, DefaultPushMaxDelay)
		return &c
	}
}
