package helmtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReleaseRunsOnLoopback runs what the chart renders, with the real binary:
// one shard per wing, started with its StatefulSet's arguments, certificates
// and policy, and a gateway started with the rendered gateway.yaml and its
// certificates. Only what cannot exist outside Kubernetes is rewritten: mount
// paths become temp dirs, and listen addresses and the shards' DNS names
// become loopback. The server_name the gateway verifies is unchanged. The
// gateway reports ready only after it has reached every shard over QUIC with
// mutual TLS, so readiness proves the chart's certificates, names and flags
// fit together.
func TestReleaseRunsOnLoopback(t *testing.T) {
	t.Parallel()
	r := render(t, []string{defaultValues, valuesFile(t, `wings:
  - {name: payments, policy: {readers: ["domain:acme.com"], writers: ["group:payments"]}}
  - {name: platform, policy: {readers: ["*"]}}`)})
	runOnLoopback(t, r)
}

// TestOAuthReleaseRunsOnLoopback: with oauth enabled, the gateway starts
// with the rendered oauth section, the generated signing key and the client
// secret as mounted, and its authorization server answers: the metadata
// names the public URL as issuer, and the JWKS holds exactly the public half
// of the key in the chart's Secret.
func TestOAuthReleaseRunsOnLoopback(t *testing.T) {
	t.Parallel()
	r := render(t, []string{defaultValues, valuesFile(t, oauthOverlay)})
	listen := runOnLoopback(t, r)
	cfg := parseGatewayConfig(t, gatewayYAML(t, r))
	crt := parseCert(t, "listener", secretData(t, r, releaseName+"-brainstem-gateway-tls")["tls.crt"])
	roots := x509.NewCertPool()
	roots.AddCert(crt)
	name := crt.Subject.CommonName
	if len(crt.DNSNames) > 0 {
		name = crt.DNSNames[0]
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: name}}}
	get := func(p string, v any) {
		t.Helper()
		resp, err := hc.Get("https://" + listen + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			t.Fatalf("GET %s: %d %s", p, resp.StatusCode, body)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", p, err)
		}
	}
	var meta struct {
		Issuer       string `json:"issuer"`
		Registration string `json:"registration_endpoint"`
	}
	get("/.well-known/oauth-authorization-server", &meta)
	if meta.Issuer != cfg.PublicURL || meta.Registration != cfg.PublicURL+"/register" {
		t.Fatalf("authorization server metadata %+v, want issuer %s", meta, cfg.PublicURL)
	}
	var jwks struct {
		Keys []struct {
			Kty, Crv, X string
		} `json:"keys"`
	}
	get("/jwks", &jwks)
	pub := parseSigningKey(t, secretData(t, r, oauthSigningSecret)["signing.pem"]).Public().(ed25519.PublicKey)
	if len(jwks.Keys) != 1 || jwks.Keys[0].Kty != "OKP" || jwks.Keys[0].Crv != "Ed25519" || jwks.Keys[0].X != base64.RawURLEncoding.EncodeToString(pub) {
		t.Fatalf("JWKS %+v is not the public half of the chart's signing key", jwks)
	}
}

