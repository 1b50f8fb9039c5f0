// Package cluster is the chart on a real Kubernetes: .ci/cluster.sh brings
// up a one-node cluster in a network namespace of its own, Dex in it as the
// IdP, and runs TestCluster inside that namespace. Without BRAINSTEM_CLUSTER
// it is skipped: it needs that cluster (docs/kubernetes.md, "What CI runs on
// a real cluster").
package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/tooling/testbrowser"
)

const (
	release    = "brainstem"
	namespace  = "brainstem"
	publicHost = "brain.ci.test"
	gatewaySvc = release + "-gateway." + namespace + ".svc"
	issuer     = "https://dex.idp.svc.cluster.local:5556/dex"
	email      = "carol@example.com"
	password   = "password" // Dex's documented example, in .ci/cluster/dex.yaml
	callTO     = 20 * time.Second
)

var (
	chart  = filepath.Join("..", "..", "brainstem")
	values = filepath.Join("..", "..", "..", ".ci", "cluster", "values.yaml")
	wings  = []string{"payments", "platform", "people-ops"}
)

// TestCluster runs the checks in order; each one needs the ones before.
func TestCluster(t *testing.T) {
	if os.Getenv("BRAINSTEM_CLUSTER") == "" {
		t.Skip("BRAINSTEM_CLUSTER is not set: .ci/cluster.sh brings up the cluster this test needs")
	}
	c := &checks{t: t}
	for _, step := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"install", c.install},
		{"sign-in", c.signIn},
		{"device-sign-in", c.deviceSignIn},
		{"calls", c.calls},
		{"shard-kill", c.shardKill},
		{"upgrade", c.upgrade},
		{"uninstall", c.uninstall},
	} {
		if !t.Run(step.name, step.run) {
			t.FailNow()
		}
	}
}

type checks struct {
	t      *testing.T
	token  string // the facade's access token for carol
	word   string // in every note the checks write
	acked  []note // every acknowledged write
	mcpURL string
}

type note struct{ id, hash string }

// run runs a command with a deadline and returns its output; what it
// wrote to stderr (kubectl's deprecation warnings, say) comes back only
// with an error.
func run(t *testing.T, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(out.String() + "\n" + errOut.String()), err
	}
	return strings.TrimSpace(out.String()), nil
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, time.Minute, os.Getenv("KUBECTL"), args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func helm(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	return run(t, timeout, os.Getenv("HELM_BIN"), args...)
}

// diagnose prints what a person looks at when pods do not come up: the
// pods, and the warnings Kubernetes recorded for them.
func diagnose(t *testing.T) {
	t.Helper()
	out, _ := run(t, time.Minute, os.Getenv("KUBECTL"), "-n", namespace, "get", "pods", "-o", "wide")
	t.Logf("pods:\n%s", out)
	out, _ = run(t, time.Minute, os.Getenv("KUBECTL"), "-n", namespace, "get", "events", "--field-selector", "type=Warning",
		"-o", "custom-columns=OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message", "--sort-by", ".lastTimestamp")
	t.Logf("warning events:\n%s", out)
}

// installArgs are the chart, the values and the image of this commit.
func installArgs() []string {
	ref := os.Getenv("BRAINSTEM_IMAGE_REF")
	repo := ref[:strings.LastIndex(ref, ":")]
	return []string{chart, "-n", namespace, "-f", values,
		"--set", "image.repository=" + repo, "--set", "image.digest=" + os.Getenv("BRAINSTEM_IMAGE_DIGEST")}
}

