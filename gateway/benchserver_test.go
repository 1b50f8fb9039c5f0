package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
)

// A gateway and its shard in a process of their own, for benchmarks whose
// clients must not share the gateway's heap and garbage collector (in
// production they never do). The benchmark re-runs this test binary with
// benchServerEnv set; TestBenchServer then serves until its stdin closes.

const (
	benchServerEnv    = "BRAINSTEM_BENCH_SERVER"
	benchServerMarker = "BRAINSTEM_BENCH_SERVER_READY "
)

// benchServerInfo is what the server process prints once ready.
type benchServerInfo struct {
	URL         string   `json:"url"`
	ShardAddr   string   `json:"shard_addr"`
	CAPEM       []byte   `json:"ca_pem"`
	CertPEM     []byte   `json:"cert_pem"` // a gateway-role client certificate
	KeyPEM      []byte   `json:"key_pem"`
	SSOTokens   []string `json:"sso_tokens"`   // one per client
	ShardTokens []string `json:"shard_tokens"` // one per client, for the direct path
}

// TestBenchServer is not a test: it is the server half of the benchmarks
// that use startBenchServer, and skips unless they started it.
func TestBenchServer(t *testing.T) {
	clients := os.Getenv(benchServerEnv)
	if clients == "" {
		t.Skip("the server process of BenchmarkBrainGetPaced/process=separate")
	}
	var n int
	if _, err := fmt.Sscan(clients, &n); err != nil || n < 1 {
		t.Fatalf("%s=%q: want a client count", benchServerEnv, clients)
	}
	e := benchEnv(t, []string{"payments"})
	e.wings["payments"].addNote("payments/decisions/idem", "use idempotency keys for every payment write", "a@acme.com")
	cert, key, err := e.pki.ca.Issue(pki.RoleGateway, []string{"bench-client.test"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	info := benchServerInfo{URL: e.url, ShardAddr: e.shards["payments"].addr, CAPEM: e.pki.ca.CertPEM(), CertPEM: cert, KeyPEM: key}
	pc := proto.NewClient(info.ShardAddr, proto.ClientConfig{TLS: e.pki.gwTLS.Clone()})
	defer pc.Close()
	for i := range n {
		email := fmt.Sprintf("u%d@acme.com", i)
		info.SSOTokens = append(info.SSOTokens, e.idp.token(t, email))
		mr, err := pc.Mint(context.Background(), &proto.MintRequest{Email: email, NotAfter: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		info.ShardTokens = append(info.ShardTokens, mr.Token)
	}
	b, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s%s\n", benchServerMarker, b)
	_, _ = io.Copy(io.Discard, os.Stdin) // serve until the benchmark closes stdin
}

// startBenchServer starts TestBenchServer in a child process for conc
// clients and returns what it serves; the child stops at cleanup.
func startBenchServer(b *testing.B, conc int) benchServerInfo {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchServer$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", benchServerEnv, conc))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var said strings.Builder // the child's test output, for a failure
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), benchServerMarker)
		if !ok {
			said.WriteString(sc.Text() + "\n")
			continue
		}
		var info benchServerInfo
		if err := json.Unmarshal([]byte(line), &info); err != nil {
			b.Fatal(err)
		}
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		return info
	}
	b.Fatalf("the bench server exited before it was ready (%v):\n%s", sc.Err(), said.String())
	return benchServerInfo{}
}

// newRemoteGetBench is newGetBench against a gateway and shard in another
// process.
func newRemoteGetBench(b *testing.B, legacy bool, conc int) *getBench {
	info := startBenchServer(b, conc)
	tc, err := pki.ClientTLS(info.CAPEM, info.CertPEM, info.KeyPEM, "localhost")
	if err != nil {
		b.Fatal(err)
	}
	pc := proto.NewClient(info.ShardAddr, proto.ClientConfig{TLS: tc})
	b.Cleanup(func() { _ = pc.Close() })
	return buildGetBench(b, info.URL, pc, info.SSOTokens, info.ShardTokens, legacy)
}