// runOnLoopback starts the shards and the gateway of a rendered release on
// loopback and returns the gateway's public listen address once it is ready.
func runOnLoopback(t *testing.T, r release) string {
	t.Helper()
	requireRoles(t, loadChartCerts(t, r))
	cfgText := gatewayYAML(t, r)
	cfg := parseGatewayConfig(t, cfgText)
	root := t.TempDir()

	for i, w := range cfg.Wings {
		host, _, _ := strings.Cut(w.Address, ":")
		pod, _, _ := strings.Cut(host, ".")
		s := r.get(t, "StatefulSet", strings.TrimSuffix(pod, "-0"))
		argv, quic, admin := loopbackShard(t, r, s, filepath.Join(root, w.Name), nil)
		// The shard's own check accepts what the chart mounts.
		checkRun(t, append(slices.Clone(argv), "--check-config")...)
		p := start(t, w.Name, argv...)
		waitReady(t, p, "http://"+admin+"/readyz")
		cfgText = strings.Replace(cfgText, fmt.Sprintf("address: %q", w.Address), fmt.Sprintf("address: %q", quic), 1)
		cfg.Wings[i].Address = quic
	}

	d := r.one(t, "Deployment")
	etc := filepath.Join(root, "gateway", "etc")
	writeMounted(t, r, d, "/etc/brainstem", etc)
	listen, admin := freeTCP(t), freeTCP(t)
	cfgText = strings.ReplaceAll(cfgText, "/etc/brainstem/", etc+"/")
	cfgText = strings.Replace(cfgText, fmt.Sprintf("listen: %q", cfg.Listen), fmt.Sprintf("listen: %q", listen), 1)
	cfgText = strings.Replace(cfgText, fmt.Sprintf("admin_listen: %q", cfg.AdminListen), fmt.Sprintf("admin_listen: %q", admin), 1)
	if strings.Contains(cfgText, ".svc.cluster.local") || strings.Contains(cfgText, `":8443"`) {
		t.Fatalf("rewrite incomplete:\n%s", cfgText)
	}
	cfgFile := filepath.Join(etc, "gateway.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	_, gflags := args(t, container(t, d))
	if gflags["config"] != "/etc/brainstem/gateway.yaml" {
		t.Fatalf("gateway --config %q", gflags["config"])
	}
	// The gateway's own check accepts the chart's certificates: a
	// gateway-role identity whose key matches, chaining to the CA.
	checkRun(t, "gateway", "--check-config", "--config="+cfgFile)
	gw := start(t, "gateway", "gateway", "--config="+cfgFile)
	waitReady(t, gw, "http://"+admin+"/readyz")
	return listen
}

// loopbackShard prepares a shard StatefulSet to run on loopback under dir:
// its mounted files written to dir/etc (the Secrets the release does not
// render taken from external, by name), its brain at dir/data, and its
// command line with those paths and free loopback listen addresses.
func loopbackShard(t *testing.T, r release, s obj, dir string, external map[string]map[string][]byte) (argv []string, quic, admin string) {
	t.Helper()
	etc, data := filepath.Join(dir, "etc"), filepath.Join(dir, "data")
	writeMountedFrom(t, r, s, "/etc/brainstem", etc, external)
	quic, admin = freeUDP(t), freeTCP(t)
	sub, flags := args(t, container(t, s))
	argv = []string{sub}
	for _, k := range sortedKeys(flags) {
		v := flags[k]
		v = strings.Replace(v, "/etc/brainstem", etc, 1)
		if !strings.HasPrefix(k, "git-remote") {
			v = strings.Replace(v, "/data", data, 1)
		}
		switch k {
		case "listen":
			v = quic
		case "admin-listen":
			v = admin
		}
		argv = append(argv, "--"+k+"="+v)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	return argv, quic, admin
}

// writeMounted writes every file a workload's projected volumes mount under
// mountRoot into dir, with the content of the rendered ConfigMap or Secret.
func writeMounted(t *testing.T, r release, o obj, mountRoot, dir string) {
	t.Helper()
	writeMountedFrom(t, r, o, mountRoot, dir, nil)
}

// writeMountedFrom is writeMounted with the data of Secrets that exist
// outside the release (an operator's credentials), by name.
func writeMountedFrom(t *testing.T, r release, o obj, mountRoot, dir string, external map[string]map[string][]byte) {
	t.Helper()
	c := container(t, o)
	vols := map[string]any{}
	for _, v := range digList(t, podSpec(t, o), "volumes") {
		vols[digString(t, v, "name")] = v
	}
	for _, m := range digList(t, c, "volumeMounts") {
		if dig(m, "mountPath") != mountRoot {
			continue
		}
		for _, s := range digList(t, vols[digString(t, m, "name")], "projected", "sources") {
			var data map[string][]byte
			var items []any
			if cm := dig(s, "configMap"); cm != nil {
				data = map[string][]byte{}
				for k, v := range digMap(t, r.get(t, "ConfigMap", digString(t, cm, "name")), "data") {
					data[k] = []byte(v.(string))
				}
				items = digList(t, cm, "items")
			} else if sec := dig(s, "secret"); sec != nil {
				if ext, ok := external[digString(t, sec, "name")]; ok {
					data = ext
				} else {
					data = secretData(t, r, digString(t, sec, "name"))
				}
				items = digList(t, sec, "items")
			}
			for _, it := range items {
				p := filepath.Join(dir, digString(t, it, "path"))
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data[digString(t, it, "key")], 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// checkRun runs a brainstem --check-config command line and requires it to
// pass.
func checkRun(t *testing.T, argv ...string) {
	t.Helper()
	bin, err := brainstemBin()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("brainstem %v: %v\n%s", argv, err, out)
	}
}

// proc is a started brainstem process and its combined output.
type proc struct {
	name string
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start runs the brainstem binary until the test ends.
func start(t *testing.T, name string, argv ...string) *proc {
	t.Helper()
	bin, err := brainstemBin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &proc{name: name, done: make(chan struct{})}
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Stdout, cmd.Stderr = p, p
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 20 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		cancel()
		<-p.done
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

// waitReady polls a readiness URL until it answers 200, the process exits,
// or a minute passes (processes outside the test cannot signal readiness
// any other way).
func waitReady(t *testing.T, p *proc, url string) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		if resp, err := client.Get(url); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before %s answered 200:\n%s", p.name, p.err, url, p.output())
		case <-deadline.C:
			t.Fatalf("%s: %s not ready after a minute, last answer: %s\n%s", p.name, url, last, p.output())
		case <-tick.C:
		}
	}
}

func freeTCP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func freeUDP(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