// install: helm install --wait; the figure is the time until every pod
// is Ready. Then each gateway's /readyz through the admin Service port.
func (c *checks) install(t *testing.T) {
	start := time.Now()
	out, err := helm(t, 4*time.Minute, append([]string{"install", release, "--wait", "--timeout", "150s"}, installArgs()...)...)
	if err != nil {
		diagnose(t)
		t.Fatalf("helm install --wait: %v\n%s", err, out)
	}
	ready := time.Since(start)
	pods := kubectl(t, "-n", namespace, "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[0].ready} {.spec.containers[0].image}{"\n"}{end}`)
	var gateways, shards int
	for _, line := range strings.Split(pods, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[1] != "true" {
			t.Fatalf("pod not ready after install: %q", line)
		}
		if !strings.HasSuffix(f[2], "@"+os.Getenv("BRAINSTEM_IMAGE_DIGEST")) {
			t.Errorf("pod %s runs %s, not the image built from this commit", f[0], f[2])
		}
		if strings.Contains(f[0], "-gateway-") {
			gateways++
		} else {
			shards++
		}
	}
	if gateways != 2 || shards != len(wings) {
		t.Fatalf("want 2 gateways and %d shards, got %d and %d:\n%s", len(wings), gateways, shards, pods)
	}
	ip := kubectl(t, "-n", namespace, "get", "svc", release+"-gateway", "-o", "jsonpath={.spec.clusterIP}")
	resp, err := http.Get("http://" + net.JoinHostPort(ip, "9090") + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var rz struct {
		Ready     bool     `json:"ready"`
		Unreached []string `json:"unreached_wings"`
	}
	err = json.NewDecoder(resp.Body).Decode(&rz)
	resp.Body.Close()
	if err != nil || !rz.Ready || len(rz.Unreached) != 0 {
		t.Fatalf("gateway /readyz through the Service: %+v %v", rz, err)
	}
	t.Logf("ok   helm install --wait: 2 gateways and %d shards Ready, the image %s", shards, os.Getenv("BRAINSTEM_IMAGE_DIGEST"))
	t.Logf("figure: time to Ready %.1fs", ready.Seconds())
	c.mcpURL = "https://" + publicHost + "/mcp"
	c.setTransport(t)
}

// setTransport makes this process's HTTP reach the public host as the
// ingress would, on the gateway's Service (its ClusterIP, through
// kube-proxy), trusting the gateway's own certificate; and Dex by its
// cluster name, trusting the IdP CA.
func (c *checks) setTransport(t *testing.T) {
	gwPEM, err := base64.StdEncoding.DecodeString(kubectl(t, "-n", namespace, "get", "secret", release+"-gateway-tls", "-o", `jsonpath={.data.tls\.crt}`))
	if err != nil {
		t.Fatal(err)
	}
	gwPool := x509.NewCertPool()
	if !gwPool.AppendCertsFromPEM(gwPEM) {
		t.Fatal("no certificate in the gateway's TLS Secret")
	}
	idpPEM, err := os.ReadFile(os.Getenv("BRAINSTEM_IDP_CA"))
	if err != nil {
		t.Fatal(err)
	}
	idpPool := x509.NewCertPool()
	idpPool.AppendCertsFromPEM(idpPEM)
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		cfg := &tls.Config{ServerName: host, RootCAs: idpPool, MinVersion: tls.VersionTLS12}
		if host == publicHost {
			addr = net.JoinHostPort(gatewaySvc+".cluster.local", "443")
			cfg = &tls.Config{ServerName: gatewaySvc, RootCAs: gwPool, MinVersion: tls.VersionTLS12}
		} else if port != "5556" || !strings.HasSuffix(host, ".svc.cluster.local") {
			return nil, fmt.Errorf("the checks reach only the gateway and Dex, not %s", addr)
		}
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tc, nil
	}
	http.DefaultTransport = tr
}

// signIn: what an MCP client does with only the URL, through the gateway's
// Service (so each request may land on either gateway): the 401, dynamic
// registration, the gateway's consent page, Dex's password form, the
// callback, the code for a token.
func (c *checks) signIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store := client.NewMemoryTokenStore()
	mc, err := client.NewOAuthStreamableHttpClient(c.mcpURL, client.OAuthConfig{
		RedirectURI: "http://127.0.0.1:43219/callback", Scopes: []string{"brainstem"}, PKCEEnabled: true, TokenStore: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if err := mc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = mc.Initialize(ctx, initRequest())
	if !client.IsOAuthAuthorizationRequiredError(err) {
		t.Fatalf("first request: want an authorization-required error, got %v", err)
	}
	h := client.GetOAuthHandler(err)
	if err := h.RegisterClient(ctx, "brainstem cluster check"); err != nil {
		t.Fatalf("dynamic registration: %v", err)
	}
	verifier, err := client.GenerateCodeVerifier()
	if err != nil {
		t.Fatal(err)
	}
	state, err := client.GenerateState()
	if err != nil {
		t.Fatal(err)
	}
	authURL, err := h.GetAuthorizationURL(ctx, state, client.GenerateCodeChallenge(verifier))
	if err != nil {
		t.Fatal(err)
	}
	back, err := dexSignIn(ctx, testbrowser.New(), authURL, func(u *url.URL) bool { return u.Port() == "43219" })
	if err != nil {
		t.Fatal(err)
	}
	if back.Query().Get("state") != state {
		t.Fatalf("redirect to the client: %s (want state %s)", back, state)
	}
	if err := h.ProcessAuthorizationResponse(ctx, back.Query().Get("code"), state, verifier); err != nil {
		t.Fatalf("token request: %v", err)
	}
	tok, err := store.GetToken(ctx)
	if err != nil || tok.AccessToken == "" {
		t.Fatalf("stored token: %+v %v", tok, err)
	}
	c.token = tok.AccessToken
	t.Logf("ok   sign-in through the gateway's Service: registration, consent, Dex's login form, callback, token")
}

// deviceSignIn: the device flow (brainstem login --device) through the
// gateway's Service with a new connection for every request, so the
// steps land on both replicas; whichever replica a step reaches, it is
// passed to the one that issued the code (peers.dns, the headless
// Service). The replicas' metrics must show steps passed between them.
func (c *checks) deviceSignIn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	hc := &http.Client{Transport: tr, Timeout: callTO}
	base := "https://" + publicHost
	post := func(path string, body url.Values, contentType string, raw []byte) map[string]any {
		t.Helper()
		var rd *bytes.Reader
		if raw != nil {
			rd = bytes.NewReader(raw)
		} else {
			rd = bytes.NewReader([]byte(body.Encode()))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s: %d: %v", path, resp.StatusCode, err)
		}
		out["_status"] = resp.StatusCode
		return out
	}
	reg := post("/register", nil, "application/json",
		[]byte(`{"client_name":"brainstem cluster device check","grant_types":["urn:ietf:params:oauth:grant-type:device_code","refresh_token"]}`))
	id, _ := reg["client_id"].(string)
	if id == "" {
		t.Fatalf("register: %v", reg)
	}
	// Each approval takes about five requests, each reaching either
	// replica: about one run in 32 sends them all to the issuing one and
	// passes nothing. A run that passed nothing proves nothing, so the
	// approval is run again with a new code, up to deviceTries times.
	before := peerSteps(t)
	for try := 1; ; try++ {
		dev := post("/device_authorization", url.Values{"client_id": {id}}, "application/x-www-form-urlencoded", nil)
		code, _ := dev["user_code"].(string)
		devCode, _ := dev["device_code"].(string)
		if code == "" || devCode == "" {
			t.Fatalf("device_authorization: %v", dev)
		}
		b := testbrowser.NewWith(tr)
		p, err := b.Get(ctx, base+"/device")
		if err != nil {
			t.Fatal(err)
		}
		for step := 0; ; step++ {
			if step == 8 {
				t.Fatalf("the device approval did not end: %s %d %s", p.URL, p.Status, testbrowser.Text(p.Body))
			}
			var f *testbrowser.Form
			switch {
			case p.Status == http.StatusOK && strings.Contains(p.Body, `name="user_code"`):
				if f, err = p.Form(); err == nil {
					p, err = b.Submit(ctx, p, f, map[string]string{"user_code": code}, "")
				}
			case p.Status == http.StatusOK && strings.Contains(p.Body, `name="decision"`):
				if f, err = p.Form(); err == nil {
					if p, err = b.Submit(ctx, p, f, nil, "allow"); err == nil {
						p, err = b.Follow(ctx, p, nil)
					}
				}
			case strings.HasPrefix(p.URL.String(), issuer) && strings.Contains(p.Body, `name="password"`):
				if f, err = p.Form(); err == nil {
					if p, err = b.Submit(ctx, p, f, map[string]string{"login": email, "password": password}, ""); err == nil {
						p, err = b.Follow(ctx, p, nil)
					}
				}
			case p.Status == http.StatusOK && strings.Contains(p.Body, "You are signed in as "+email):
				step = -1
			default:
				t.Fatalf("device approval stopped at %s with %d: %s", p.URL, p.Status, testbrowser.Text(p.Body))
			}
			if err != nil {
				t.Fatal(err)
			}
			if step < 0 {
				break
			}
		}
		// The approval is done before the first poll: it gets the tokens.
		tok := post("/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {devCode}, "client_id": {id}},
			"application/x-www-form-urlencoded", nil)
		if tok["access_token"] == nil {
			t.Fatalf("device token: %v", tok)
		}
		after := peerSteps(t)
		if after > before {
			t.Logf("ok   device sign-in through the Service, new connection per request: %v steps passed between the replicas (approval %d)", after-before, try)
			return
		}
		if try == deviceTries {
			t.Fatalf("no step was passed between the replicas in %d approvals (%v → %v): every request reached the issuing replica; is the Service balancing over both?", try, before, after)
		}
	}
}

// deviceTries bounds the device approvals deviceSignIn runs until one
// passes a step between the replicas (all landing on one by chance: about
// 1 in 32 each, so about 1 in 10^12 for eight).
const deviceTries = 8

// peerSteps is the number of device sign-in steps the gateway replicas
// passed to each other (brainstem_gateway_oauth_requests_total{endpoint="peer",
// outcome="forwarded"}), summed over the pods, read through the API
// server's proxy to each pod's admin port.
func peerSteps(t *testing.T) float64 {
	t.Helper()
	pods := strings.Fields(kubectl(t, "-n", namespace, "get", "pods", "-l", "app.kubernetes.io/component=gateway", "-o", "jsonpath={.items[*].metadata.name}"))
	if len(pods) < 2 {
		t.Fatalf("want 2 gateway pods, got %v", pods)
	}
	var sum float64
	for _, pod := range pods {
		metrics := kubectl(t, "get", "--raw", "/api/v1/namespaces/"+namespace+"/pods/"+pod+":9090/proxy/metrics")
		for _, line := range strings.Split(metrics, "\n") {
			if strings.HasPrefix(line, "brainstem_gateway_oauth_requests_total{") && strings.Contains(line, `endpoint="peer"`) && strings.Contains(line, `outcome="forwarded"`) {
				var v float64
				if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
					sum += v
				}
			}
		}
	}
	return sum
}

