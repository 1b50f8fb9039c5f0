package device

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/gateway/oauth"
	"github.com/brainstem/brainstem/signin"
	"github.com/brainstem/brainstem/tooling/oauthtest"
)

// BenchmarkDevice is what the device flow costs a replica: a device
// request (form, client id check, user code, store, sealing), a poll of a
// pending request (opening the device code, the store, the answer), and a
// typed code's look-up with MaxDeviceGrants requests held — and the memory
// those requests take.
func BenchmarkDevice(b *testing.B) {
	s, err := New(oauthtest.BareServer(b, nil), nil)
	if err == nil {
		err = s.srv.Add(s)
	}
	if err != nil {
		b.Fatal(err)
	}
	c := oauthtest.Registered(b, s.srv, `{"client_name":"D","grant_types":["`+oauth.GrantTypeDevice+`"]}`)
	form := url.Values{"client_id": {c.ID}}.Encode()
	request := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, PathAuthorization, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		s.serveDeviceAuthorization(w, req)
		return w
	}
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(s.devices.byID) >= MaxDeviceGrants-1 {
				s.devices = newDeviceStore()
			}
			if w := request(); w.Code != http.StatusOK {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
	s.devices = newDeviceStore()
	var dev signin.DeviceAuthorization
	if err := json.Unmarshal(request().Body.Bytes(), &dev); err != nil {
		b.Fatal(err)
	}
	var pending *deviceGrant
	for _, g := range s.devices.byID {
		pending = g
	}
	b.Run("poll", func(b *testing.B) {
		pf := url.Values{"grant_type": {oauth.GrantTypeDevice}, "device_code": {dev.DeviceCode}, "client_id": {c.ID}}.Encode()
		b.ReportAllocs()
		for b.Loop() {
			s.devices.update(pending, func(g *deviceGrant) { g.lastPoll = time.Time{} }) // not too soon
			req := httptest.NewRequest(http.MethodPost, PathToken, strings.NewReader(pf))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			w := httptest.NewRecorder()
			s.srv.Endpoints().ServeHTTP(w, req)
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
			g := &deviceGrant{id: oauth.RandomString(16), clientID: c.ID, client: *c, ip: "192.0.2.1",
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
