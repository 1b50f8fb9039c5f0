package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/auth/offboard"
)

// benchToken is an access token of s for alice with three groups.
func benchToken(b *testing.B, s *Server) string {
	b.Helper()
	body, terr := s.issue(auth.Identity{Email: "alice@example.com", Groups: []string{"eng", "people-team", "oncall"}},
		"client", "", "fam", time.Now().Add(time.Hour).Unix(), "bench")
	if terr != nil {
		b.Fatal(terr)
	}
	var r tokenResponse
	if err := json.Unmarshal(body, &r); err != nil {
		b.Fatal(err)
	}
	return r.AccessToken
}

// BenchmarkVerifyAccessToken is what /mcp pays per request for one of the
// gateway's own access tokens: the key-id check that routes it (Handles),
// then Verify, uncached (a new token: Ed25519 and claims) and cached (the
// same token again), beside auth/sso's BenchmarkVerifyCached for the IdP's
// tokens.
func BenchmarkVerifyAccessToken(b *testing.B) {
	s := benchServer(b)
	tok := benchToken(b, s)
	ctx := context.Background()
	b.Run("handles", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !s.Handles(tok) {
				b.Fatal("not handled")
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.verified.Purge()
			if _, err := s.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Offboarding's cost: the same, with 10,000 people's sign-ins ended
	// (none of them alice).
	var ended []offboard.Entry
	for i := range 10000 {
		ended = append(ended, offboard.Entry{Email: fmt.Sprintf("left-%d@example.com", i), NotBefore: time.Now()})
	}
	s.ended.SetFile(ended)
	b.Run("uncached, 10000 ended sign-ins", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.verified.Purge()
			if _, err := s.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached, 10000 ended sign-ins", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Verify(ctx, tok); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchServer(b *testing.B) *Server {
	b.Helper()
	k, err := auth.GenerateKey()
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(context.Background(), Config{
		Enabled: true, SigningKeyFile: "unused",
		Upstream: UpstreamConfig{Issuer: "http://127.0.0.1:1", ClientID: "c", ClientSecret: "s"},
	}, Options{Issuer: "http://127.0.0.1:1", Resource: "http://127.0.0.1:1/mcp", Verifier: refusingVerifier{}, Keys: []auth.KeyPair{k}})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkDevice is what the device flow costs a replica: a device
// request (form, client id check, user code, store, sealing), a poll of a
// pending request (opening the device code, the store, the answer), and a
// typed code's look-up with MaxDeviceGrants requests held — and the memory
// those requests take.
func BenchmarkDevice(b *testing.B) {
	s := benchServer(b)
	c, rerr := s.register([]byte(`{"client_name":"D","grant_types":["`+GrantTypeDevice+`"]}`), time.Now())
	if rerr != nil {
		b.Fatal(rerr)
	}
	form := url.Values{"client_id": {c.ID}}.Encode()
	request := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, PathDeviceAuthorization, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		s.serveDeviceAuthorization(w, req)
		return w
	}
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.limits.Purge()
			if len(s.devices.byID) >= MaxDeviceGrants-1 {
				s.devices = newDeviceStore()
			}
			if w := request(); w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
	s.devices = newDeviceStore()
	var dev deviceResponse
	if err := json.Unmarshal(request().Body.Bytes(), &dev); err != nil {
		b.Fatal(err)
	}
	var pending *deviceGrant
	for _, g := range s.devices.byID {
		pending = g
	}
	b.Run("poll", func(b *testing.B) {
		pf := url.Values{"grant_type": {GrantTypeDevice}, "device_code": {dev.DeviceCode}, "client_id": {c.ID}}.Encode()
		b.ReportAllocs()
		for b.Loop() {
			s.limits.Purge()
			s.devices.update(pending, func(g *deviceGrant) { g.lastPoll = time.Time{} }) // not too soon
			req := httptest.NewRequest(http.MethodPost, PathToken, strings.NewReader(pf))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			w := httptest.NewRecorder()
			s.serveToken(w, req)
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "authorization_pending") {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
	b.Run("lookup_full_store", func(b *testing.B) {
		var before, after runtime.MemStats
		s.devices = newDeviceStore()
		runtime.GC()
		runtime.ReadMemStats(&before)
		now := time.Now()
		var last string
		for range MaxDeviceGrants {
			g := &deviceGrant{id: randomString(16), clientID: c.ID, client: *c, ip: "192.0.2.1",
				computer: describeComputer("brainstem login --device (host build-box-7; linux/amd64)"), created: now, exp: now.Add(DeviceCodeTTL)}
			for {
				g.userCode = newUserCode()
				if s.devices.add(g, now) == nil {
					break
				}
			}
			last = g.userCode
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.lookupUserCode(last, now); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/MaxDeviceGrants, "heap-B/request")
	})
}