func initRequest() mcp.InitializeRequest {
	r := mcp.InitializeRequest{}
	r.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	r.Params.ClientInfo = mcp.Implementation{Name: "brainstem cluster check", Version: "0"}
	return r
}

// dexSignIn drives a browser from the gateway's authorization URL to the
// client's redirect: the consent page (allowed), then Dex's password form.
func dexSignIn(ctx context.Context, b *testbrowser.Browser, authURL string, isClient func(*url.URL) bool) (*url.URL, error) {
	p, err := b.Get(ctx, authURL)
	if err != nil {
		return nil, err
	}
	consented := false
	for range 6 {
		if p, err = b.Follow(ctx, p, isClient); err != nil {
			return nil, err
		}
		switch {
		case p.Location != nil:
			if !consented {
				return nil, fmt.Errorf("reached the client (%s) before the consent page", p.Location)
			}
			return p.Location, nil
		case p.Status == http.StatusOK && strings.Contains(p.Body, `name="decision"`):
			f, err := p.Form()
			if err != nil {
				return nil, err
			}
			consented = true
			if p, err = b.Submit(ctx, p, f, nil, "allow"); err != nil {
				return nil, err
			}
		case strings.HasPrefix(p.URL.String(), issuer) && strings.Contains(p.Body, `name="password"`):
			f, err := p.Form()
			if err != nil {
				return nil, err
			}
			if p, err = b.Submit(ctx, p, f, map[string]string{"login": email, "password": password}, ""); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("sign-in stopped at %s with %d: %s", p.URL, p.Status, testbrowser.Text(p.Body))
		}
	}
	return nil, errors.New("sign-in did not reach the client")
}

