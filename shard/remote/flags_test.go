package remote

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("shard", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	get := Flags(fs)
	if err := fs.Parse(nil); err != nil || get() != nil {
		t.Fatalf("no --git-remote: %v %+v", err, get())
	}
	fs = flag.NewFlagSet("shard", flag.ContinueOnError)
	get = Flags(fs)
	if err := fs.Parse([]string{"--git-remote", "https://git.example.com/b.git", "--git-token-file", "/t", "--git-pull-interval", "5s"}); err != nil {
		t.Fatal(err)
	}
	c := get()
	if c == nil || c.URL != "https://git.example.com/b.git" || c.TokenFile != "/t" || c.PullInterval != 5*time.Second || c.Branch != "main" || c.PushDelay != DefaultPushDelay {
		t.Fatalf("config %+v", c)
	}
	c.Wing = "eng"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestConfigFile: --git-config sets every key; a flag on the command line
// wins over its key wherever it stands; unknown keys and bad values are
// refused with ErrConfigFile.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "remote.yaml")
	mustWriteFile(t, good, "url: https://git.example.com/acme/brain.git\nbranch: brain\ntoken_file: /run/secrets/git-token\nusername: oauth2\npush_delay: 3s\npush_max_delay: 20s\npull_interval: 1m\nwebhook_secret_file: /run/secrets/hook\nforce_push_on_purge: true\n")
	parse := func(args ...string) (*Config, error) {
		fs := flag.NewFlagSet("shard", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		get := Flags(fs)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return get(), nil
	}
	c, err := parse("--git-config", good)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{URL: "https://git.example.com/acme/brain.git", Branch: "brain", TokenFile: "/run/secrets/git-token", Username: "oauth2",
		PushDelay: 3 * time.Second, PushMaxDelay: 20 * time.Second, PullInterval: time.Minute, WebhookSecretFile: "/run/secrets/hook", ForcePushOnPurge: true}
	if !reflect.DeepEqual(*c, want) {
		t.Fatalf("from the file:\n got %+v\nwant %+v", *c, want)
	}
	for _, args := range [][]string{
		{"--git-pull-interval", "5s", "--git-config", good},
		{"--git-config", good, "--git-pull-interval", "5s"},
	} {
		c, err := parse(args...)
		if err != nil || c.PullInterval != 5*time.Second || c.Branch != "brain" {
			t.Fatalf("%v: %+v %v", args, c, err)
		}
	}
	// Without a max delay anywhere, it follows the push delay that wins.
	short := filepath.Join(dir, "short.yaml")
	mustWriteFile(t, short, "url: https://git.example.com/b.git\npush_delay: 3s\n")
	for args, want := range map[string]time.Duration{
		short:                             DefaultPushMaxDelay,
		short + " --git-push-delay 30s":   30 * time.Second,
		good + " --git-push-max-delay 1m": time.Minute,
	} {
		c, err := parse(append([]string{"--git-config"}, strings.Fields(args)...)...)
		if err != nil || c.PushMaxDelay != want {
			t.Fatalf("%s: %+v %v, want max delay %v", args, c, err, want)
		}
	}
	for name, body := range map[string]string{
		"unknown key":  "url: https://git.example.com/b.git\ntoken: hunter2\n",
		"bad duration": "url: https://git.example.com/b.git\npull_interval: soon\n",
		"not a map":    "- url\n",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		mustWriteFile(t, path, body)
		// The flag package quotes the error's text (not %w).
		if _, err := parse("--git-config", path); err == nil || !strings.Contains(err.Error(), ErrConfigFile.Error()) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := parse("--git-config", filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), ErrConfigFile.Error()) {
		t.Errorf("missing file: %v", err)
	}
}

func mustWriteFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// FuzzConfigFile: any bytes parse or are refused with ErrConfigFile,
// never a panic, and the same bytes always give the same answer.
func FuzzConfigFile(f *testing.F) {
	f.Add([]byte("url: https://git.example.com/b.git\npush_delay: 2s\n"))
	f.Add([]byte("force_push_on_purge: yes\n"))
	f.Add([]byte("{url: [1]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err1 := parseFile("f", b)
		c, err2 := parseFile("f", b)
		if (err1 == nil) != (err2 == nil) || a != c {
			t.Fatalf("not deterministic: %+v %v / %+v %v", a, err1, c, err2)
		}
		if err1 != nil && !errors.Is(err1, ErrConfigFile) {
			t.Fatalf("unnamed error %v", err1)
		}
	})
}
