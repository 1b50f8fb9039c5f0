package faults

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brainstem/brainstem/deploy/examples"
	"github.com/brainstem/brainstem/tooling/logcheck"
)

// bin is the brainstem binary under test, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	if os.Getenv("BRAINSTEM_FAULTS") != "1" {
		os.Exit(m.Run()) // every test skips
	}
	dir, err := os.MkdirTemp("", "brainstem-faults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "brainstem")
	build := exec.Command("go", "build", "-o", bin, "./cmd/brainstem")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/brainstem: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needFaults skips a test unless the fault suite was asked for.
func needFaults(t *testing.T) {
	t.Helper()
	if os.Getenv("BRAINSTEM_FAULTS") != "1" {
		t.Skip("the fault suite runs real processes; set BRAINSTEM_FAULTS=1 to run it")
	}
}

// wings of the sample brain the cluster serves.
var wings = []string{"payments", "people-ops", "platform"}

// cluster is the development identity provider, one shard per wing and a
// gateway, each its own brainstem process on loopback.
type cluster struct {
	t     *testing.T
	dir   string
	brain string

	idpPort               int
	gwPort, gwAdminPort   int
	shardPort, shardAdmin map[string]int
	idp, gw               *proc
	shards                map[string]*proc
	keyGen                map[string]int // bumped to restart a shard with a new signing key
	gatewayConfig         string
	relays                map[string]*udpRelay // wings the gateway reaches through a relay
	mu                    sync.Mutex
	procs                 []*proc
}

// clusterOpt adjusts the gateway configuration (YAML lines under limits:).
type clusterOpt struct {
	limits string   // extra YAML under limits:, indented by 2
	relay  []string // wings the gateway reaches through a udpRelay (cluster.relays)
}

func newCluster(t *testing.T, opt clusterOpt) *cluster {
	t.Helper()
	needFaults(t)
	c := &cluster{t: t, dir: t.TempDir(), shardPort: map[string]int{}, shardAdmin: map[string]int{},
		shards: map[string]*proc{}, keyGen: map[string]int{}, relays: map[string]*udpRelay{}}
	c.brain = filepath.Join(c.dir, "brain")
	if err := os.CopyFS(c.brain, examples.Brain()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.stopAll)

	run := func(args ...string) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("brainstem %v: %v\n%s", args, err, out)
		}
	}
	ca := filepath.Join(c.dir, "ca")
	run("ca", "init", "--dir", ca)
	run("ca", "issue", "--dir", ca, "--role", "shard", "--name", "localhost,127.0.0.1", "--out", filepath.Join(c.dir, "shard-tls"))
	run("ca", "issue", "--dir", ca, "--role", "gateway", "--name", "gateway", "--out", filepath.Join(c.dir, "gateway-tls"))
	for _, w := range wings {
		p := filepath.Join(c.dir, "policy-"+w+".yaml")
		if err := os.WriteFile(p, []byte("readers: [\"*\"]\nwriters: [\"*\"]\ncurators: [\"*\"]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c.shardPort[w], c.shardAdmin[w] = freeUDP(t), freeTCP(t)
	}
	c.idpPort, c.gwPort, c.gwAdminPort = freeTCP(t), freeTCP(t), freeTCP(t)

	c.startIdP()
	for _, w := range wings {
		c.startShard(w)
	}
	var ws strings.Builder
	for _, w := range wings {
		port := c.shardPort[w]
		if slices.Contains(opt.relay, w) {
			c.relays[w] = startRelay(t, port)
			port = c.relays[w].port()
		}
		fmt.Fprintf(&ws, "  - {name: %s, address: \"127.0.0.1:%d\", server_name: localhost}\n", w, port)
	}
	gtls := filepath.Join(c.dir, "gateway-tls")
	c.gatewayConfig = filepath.Join(c.dir, "gateway.yaml")
	cfg := fmt.Sprintf(`public_url: http://127.0.0.1:%d
listen: 127.0.0.1:%d
admin_listen: 127.0.0.1:%d
oidc:
  issuers: [{url: "http://127.0.0.1:%d", audiences: [brainstem], algorithms: [RS256]}]
shards:
  tls: {ca_file: %q, cert_file: %q, key_file: %q}
wings:
%slimits:
  calls_per_second: 1000
  burst: 2000
%slog: {format: json, level: info}
`, c.gwPort, c.gwPort, c.gwAdminPort, c.idpPort,
		filepath.Join(gtls, "ca.crt"), filepath.Join(gtls, "tls.crt"), filepath.Join(gtls, "tls.key"),
		ws.String(), opt.limits)
	if err := os.WriteFile(c.gatewayConfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	run("gateway", "--check-config", "--config", c.gatewayConfig)
	c.startGateway()
	return c
}

func (c *cluster) mcpURL() string   { return fmt.Sprintf("http://127.0.0.1:%d/mcp", c.gwPort) }
func (c *cluster) adminURL() string { return fmt.Sprintf("http://127.0.0.1:%d", c.gwAdminPort) }
func (c *cluster) idpURL() string   { return fmt.Sprintf("http://127.0.0.1:%d", c.idpPort) }

// startIdP starts the identity provider (a new signing key each time) and
// waits until it serves discovery.
func (c *cluster) startIdP() {
	c.idp = c.start("idp", "dev", "idp", "--port", strconv.Itoa(c.idpPort), "--token-ttl", "4h")
	waitHTTP(c.t, c.idp, c.idpURL()+"/.well-known/openid-configuration")
}

// startShard starts wing's shard on its fixed ports and waits for /readyz.
func (c *cluster) startShard(w string) time.Time {
	stls := filepath.Join(c.dir, "shard-tls")
	p := c.start("shard-"+w, "shard",
		"--brain", c.brain, "--wing", w,
		"--listen", fmt.Sprintf("127.0.0.1:%d", c.shardPort[w]),
		"--admin-listen", fmt.Sprintf("127.0.0.1:%d", c.shardAdmin[w]),
		"--tls-ca", filepath.Join(stls, "ca.crt"), "--tls-cert", filepath.Join(stls, "tls.crt"), "--tls-key", filepath.Join(stls, "tls.key"),
		"--policy", filepath.Join(c.dir, "policy-"+w+".yaml"),
		"--key-file", filepath.Join(c.dir, "keys", fmt.Sprintf("%s-%d.pem", w, c.keyGen[w])))
	c.mu.Lock()
	c.shards[w] = p
	c.mu.Unlock()
	return waitHTTP(c.t, p, fmt.Sprintf("http://127.0.0.1:%d/readyz", c.shardAdmin[w]))
}

// startGateway starts the gateway and waits until /readyz says every wing
// was reached.
func (c *cluster) startGateway() time.Time {
	c.gw = c.start("gateway", "gateway", "--config", c.gatewayConfig)
	return waitHTTP(c.t, c.gw, c.adminURL()+"/readyz")
}

func (c *cluster) shard(w string) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shards[w]
}

// proc is one brainstem process; its output is appended to a log file that
// survives restarts.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func (c *cluster) start(name string, args ...string) *proc {
	c.t.Helper()
	logPath := filepath.Join(c.dir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		c.t.Fatal(err)
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = childAttr()
	cmd.Env = append(os.Environ(), "QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING=true")
	if err := cmd.Start(); err != nil {
		f.Close()
		c.t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// term sends SIGTERM and waits (at most limit) for a clean exit; it
// reports how long the process took and its exit error.
func (p *proc) term(limit time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(start), p.err
	case <-time.After(limit):
		p.kill()
		return time.Since(start), fmt.Errorf("%s did not stop within %s after SIGTERM", p.name, limit)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stopAll stops every process still running and, when the test failed,
// prints the end of each log. Every JSON log line of every process is
// checked for repeated keys.
func (c *cluster) stopAll() {
	c.mu.Lock()
	procs := slices.Clone(c.procs)
	c.mu.Unlock()
	for _, p := range procs {
		if !p.exited() {
			if _, err := p.term(20 * time.Second); err != nil {
				c.t.Errorf("stopping %s: %v", p.name, err)
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range procs {
		if seen[p.log] {
			continue
		}
		seen[p.log] = true
		data, _ := os.ReadFile(p.log)
		for i, line := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(line, "{") {
				continue
			}
			if err := logcheck.DuplicateKey(line); err != nil {
				c.t.Errorf("%s line %d: %v: %s", filepath.Base(p.log), i+1, err, line)
			}
		}
		if c.t.Failed() {
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			c.t.Logf("--- last lines of %s:\n%s", filepath.Base(p.log), strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	}
}

// logOf returns a process's log so far.
func (c *cluster) logOf(name string) string {
	data, _ := os.ReadFile(filepath.Join(c.dir, "logs", name+".log"))
	return string(data)
}

// waitHTTP polls url until it answers 200 (processes outside the test
// cannot signal readiness any other way), failing if p exits or a minute
// passes. It returns when it saw 200.
func waitHTTP(t *testing.T, p *proc, url string) time.Time {
	t.Helper()
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		if p != nil && p.exited() {
			t.Fatalf("%s exited (%v) before %s answered", p.name, p.err, url)
		}
		resp, err := hc.Get(url)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now()
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s not ready within a minute: %s", url, last)
	return time.Time{}
}

// token asks the identity provider process for a token.
func (c *cluster) token(email string) string {
	c.t.Helper()
	tok, err := c.tryToken(email)
	if err != nil {
		c.t.Fatal(err)
	}
	return tok
}

func (c *cluster) tryToken(email string) (string, error) {
	resp, err := http.PostForm(c.idpURL()+"/dev/token", url.Values{"email": {email}})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Token == "" {
		return "", fmt.Errorf("dev token: %s: %v", resp.Status, err)
	}
	return out.Token, nil
}

// metric reads one series from the gateway's /metrics ("" when absent).
func (c *cluster) metric(series string) string { return metricAt(c.adminURL(), series) }

// shardMetric reads one series from a wing's shard's /metrics.
func (c *cluster) shardMetric(w, series string) string {
	return metricAt(fmt.Sprintf("http://127.0.0.1:%d", c.shardAdmin[w]), series)
}

// metricAt reads one series from the /metrics of an admin listener.
func metricAt(base, series string) string {
	resp, err := (&http.Client{Timeout: time.Second}).Get(base + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return v
		}
	}
	return ""
}

func (c *cluster) metricFloat(series string) float64 {
	f, _ := strconv.ParseFloat(c.metric(series), 64)
	return f
}

// written is an acknowledged brain_write: its file, content hash and
// author.
type written struct {
	Path, Hash, Author string
}

// verifyWrites checks that every acknowledged write is on disk, intact.
func (c *cluster) verifyWrites(ws []written) (lost int) {
	c.t.Helper()
	for _, w := range ws {
		data, err := os.ReadFile(filepath.Join(c.brain, filepath.FromSlash(w.Path)))
		if err != nil {
			c.t.Errorf("acknowledged write %s: %v", w.Path, err)
			lost++
			continue
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != w.Hash {
			c.t.Errorf("acknowledged write %s: content changed (hash %x, acknowledged %s)", w.Path, sum, w.Hash)
			lost++
		}
	}
	return lost
}

func freeTCP(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func freeUDP(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// udpRelay forwards datagrams between the gateway and one shard on
// loopback, so that a test can make the shard's packets vanish on the way
// back (a network that loses them) while the shard runs on: a write then
// lands on the shard and its answer never reaches the gateway.
type udpRelay struct {
	pc    net.PacketConn
	shard *net.UDPAddr
	drop  atomic.Bool // drop every datagram from the shard to the gateway

	mu    sync.Mutex
	peers map[string]*net.UDPConn // a socket towards the shard per gateway address
}

func startRelay(t *testing.T, shardPort int) *udpRelay {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &udpRelay{pc: pc, shard: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: shardPort}, peers: map[string]*net.UDPConn{}}
	done := make(chan struct{})
	go r.serve(done)
	t.Cleanup(func() {
		pc.Close()
		<-done
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, up := range r.peers {
			up.Close()
		}
	})
	return r
}

func (r *udpRelay) port() int { return r.pc.LocalAddr().(*net.UDPAddr).Port }

// serve forwards the gateway's datagrams to the shard, each gateway
// address through its own socket, until the relay is closed.
func (r *udpRelay) serve(done chan struct{}) {
	defer close(done)
	buf := make([]byte, 64<<10)
	for {
		n, from, err := r.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		up, ok := r.peers[from.String()]
		if !ok {
			if up, err = net.DialUDP("udp", nil, r.shard); err != nil {
				r.mu.Unlock()
				continue
			}
			r.peers[from.String()] = up
			go r.back(up, from)
		}
		r.mu.Unlock()
		_, _ = up.Write(buf[:n])
	}
}

// back forwards the shard's datagrams to the gateway address to, unless
// the relay drops them.
func (r *udpRelay) back(up *net.UDPConn, to net.Addr) {
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP port unreachable while the shard is down
		}
		if !r.drop.Load() {
			_, _ = r.pc.WriteTo(buf[:n], to)
		}
	}
}

// ctxSleep waits d or until ctx ends (pacing load generators, not waiting
// for state: state is polled or signalled).
func ctxSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
