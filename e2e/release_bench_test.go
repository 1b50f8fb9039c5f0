package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainstem/brainstem/search"
)

// BenchmarkHeavyRelease compares this build with a previous release on the
// heavy brain's union wing: each binary's `brainstem dev --brain` over its
// own copy of the wing, brain_query (limit 10) at 64 rawmcp clients in alternating
// blocks (this, previous, previous, this, …), per MCP era. The previous
// binary is BRAINSTEM_PREV_BIN (docs/performance-index.md builds ce76856);
// without it the benchmark is skipped. Reported: each one's calls/s,
// this/previous, and each process's resident memory after the run (VmRSS of
// the whole dev stack: gateway, shard and identity provider are one
// process).
func BenchmarkHeavyRelease(b *testing.B) {
	prev := os.Getenv("BRAINSTEM_PREV_BIN")
	if prev == "" {
		b.Skip("BRAINSTEM_PREV_BIN names no previous release's binary")
	}
	hb := writeHeavyBrain(b, benchDocs(), false)
	dir := b.TempDir()
	cur := filepath.Join(dir, "brainstem")
	if out, err := exec.Command("go", "build", "-o", cur, "github.com/brainstem/brainstem/cmd/brainstem").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	stacks := []*devProcess{startDevProcess(b, cur, hb.One), startDevProcess(b, prev, hb.One)}
	queries := heavyQueries(300)
	for _, rev := range revisions {
		b.Run("rev="+rev.name, func(b *testing.B) {
			const clients = 64
			cs := make([][]benchCaller, len(stacks))
			for i, st := range stacks {
				for range clients {
					cs[i] = append(cs[i], eraCaller(b, st.url, st.token, rev.session, true))
				}
			}
			var next atomic.Int64
			block := func(i, n int) time.Duration {
				_, d, err := drive(n, clients, func(w int) func() error {
					c := cs[i][w]
					return func() error {
						q := queries[int(next.Add(1))%len(queries)]
						_, err := c(search.Tool, fmt.Sprintf(`{"wing":"all","query":%q,"limit":10}`, q), false)
						return err
					}
				})
				if err != nil {
					b.Fatalf("%s: %v", stacks[i].bin, err)
				}
				return d
			}
			for i := range stacks {
				block(i, len(queries)) // connections, grants and caches, before timing
			}
			took := make([]time.Duration, len(stacks))
			b.ResetTimer()
			for done, k := 0, 0; done < b.N; k++ {
				n := min(pairedBlock, b.N-done)
				for j := range stacks {
					i := (j + k) % len(stacks)
					took[i] += block(i, n)
				}
				done += n
			}
			b.StopTimer()
			perSec := func(d time.Duration) float64 { return float64(b.N) / d.Seconds() }
			b.ReportMetric(perSec(took[0]), "this-calls/s")
			b.ReportMetric(perSec(took[1]), "prev-calls/s")
			b.ReportMetric(perSec(took[0])/perSec(took[1]), "this/prev")
			b.ReportMetric(float64(stacks[0].rss(b))/(1<<20), "this-rss-MiB")
			b.ReportMetric(float64(stacks[1].rss(b))/(1<<20), "prev-rss-MiB")
		})
	}
}

// devProcess is a `brainstem dev` process of some binary.
type devProcess struct {
	bin, url, token string
	cmd             *exec.Cmd
}

// startDevProcess runs bin's `brainstem dev` over a copy of the brain
// directory src, on free loopback ports, and waits for its banner.
func startDevProcess(b *testing.B, bin, src string) *devProcess {
	b.Helper()
	brainDir := filepath.Join(b.TempDir(), "brain")
	if err := os.CopyFS(brainDir, os.DirFS(src)); err != nil {
		b.Fatal(err)
	}
	ports := freePorts(b)
	cmd := exec.Command(bin, "dev", "--brain", brainDir, "--calls-per-second", "1000000",
		"--port", ports[0], "--admin-port", ports[1], "--idp-port", ports[2], "--shard-port", ports[3])
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	p := &devProcess{bin: bin, cmd: cmd}
	sc := bufio.NewScanner(out)
	var banner strings.Builder
	for (p.url == "" || p.token == "") && sc.Scan() {
		line := sc.Text()
		banner.WriteString(line + "\n")
		if f := strings.Fields(line); len(f) == 3 && f[0] == "MCP" && f[1] == "URL:" {
			p.url = f[2]
		} else if len(f) == 2 && f[0] == "Token:" {
			p.token = f[1]
		}
	}
	if p.url == "" || p.token == "" {
		b.Fatalf("%s dev printed no MCP URL and token:\n%s", bin, banner.String())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }() // the rest of its output
	return p
}

// freePorts are four loopback ports free now: the gateway's, the admin
// listener's and the identity provider's (TCP), and the shard's (UDP).
func freePorts(b *testing.B) []string {
	b.Helper()
	var ports []string
	for range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer pc.Close()
	return append(ports, strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port))
}

// rss is the process's resident memory in bytes (VmRSS).
func (p *devProcess) rss(b *testing.B) int64 {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}
