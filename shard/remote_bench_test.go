package shard

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/tooling/gitserver"
)

// BenchmarkWriteRemote compares brain_write with and without a git remote
// (git http-backend on loopback, pushing every 100 ms): the push runs
// beside the write path, so p50 should not move (docs/performance-history.md).
func BenchmarkWriteRemote(b *testing.B) {
	for _, withRemote := range []bool{false, true} {
		b.Run(fmt.Sprintf("remote=%v", withRemote), func(b *testing.B) {
			k, err := auth.GenerateKey()
			if err != nil {
				b.Fatal(err)
			}
			cfg := Config{Wing: "payments", Key: k,
				Policy: auth.Policy{Writers: []string{"email:wendy@example.com"}}}
			cfg.Brain = b.TempDir()
			os.MkdirAll(filepath.Join(cfg.Brain, "wiki", "payments", "facts"), 0o755)
			if withRemote {
				root := b.TempDir()
				gitserver.InitBare(root, "brain.git")
				srv, err := gitserver.StartHTTP(root, "git", remoteToken)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { srv.Close() })
				tokenFile := filepath.Join(b.TempDir(), "token")
				os.WriteFile(tokenFile, []byte(remoteToken), 0o600)
				cfg.Remote = &remote.Config{URL: srv.URL + "/brain.git", TokenFile: tokenFile, Username: "git", PushDelay: 100 * time.Millisecond, PushMaxDelay: 100 * time.Millisecond}
			}
			svc, err := Open(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { svc.Close() })
			resp, err := svc.Mint(context.Background(), proto.Peer{Role: "gateway"}, &proto.MintRequest{Email: "wendy@example.com", NotAfter: time.Now().Add(time.Hour)})
			if err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				args := fmt.Sprintf(`{"hall":"facts","title":"Note %d","body":"body %d"}`, i, i)
				start := time.Now()
				r, err := svc.Call(context.Background(), &proto.CallRequest{Token: resp.Token, Tool: "brain_write", Args: []byte(args)})
				if err != nil || r.IsError {
					b.Fatalf("%v %s", err, r.Result)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
	}
}

// BenchmarkPullThousandCommits: the remote gains 1,000 commits touching
// 10,000 notes (made with git fast-import); the time from the trigger to
// the last note being searchable.
func BenchmarkPullThousandCommits(b *testing.B) {
	for range b.N {
		b.StopTimer()
		root := b.TempDir()
		bare, err := gitserver.InitBare(root, "brain.git")
		if err != nil {
			b.Fatal(err)
		}
		var stream strings.Builder
		for c := range 1000 {
			fmt.Fprintf(&stream, "commit refs/heads/main\ncommitter Ada <ada@example.com> %d +0000\ndata 9\nbatch %03d\n", 1700000000+c, c)
			for n := range 10 {
				body := fmt.Sprintf("---\ntitle: Note %d %d\n---\nword%dx%d\n", c, n, c, n)
				fmt.Fprintf(&stream, "M 100644 inline wiki/payments/facts/n%d-%d.md\ndata %d\n%s\n", c, n, len(body), body)
			}
		}
		cmd := exec.Command("git", "-C", bare, "fast-import", "--quiet")
		cmd.Stdin = strings.NewReader(stream.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("fast-import: %v %s", err, out)
		}
		k, _ := auth.GenerateKey()
		brain := b.TempDir()
		os.MkdirAll(filepath.Join(brain, "wiki", "payments", "facts"), 0o755)
		svc, err := Open(context.Background(), Config{Brain: brain, Wing: "payments", Key: k,
			Remote: &remote.Config{URL: bare, PushDelay: time.Hour, PullInterval: time.Hour}})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		svc.Remote().Trigger()
		for {
			hits, err := svc.store.Search(context.Background(), "word999x9", store.SearchOptions{})
			if err == nil && len(hits) == 1 {
				break
			}
			if time.Since(start) > 2*time.Minute {
				b.Fatalf("not searchable after 2 min (status %+v)", svc.Remote().Status())
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s-to-searchable")
		b.StopTimer()
		svc.Close()
	}
}
