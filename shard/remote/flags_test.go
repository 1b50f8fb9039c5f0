package remote

import (
	"flag"
	"io"
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