// agent is one MCP session with the facade's token.
func (c *checks) agent(t *testing.T) *client.Client {
	t.Helper()
	mc, err := client.NewStreamableHttpClient(c.mcpURL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + c.token}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTO)
	defer cancel()
	if err := mc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := mc.Initialize(ctx, initRequest()); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { mc.Close() })
	return mc
}

// result is one tool call as the agent saw it.
type result struct {
	text    string
	code    string // "ok", the tool error's code, or "transport"
	latency time.Duration
}

func call(mc *client.Client, tool string, args map[string]any) result {
	ctx, cancel := context.WithTimeout(context.Background(), callTO)
	defer cancel()
	start := time.Now()
	res, err := mc.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	r := result{latency: time.Since(start), code: "ok"}
	switch {
	case err != nil:
		r.code, r.text = "transport", err.Error()
	case len(res.Content) != 1:
		r.code, r.text = "transport", fmt.Sprintf("%d contents", len(res.Content))
	default:
		tc, _ := res.Content[0].(mcp.TextContent)
		r.text = tc.Text
		if res.IsError {
			var te struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal([]byte(tc.Text), &te)
			r.code = te.Error.Code
			if r.code == "" {
				r.code = "tool_error"
			}
		}
	}
	return r
}

// write writes one note; an acknowledged write is returned.
func (c *checks) write(mc *client.Client, wing, title string) (result, *note) {
	r := call(mc, "brain_write", map[string]any{"wing": wing, "hall": "facts", "title": title,
		"body": "Written by the cluster check (" + c.word + ") as " + email + "."})
	if r.code != "ok" {
		return r, nil
	}
	var out struct {
		ID          string `json:"id"`
		ContentHash string `json:"content_hash"`
	}
	if err := json.Unmarshal([]byte(r.text), &out); err != nil || out.ID == "" {
		r.code = "bad_answer"
		return r, nil
	}
	return r, &note{id: out.ID, hash: out.ContentHash}
}

