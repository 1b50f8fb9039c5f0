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

// writeBlock is the number of writes BenchmarkWriteRemote makes to one
// wing before it turns to the other: longer than benchPushMax, so that
// pushes run during the block's writes.
const writeBlock = 500

// benchPushDelay and benchPushMax are the push delay and max delay of the
// benchmark's remote: a twentieth of the defaults, with the defaults' ratio,
// so that a block of back-to-back writes (no quiet gap) sees a push at
// each max delay.
const (
	benchPushDelay = remote.DefaultPushDelay / 20
	benchPushMax   = remote.DefaultPushMaxDelay / 20
)

// BenchmarkWriteRemote compares brain_write with and without a git remote
// (docs/performance-history.md). Two wings run side by side, one without a
// remote and one with (git http-backend on loopback, push delay
// benchPushDelay, max delay benchPushMax), and the writes alternate
// between them in blocks of writeBlock, each wing first in every other
// pair: the machine's noise falls on both alike. After each block the wing's
// history commits, and the wing with the remote pushes, untimed, so that
// neither's background work runs during the other's block; the pushes
// during the remote wing's own block are what is measured. b.N writes go
// to each wing; p50 of each and their ratio are reported.
func BenchmarkWriteRemote(b *testing.B) {
	without, with := openBenchWing(b, false), openBenchWing(b, true)
	var lw, lr []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += writeBlock {
		n := min(writeBlock, b.N-i)
		// Each goes first in every other pair of blocks, so that neither
		// always follows the other's untimed push (or its git server's
		// work after it).
		if i/writeBlock%2 == 0 {
			lw = without.write(b, i, n, lw)
			lr = with.write(b, i, n, lr)
		} else {
			lr = with.write(b, i, n, lr)
			lw = without.write(b, i, n, lw)
		}
	}
	b.StopTimer()
	pw, pr := p50(lw), p50(lr)
	b.ReportMetric(float64(pw.Microseconds()), "p50-without-µs")
	b.ReportMetric(float64(pr.Microseconds()), "p50-with-µs")
	b.ReportMetric(float64(pr)/float64(pw), "ratio")
	// More than one push a block: pushes ran during the block's writes
	// (one more at its end, untimed, makes the remote hold the block).
	blocks := (b.N + writeBlock - 1) / writeBlock
	b.ReportMetric(float64(with.svc.Remote().Status().Pushes)/float64(blocks), "pushes/block")
}

func p50(lat []time.Duration) time.Duration {
	slices.Sort(lat)
	return lat[len(lat)/2]
}

// benchWing is one wing of BenchmarkWriteRemote.
type benchWing struct {
	svc   *Service
	token string
	brain string
	bare  string // "": no remote
}

func openBenchWing(b *testing.B, withRemote bool) *benchWing {
	k, err := auth.GenerateKey()
	if err != nil {
		b.Fatal(err)
	}
	w := &benchWing{brain: b.TempDir()}
	cfg := Config{Brain: w.brain, Wing: "payments", Key: k,
		Policy: auth.Policy{Writers: []string{"email:wendy@example.com"}}}
	os.MkdirAll(filepath.Join(cfg.Brain, "wiki", "payments", "facts"), 0o755)
	if withRemote {
		root := b.TempDir()
		if w.bare, err = gitserver.InitBare(root, "brain.git"); err != nil {
			b.Fatal(err)
		}
		srv, err := gitserver.StartHTTP(root, "git", remoteToken)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { srv.Close() })
		tokenFile := filepath.Join(b.TempDir(), "token")
		os.WriteFile(tokenFile, []byte(remoteToken), 0o600)
		cfg.Remote = &remote.Config{URL: srv.URL + "/brain.git", TokenFile: tokenFile, Username: "git", PushDelay: benchPushDelay, PushMaxDelay: benchPushMax}
	}
	if w.svc, err = Open(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.svc.Close() })
	resp, err := w.svc.Mint(context.Background(), proto.Peer{Role: "gateway"}, &proto.MintRequest{Email: "wendy@example.com", NotAfter: time.Now().Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	w.token = resp.Token
	return w
}

// write makes writes from..from+n, timed, appending their latencies to
// lat, then (untimed) lets the wing commit and push them.
func (w *benchWing) write(b *testing.B, from, n int, lat []time.Duration) []time.Duration {
	for i := from; i < from+n; i++ {
		args := fmt.Sprintf(`{"hall":"facts","title":"Note %d","body":"body %d"}`, i, i)
		start := time.Now()
		r, err := w.svc.Call(context.Background(), &proto.CallRequest{Token: w.token, Tool: "brain_write", Args: []byte(args)})
		if err != nil || r.IsError {
			b.Fatalf("%v %s", err, r.Result)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	defer b.StartTimer()
	if err := w.svc.store.History().Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	if w.bare == "" {
		return lat
	}
	local, err := gitserver.Person{}.Git(w.brain, "rev-parse", "main")
	if err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if remote, _ := (gitserver.Person{}).Git(w.bare, "rev-parse", "main"); remote == local {
			return lat
		}
		if time.Now().After(deadline) {
			b.Fatalf("the remote lacks %s a minute after the block (status %+v)", local, w.svc.Remote().Status())
		}
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
