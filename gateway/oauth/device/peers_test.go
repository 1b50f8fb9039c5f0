package device

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/tooling/oauthtest"
	"github.com/brainstem/brainstem/tooling/testbrowser"
)

// peerEnv is n replicas of one gateway (one issuer: the front's URL)
// behind a reverse proxy whose route picks the replica of each request,
// the replicas reaching each other on admin listeners of their own.
type peerEnv struct {
	*testEnv
	front  *replica   // the proxy: the URL clients and browsers use
	backs  []*replica // the replicas, each at its own address
	admins []string   // their peer addresses
	lns    []net.Listener
	stops  []func() // stop each replica's admin listener
	hits   []atomic.Int64

	lastClient string         // the client of the last flow
	lastDevice map[string]any // its device answer
}

func newPeerEnv(t *testing.T, n int, peers bool, route func(r *http.Request, seq int64) int) *peerEnv {
	t.Helper()
	pe := &peerEnv{testEnv: newEnv(t, 0, nil), hits: make([]atomic.Int64, n)}
	fln, fu := oauthtest.Listen(t)
	pe.front = &replica{URL: fu}
	for range n {
		aln, _ := oauthtest.Listen(t)
		pe.lns = append(pe.lns, aln)
		pe.admins = append(pe.admins, aln.Addr().String())
	}
	for i := range n {
		ln, u := oauthtest.Listen(t)
		r := replicaAt(pe.testEnv, ln, fu, nil, func(o *Options) {
			if peers {
				o.Peers = &Peers{Self: pe.admins[i], List: func(context.Context) ([]string, error) { return pe.admins, nil }}
			}
		})
		r.URL = u
		pe.backs = append(pe.backs, r)
	}
	var seq atomic.Int64
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		i := route(pr.In, seq.Add(1)-1)
		pe.hits[i].Add(1)
		b, _ := url.Parse(pe.backs[i].URL)
		pr.SetURL(b)
		pr.Out.Host = pr.In.Host
	}}
	oauthtest.Serve(t, fln, proxy)
	return pe
}

// startAdmins serves each replica's peer endpoint on its admin address.
func (pe *peerEnv) startAdmins(t *testing.T) {
	t.Helper()
	for i, r := range pe.backs {
		mux := http.NewServeMux()
		mux.Handle("POST "+PathPeer, devOf(r).PeerHandler())
		pe.stops = append(pe.stops, oauthtest.Serve(t, pe.lns[i], mux))
	}
}

// flow runs a whole device sign-in through the front and returns the
// token answer.
func (pe *peerEnv) flow(t *testing.T) (int, map[string]any) {
	t.Helper()
	id := pe.deviceApp(pe.front)
	dev := pe.device(pe.front, id)
	pe.lastClient, pe.lastDevice = id, dev
	done := approve(t, testbrowser.New(), pe.front, dev["user_code"].(string), "erin@example.com")
	if done.Status != http.StatusOK || !strings.Contains(done.Body, "signed in as erin@example.com") {
		t.Fatalf("result page: %d %s", done.Status, testbrowser.Text(done.Body))
	}
	pe.Clock.Advance(10 * time.Second)
	return pe.Token(pe.front, poll(id, dev))
}

// TestDevicePeers: a device sign-in started at one replica completes
// through another: the typed code, the approval, the IdP's callback and
// the polls each reach a replica that does not hold the request and are
// passed to the one that does.
func TestDevicePeers(t *testing.T) {
	t.Run("every step at the other replica", func(t *testing.T) {
		// The device request goes to replica 0; everything else to replica 1.
		pe := newPeerEnv(t, 2, true, func(r *http.Request, _ int64) int {
			if r.URL.Path == PathAuthorization {
				return 0
			}
			return 1
		})
		pe.startAdmins(t)
		st, out := pe.flow(t)
		if st != http.StatusOK || out["access_token"] == nil || out["refresh_token"] == nil {
			t.Fatalf("token: %d %v", st, out)
		}
		who, err := oauthtest.IdentityOf(t, pe.backs[1], out["access_token"].(string))
		if err != nil || who.Email != "erin@example.com" {
			t.Fatalf("access token: %+v %v", who, err)
		}
		if pe.hits[0].Load() != 1 {
			t.Fatalf("replica 0 was reached %d times directly, want only the device request", pe.hits[0].Load())
		}
		if n := len(devOf(pe.backs[1]).devices.byID); n != 0 {
			t.Fatalf("replica 1 holds %d device requests; the request lives where it was made", n)
		}
		// The request was redeemed at its holder: a poll again, passed there
		// too, finds it spent.
		pe.Clock.Advance(10 * time.Second)
		st, out = pe.Token(pe.front, poll(pe.lastClient, pe.lastDevice))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
		if !strings.Contains(out["error_description"].(string), "already used") {
			t.Fatalf("a spent device code: %v", out)
		}
	})
	t.Run("round robin", func(t *testing.T) {
		pe := newPeerEnv(t, 2, true, func(_ *http.Request, seq int64) int { return int(seq % 2) })
		pe.startAdmins(t)
		if st, out := pe.flow(t); st != http.StatusOK || out["access_token"] == nil {
			t.Fatalf("token: %d %v", st, out)
		}
	})
	t.Run("without peers the code is unknown at the other replica", func(t *testing.T) {
		pe := newPeerEnv(t, 2, false, func(r *http.Request, _ int64) int {
			if r.URL.Path == PathAuthorization {
				return 0
			}
			return 1
		})
		id := pe.deviceApp(pe.front)
		dev := pe.device(pe.front, id)
		p := typeCode(t, testbrowser.New(), pe.front, dev["user_code"].(string))
		if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "No sign-in request has this code") {
			t.Fatalf("typed code at a replica without peers: %d %s", p.Status, testbrowser.Text(p.Body))
		}
	})
	t.Run("the holder down", func(t *testing.T) {
		pe := newPeerEnv(t, 2, true, func(r *http.Request, _ int64) int {
			if r.URL.Path == PathAuthorization {
				return 0
			}
			return 1
		})
		pe.startAdmins(t)
		id := pe.deviceApp(pe.front)
		dev := pe.device(pe.front, id)
		pe.stops[0]() // replica 0's peer endpoint is gone
		p := typeCode(t, testbrowser.New(), pe.front, dev["user_code"].(string))
		if p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "No sign-in request has this code") {
			t.Fatalf("typed code, holder down: %d %s", p.Status, testbrowser.Text(p.Body))
		}
		st, out := pe.Token(pe.front, poll(id, dev))
		oauthtest.WantTokenError(t, st, out, http.StatusBadRequest, "invalid_grant")
		if !strings.Contains(out["error_description"].(string), "did not answer") {
			t.Fatalf("poll, holder down: %v", out)
		}
	})
}