// calls: tools/list, the caller's wings, a write in each wing and a
// cross-wing query that finds all three.
func (c *checks) calls(t *testing.T) {
	mc := c.agent(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTO)
	defer cancel()
	tools, err := mc.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"brain_query", "brain_get", "brain_write", "brain_wings"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list lacks %s: %v", want, names)
		}
	}
	r := call(mc, "brain_wings", map[string]any{})
	for _, w := range wings {
		if r.code != "ok" || !strings.Contains(r.text, `"`+w+`"`) {
			t.Fatalf("brain_wings: want %v: %s %s", wings, r.code, r.text)
		}
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	c.word = "kubecheck" + hex.EncodeToString(b[:])
	for _, w := range wings {
		r, n := c.write(mc, w, "Cluster check in "+w)
		if n == nil {
			t.Fatalf("brain_write in %s: %s %s", w, r.code, r.text)
		}
		c.acked = append(c.acked, *n)
	}
	r = call(mc, "brain_query", map[string]any{"query": c.word})
	if r.code != "ok" {
		t.Fatalf("cross-wing brain_query: %s %s", r.code, r.text)
	}
	for _, n := range c.acked {
		if !strings.Contains(r.text, n.id) {
			t.Fatalf("cross-wing brain_query for %s misses %s: %s", c.word, n.id, r.text)
		}
	}
	t.Logf("ok   through the Service: tools/list (%d tools), brain_wings %v, a write in each wing, a cross-wing query finding all %d", len(names), wings, len(wings))
}

