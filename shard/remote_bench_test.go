package shard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/shard/remote"
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