// TestPeerRefusals: the peer endpoint refuses whatever is not a fresh
// request sealed for it, once.
func TestPeerRefusals(t *testing.T) {
	pe := newPeerEnv(t, 2, true, func(*http.Request, int64) int { return 0 })
	pe.startAdmins(t)
	srv := pe.backs[0].Srv
	now := pe.Clock.Now()
	seal := func(req peerRequest) string {
		s, err := srv.Seal(purposePeerRequest, req)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := peerRequest{Op: "find", Code: "BCDFGHJK", To: pe.admins[0], Nonce: "n-1", Exp: now.Add(peerTTL).Unix()}
	replayed := seal(good)
	post := func(body string) int {
		resp, err := http.Post("http://"+pe.admins[0]+PathPeer, "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := post(replayed); st != http.StatusOK {
		t.Fatalf("a good peer request: %d", st)
	}
	with := func(f func(*peerRequest)) string {
		r := good
		r.Nonce = oauth.RandomString(8)
		f(&r)
		return seal(r)
	}
	foreign, _ := oauthtest.BareServer(t, nil).Seal(purposePeerRequest, good) // another key
	wrongPurpose, _ := srv.Seal(purposeDeviceCode, good)
	build := map[string]func() string{
		"garbage":           func() string { return "not sealed" },
		"empty":             func() string { return "" },
		"replayed":          func() string { return replayed },
		"another-key":       func() string { return foreign },
		"another-purpose":   func() string { return wrongPurpose },
		"another-peer":      func() string { return with(func(r *peerRequest) { r.To = pe.admins[1] }) },
		"expired":           func() string { return with(func(r *peerRequest) { r.Exp = now.Add(-time.Second).Unix() }) },
		"too-far-ahead":     func() string { return with(func(r *peerRequest) { r.Exp = now.Add(time.Hour).Unix() }) },
		"unknown-operation": func() string { return with(func(r *peerRequest) { r.Op = "delete" }) },
		"register": func() string {
			return with(func(r *peerRequest) { r.Op, r.Method, r.URI = "forward", http.MethodPost, PathRegister })
		},
		"authorize": func() string {
			return with(func(r *peerRequest) { r.Op, r.Method, r.URI = "forward", http.MethodGet, PathAuthorize })
		},
		"path-escape": func() string {
			return with(func(r *peerRequest) {
				r.Op, r.Method, r.URI = "forward", http.MethodPost, PathPage+"/.."+PathRegister
			})
		},
		"too-large": func() string { return strings.Repeat("A", maxPeerBytes+1) },
	}
	raw, err := os.ReadFile("testdata/peers.txt")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(string(raw), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		name, want := f[0], f[1]
		listed[name] = true
		t.Run(name, func(t *testing.T) {
			b, ok := build[name]
			if !ok {
				t.Fatalf("testdata/peers.txt lists %q, which the test cannot build", name)
			}
			if st := post(b()); strconv.Itoa(st) != want {
				t.Fatalf("status %d, want %s", st, want)
			}
		})
	}
	for name := range build {
		if !listed[name] {
			t.Errorf("the case %q is not in testdata/peers.txt", name)
		}
	}
	t.Run("GET", func(t *testing.T) {
		resp, err := http.Get("http://" + pe.admins[0] + PathPeer)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
			t.Fatalf("GET: %d", resp.StatusCode)
		}
	})
}