// podOf returns a pod's uid, its first container's id and readiness.
func podOf(t *testing.T, name string) (uid, container string, ready bool) {
	out, err := run(t, time.Minute, os.Getenv("KUBECTL"), "-n", namespace, "get", "pod", name, "-o",
		`jsonpath={.metadata.uid} {.status.containerStatuses[0].containerID} {.status.containerStatuses[0].ready}`)
	if err != nil {
		return "", "", false
	}
	f := strings.Fields(out)
	if len(f) != 3 {
		return "", "", false
	}
	return f[0], strings.TrimPrefix(f[1], "containerd://"), f[2] == "true"
}

// taskPid is the host pid of a containerd container's process.
func taskPid(t *testing.T, id string) int {
	out, err := run(t, time.Minute, "ctr", "--address", os.Getenv("BRAINSTEM_CONTAINERD"), "-n", "k8s.io", "tasks", "ls")
	if err != nil {
		t.Fatalf("ctr tasks ls: %v %s", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		var pid int
		if len(f) >= 2 && f[0] == id {
			if _, err := fmt.Sscan(f[1], &pid); err == nil {
				return pid
			}
		}
	}
	t.Fatalf("no containerd task %s:\n%s", id, out)
	return 0
}

// loopRate paces a loop's calls, all its agents together. The agents sign
// in as one person, and each gateway limits a person to
// gateway.config.limits.calls_per_second (1000, and 999 after the upgrade):
// unpaced, a loop whose agents all reach one gateway while the other rolls,
// or whose calls fail fast while a shard is down, goes past it, and the
// refusals would be counted as the failures the checks look for.
const loopRate = 400

// loop runs f from n goroutines until stop, recording each result.
type loop struct {
	pace    *time.Ticker // one tick per call, shared by the loop's agents
	mu      sync.Mutex
	results []timed
	stop    atomic.Bool
	wg      sync.WaitGroup
}

type timed struct {
	at time.Time
	result
}

func (l *loop) start(n int, f func(i, k int) result) {
	l.pace = time.NewTicker(time.Second / loopRate)
	for i := range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for k := 0; !l.stop.Load(); k++ {
				<-l.pace.C
				at := time.Now()
				r := f(i, k)
				l.mu.Lock()
				l.results = append(l.results, timed{at, r})
				l.mu.Unlock()
			}
		}()
	}
}

func (l *loop) end() []timed {
	l.stop.Store(true)
	l.wg.Wait()
	l.pace.Stop()
	return l.results
}

// since counts the results that started at or after from, and returns the
// slowest and how many were not "ok" by code.
func since(rs []timed, from time.Time) (n int, slowest time.Duration, failed map[string]int) {
	failed = map[string]int{}
	for _, r := range rs {
		if r.at.Before(from) {
			continue
		}
		n++
		slowest = max(slowest, r.latency)
		if r.code != "ok" {
			failed[r.code]++
		}
	}
	return n, slowest, failed
}

