package remote

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{URL: "https://git.example.com/team/brain.git", Wing: "eng", TokenFile: "/run/secrets/token"}
	tests := []struct {
		name string
		edit func(*Config)
		want []error
	}{
		{"https", func(*Config) {}, nil},
		{"ssh url", func(c *Config) {
			c.URL, c.TokenFile, c.SSHKeyFile, c.KnownHostsFile = "ssh://git@host/brain.git", "", "/k", "/kh"
		}, nil},
		{"scp form", func(c *Config) { c.URL, c.TokenFile = "git@github.com:team/brain.git", "" }, nil},
		{"git daemon", func(c *Config) { c.URL, c.TokenFile = "git://127.0.0.1:9418/brain.git", "" }, nil},
		{"bare path", func(c *Config) { c.URL, c.TokenFile = "/srv/brain.git", "" }, nil},
		{"no url", func(c *Config) { c.URL = "" }, []error{ErrNoURL}},
		{"ftp", func(c *Config) { c.URL = "ftp://host/x" }, []error{ErrBadURL}},
		{"relative path", func(c *Config) { c.URL = "brain.git" }, []error{ErrBadURL}},
		{"password in url", func(c *Config) { c.URL = "https://u:hunter2@host/x" }, []error{ErrPasswordInURL}},
		{"bad wing", func(c *Config) { c.Wing = "../x" }, []error{ErrBadWing}},
		{"bad branch", func(c *Config) { c.Branch = "a..b" }, []error{ErrBadBranch}},
		{"token with ssh", func(c *Config) { c.URL = "ssh://git@host/x" }, []error{ErrCredentialKind}},
		{"key without known_hosts", func(c *Config) { c.URL, c.TokenFile, c.SSHKeyFile = "ssh://git@host/x", "", "/k" }, []error{ErrCredentialKind}},
		{"every problem", func(c *Config) {
			c.URL, c.Wing, c.Branch, c.PushDelay, c.PullInterval = "", "", "-x", -time.Second, time.Millisecond
		}, []error{ErrNoURL, ErrBadWing, ErrBadBranch, ErrBadDuration}},
		{"max below delay", func(c *Config) { c.PushDelay, c.PushMaxDelay = 5*time.Second, time.Second }, []error{ErrBadDuration}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			if len(tt.want) == 0 && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if len(tt.want) > 0 && err == nil {
				t.Fatal("Validate accepted it")
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("Validate = %v, want %v among them", err, w)
				}
			}
		})
	}
}

func TestConfigNeverQuotesSecrets(t *testing.T) {
	for _, u := range []string{"https://u:hunter2@host/x", "https://u:hunter2@host/%zz", "ssh://u:hunter2@host/x"} {
		c := Config{URL: u, Wing: "eng"}
		err := c.Validate()
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Validate(%s) = %v", u, err)
		}
		if strings.Contains(c.Redacted(), "hunter2") {
			t.Errorf("Redacted = %s", c.Redacted())
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.Branch != "main" || c.PushDelay != 2*time.Second || c.PullInterval != 30*time.Second || c.ForcePushOnPurge {
		t.Fatalf("defaults %+v", c)
	}
	if c.Prefix() != "wiki/"+c.Wing+"/" {
		t.Fatal(c.Prefix())
	}
}
