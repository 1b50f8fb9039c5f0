package gateway

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/gateway/route"
)

// fakeSession is a listener's stream, read by the test.
type fakeSession struct{ ch chan mcp.JSONRPCNotification }

func (f *fakeSession) Initialize()                                         {}
func (f *fakeSession) Initialized() bool                                   { return true }
func (f *fakeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return f.ch }
func (f *fakeSession) SessionID() string                                   { return "fake" }

// TestNotifyOnlyReaders: a change of a wing is notified to the listeners
// whose grants read it, and to no one else.
func TestNotifyOnlyReaders(t *testing.T) {
	e := newEnv(t, []string{"open", "closed"}, map[string]auth.Policy{
		"open":   policyOpen,
		"closed": {Readers: []string{"email:alice@acme.com"}},
	})
	e.client(t, e.idp.token(t, "alice@acme.com"), true)
	e.client(t, e.idp.token(t, "bob@acme.com"), true)
	for _, c := range []struct {
		email, wing string
		told        bool
	}{
		{"alice@acme.com", "closed", true},
		{"bob@acme.com", "closed", false},
		{"bob@acme.com", "open", true},
	} {
		f := &fakeSession{ch: make(chan mcp.JSONRPCNotification, 1)}
		if !e.gw.watch.NotifyForTest(context.Background(), c.email, f, []*route.Wing{e.gw.byName[c.wing]}) {
			t.Fatalf("no listener of %s", c.email)
		}
		select {
		case n := <-f.ch:
			if !c.told || n.Method != mcp.MethodNotificationResourcesListChanged {
				t.Errorf("%s told %s of a change of %s", c.email, n.Method, c.wing)
			}
		default:
			if c.told {
				t.Errorf("%s not told of a change of %s", c.email, c.wing)
			}
		}
	}
}

// TestNotifyAcrossReplicas: a client listening on one gateway replica
// hears of a write made through another replica (each watches the shards).
func TestNotifyAcrossReplicas(t *testing.T) {
	e := newEnv(t, []string{"open"}, map[string]auth.Policy{"open": policyOpen},
		func(c *config.Config, _ *Options) { c.Shards.WatchInterval = 50 * time.Millisecond })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := e.config([]config.WingConfig{{Name: "open", Address: e.shards["open"].addr, ServerName: "localhost"}}, base)
	e.startGatewayOn(ln, cfg, Options{})

	tok := e.idp.token(t, "alice@acme.com")
	//lint:ignore SA1019 the session protocol's GET stream is what a 2025-* client listens on
	listening := newMCPClient(t, e.url, tok, true, transport.WithContinuousListening())
	heard := make(chan struct{}, 4)
	listening.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationResourcesListChanged {
			heard <- struct{}{}
		}
	})
	other := newMCPClient(t, base+"/mcp", tok, false)
	if text, isErr := call(t, other, "brain_write", `{"id":"open/facts/x","body":"b"}`); isErr {
		t.Fatalf("brain_write through the other replica: %s", text)
	}
	select {
	case <-heard:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener never heard of the write made through the other replica")
	}
}