// shardKill: writes go on to one wing while its shard's process is killed
// (SIGKILL, no chance to flush) and its pod deleted; the StatefulSet brings
// a new pod up on the same volume, writes succeed again, and every write
// that was acknowledged is there with its content hash.
func (c *checks) shardKill(t *testing.T) {
	const wing = "payments"
	pod := release + "-" + wing + "-0"
	claim := "brain-" + pod
	pvBefore := kubectl(t, "-n", namespace, "get", "pvc", claim, "-o", "jsonpath={.spec.volumeName}")
	oldUID, container, ready := podOf(t, pod)
	if !ready {
		t.Fatalf("%s is not ready before the kill", pod)
	}
	var l loop
	var mu sync.Mutex
	var acked []note
	agents := make([]*client.Client, 4)
	for i := range agents {
		agents[i] = c.agent(t)
	}
	l.start(len(agents), func(i, k int) result {
		r, n := c.write(agents[i], wing, fmt.Sprintf("Kill check %d-%d", i, k))
		if n != nil {
			mu.Lock()
			acked = append(acked, *n)
			mu.Unlock()
		}
		return r
	})
	waitUntil(t, 30*time.Second, "20 writes before the kill", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 20 })

	killed := time.Now()
	pid := taskPid(t, container)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		l.end()
		t.Fatalf("kill -9 %d (%s): %v", pid, pod, err)
	}
	kubectl(t, "-n", namespace, "delete", "pod", pod, "--grace-period=0", "--force", "--wait=false")
	waitUntil(t, 3*time.Minute, "a new "+pod+" Ready", func() bool {
		uid, _, ready := podOf(t, pod)
		return uid != "" && uid != oldUID && ready
	})
	back := time.Since(killed)
	mu.Lock()
	atBack := len(acked)
	mu.Unlock()
	waitUntil(t, 2*time.Minute, "20 writes acknowledged after the new pod is Ready", func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= atBack+20 })
	rs := l.end()
	n, slowest, failed := since(rs, killed)

	if pv := kubectl(t, "-n", namespace, "get", "pvc", claim, "-o", "jsonpath={.spec.volumeName}"); pv != pvBefore {
		t.Fatalf("the new pod's claim is bound to %s, the old one's to %s", pv, pvBefore)
	}
	if vol := kubectl(t, "-n", namespace, "get", "pod", pod, "-o", `jsonpath={.spec.volumes[?(@.name=="brain")].persistentVolumeClaim.claimName}`); vol != claim {
		t.Fatalf("the new pod mounts claim %q, want %s", vol, claim)
	}
	mc := c.agent(t)
	for _, w := range acked {
		// The Service may send this agent to the gateway the loop did not
		// reach last: it fails calls to the wing fast (unavailable) until
		// its background redial reaches the new pod (docs/operating.md,
		// brainstem_gateway_shard_down). A lost write is not unavailable.
		var r result
		waitUntil(t, time.Minute, "wing "+wing+" reachable through every gateway", func() bool {
			r = call(mc, "brain_get", map[string]any{"id": w.id})
			return r.code != "unavailable"
		})
		var got struct {
			ContentHash string `json:"content_hash"`
		}
		if r.code != "ok" || json.Unmarshal([]byte(r.text), &got) != nil || got.ContentHash != w.hash {
			t.Fatalf("acknowledged write %s lost or changed after the kill: %s %s", w.id, r.code, r.text)
		}
	}
	c.acked = append(c.acked, acked...)
	t.Logf("ok   shard killed under a write loop: new pod on volume %s, all %d acknowledged writes there with their hashes", pvBefore, len(acked))
	t.Logf("figure: the shard back Ready %.1fs after the kill; %d calls from the kill on, slowest %.2fs, refused while it was down %v",
		back.Seconds(), n, slowest.Seconds(), failed)
}

func waitUntil(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			diagnose(t)
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(200 * time.Millisecond) // polling the cluster's state, bounded by the deadline
	}
}

// upgrade: helm upgrade with a changed gateway value rolls both gateways
// (maxUnavailable 0) while reads go on through the Service: no call fails.
func (c *checks) upgrade(t *testing.T) {
	before := kubectl(t, "-n", namespace, "get", "pods", "-l", "app.kubernetes.io/component=gateway", "-o", "jsonpath={.items[*].metadata.name}")
	var l loop
	agents := make([]*client.Client, 4)
	for i := range agents {
		agents[i] = c.agent(t)
	}
	l.start(len(agents), func(i, k int) result {
		if k%2 == 0 {
			return call(agents[i], "brain_get", map[string]any{"id": c.acked[(i+k)%len(c.acked)].id})
		}
		return call(agents[i], "brain_query", map[string]any{"query": c.word, "limit": 5})
	})
	start := time.Now()
	out, err := helm(t, 5*time.Minute, append([]string{"upgrade", release, "--wait", "--timeout", "180s"},
		append(installArgs(), "--set", "gateway.config.limits.calls_per_second=999")...)...)
	if err != nil {
		l.end()
		diagnose(t)
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	rolled := time.Since(start)
	// helm --wait returns when the new pods are Ready; the old ones may
	// still be draining. Keep reading until they are gone.
	waitUntil(t, 2*time.Minute, "the old gateway pods gone", func() bool {
		now, err := run(t, time.Minute, os.Getenv("KUBECTL"), "-n", namespace, "get", "pods", "-l", "app.kubernetes.io/component=gateway", "-o", "jsonpath={.items[*].metadata.name}")
		if err != nil {
			return false
		}
		for _, p := range strings.Fields(before) {
			if strings.Contains(now, p) {
				return false
			}
		}
		return len(strings.Fields(now)) == 2
	})
	rs := l.end()
	n, slowest, failed := since(rs, start)
	after := kubectl(t, "-n", namespace, "get", "pods", "-l", "app.kubernetes.io/component=gateway", "-o", "jsonpath={.items[*].metadata.name}")
	total := 0
	for code, k := range failed {
		total += k
		for _, r := range rs {
			if r.code == code && !r.at.Before(start) {
				t.Logf("failed call (%s): %.300s", code, r.text)
				break
			}
		}
	}
	if total != 0 || n == 0 {
		t.Fatalf("%d of %d calls failed during the upgrade: %v", total, n, failed)
	}
	t.Logf("ok   helm upgrade (gateway.config.limits changed) under a read loop: gateways %s rolled to %s in %.1fs", before, after, rolled.Seconds())
	t.Logf("figure: failed calls during the upgrade %d of %d, slowest %.2fs", total, n, slowest.Seconds())
}

// uninstall: helm uninstall leaves nothing of the release in the
// namespace or the cluster but the brain volumes' claims, which the docs
// say are kept.
func (c *checks) uninstall(t *testing.T) {
	if out, err := helm(t, 3*time.Minute, "uninstall", release, "-n", namespace, "--wait", "--timeout", "120s"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	waitUntil(t, 2*time.Minute, "the release's pods gone", func() bool {
		out, err := run(t, time.Minute, os.Getenv("KUBECTL"), "-n", namespace, "get", "pods", "-o", "name")
		return err == nil && out == ""
	})
	types := strings.Fields(kubectl(t, "api-resources", "--verbs=list", "--namespaced", "-o", "name"))
	var listable []string
	for _, ty := range types {
		if ty != "events" && ty != "events.events.k8s.io" {
			listable = append(listable, ty)
		}
	}
	left := strings.Fields(kubectl(t, "-n", namespace, "get", strings.Join(listable, ","), "-o", "name", "--ignore-not-found"))
	// Created by Kubernetes in every namespace, and by .ci/cluster.sh
	// before the install.
	furniture := []string{"serviceaccount/default", "configmap/kube-root-ca.crt", "configmap/idp-ca", "secret/idp-client"}
	var pvcs, other []string
	for _, o := range left {
		switch {
		case slices.Contains(furniture, o):
		case strings.HasPrefix(o, "persistentvolumeclaim/brain-"+release+"-"):
			pvcs = append(pvcs, o)
		default:
			other = append(other, o)
		}
	}
	clusterWide := kubectl(t, "get", "clusterroles,clusterrolebindings,persistentvolumes,storageclasses,validatingwebhookconfigurations,mutatingwebhookconfigurations",
		"-l", "app.kubernetes.io/instance="+release, "-o", "name")
	if len(other) > 0 || clusterWide != "" {
		t.Fatalf("helm uninstall left behind: %v %s", other, clusterWide)
	}
	if len(pvcs) != len(wings) {
		t.Fatalf("want the %d brain claims kept, got %v", len(wings), pvcs)
	}
	t.Logf("ok   helm uninstall: nothing left but the %d brain volume claims the docs say are kept: %v", len(pvcs), pvcs)
}
