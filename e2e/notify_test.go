package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/tooling/devenv"
)

// notifyDeadline is the acceptance bound: a listening client hears of a
// write within it.
const notifyDeadline = 2 * time.Second

// changeListener counts the notifications/resources/list_changed a client
// receives and lets a test wait for the next one.
type changeListener struct {
	mu      sync.Mutex
	n       int
	updated []string      // the URIs of notifications/resources/updated, in order
	upd     chan struct{} // signalled on every resources/updated
	acked   chan struct{} // closed on subscriptions/acknowledged (2026-07-28)
	next    chan struct{} // signalled on every list_changed
}

func (l *changeListener) count() int { l.mu.Lock(); defer l.mu.Unlock(); return l.n }

// listen opens a listening client for email on version: the GET stream of
// a session (2025-*), or a subscriptions/listen stream asking for
// resourcesListChanged (2026-07-28), acknowledged before it returns.
func listen(t *testing.T, env *devenv.Env, email, version string, subscribe ...string) *changeListener {
	t.Helper()
	l := &changeListener{acked: make(chan struct{}), next: make(chan struct{}, 16), upd: make(chan struct{}, 16)}
	var once sync.Once
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token(t, env, email)})}
	if version != mcp.ProtocolVersion20260728 {
		//lint:ignore SA1019 the session protocol's GET stream is what a 2025-* client listens on
		opts = append(opts, transport.WithContinuousListening()) // the session's GET stream
	}
	tr, err := transport.NewStreamableHTTP(env.MCPURL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(version))
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			once.Do(func() { close(l.acked) })
		case mcp.MethodNotificationResourcesListChanged:
			l.mu.Lock()
			l.n++
			l.mu.Unlock()
			l.next <- struct{}{}
		case mcp.MethodNotificationResourceUpdated:
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			l.mu.Lock()
			l.updated = append(l.updated, uri)
			l.mu.Unlock()
			l.upd <- struct{}{}
		}
	})
	initialize(t, c)
	if got := c.ProtocolVersion(); got != version {
		t.Fatalf("the listener speaks %s, not %s", got, version)
	}
	if version != mcp.ProtocolVersion20260728 {
		for _, uri := range subscribe {
			req := mcp.SubscribeRequest{}
			req.Params.URI = uri
			//lint:ignore SA1019 resources/subscribe is how a 2025-* client subscribes
			if err := c.Subscribe(context.Background(), req); err != nil {
				t.Fatalf("resources/subscribe %s: %v", uri, err)
			}
		}
	}
	if version == mcp.ProtocolVersion20260728 {
		filter := mcp.SubscriptionFilter{ResourcesListChanged: true, ResourceSubscriptions: subscribe}
		stop, err := c.ListenAsync(context.Background(), filter, func(err error) { t.Errorf("listen: %v", err) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		select {
		case <-l.acked:
		case <-time.After(10 * time.Second):
			t.Fatal("subscriptions/listen was not acknowledged")
		}
	}
	return l
}

// wait waits for the next notification, at most notifyDeadline, and
// returns how long it took.
func (l *changeListener) wait(t *testing.T, what string, since time.Time) time.Duration {
	t.Helper()
	select {
	case <-l.next:
		return time.Since(since)
	case <-time.After(notifyDeadline - time.Since(since)):
		t.Fatalf("%s: no notifications/resources/list_changed within %s", what, notifyDeadline)
		return 0
	}
}

// TestChangeNotifications: on each protocol revision a listening client
// hears notifications/resources/list_changed within 2 s of a write made
// through another session, for a wing it can read; bob, who cannot read
// people-ops, is not told of a people-ops write (he hears the platform
// write that follows it, and that one only).
func TestChangeNotifications(t *testing.T) {
	env := startResourcesEnv(t)
	for _, version := range protocolVersions {
		t.Run(version, func(t *testing.T) {
			alice := listen(t, env, "alice@example.com", version)
			bob := listen(t, env, "bob@example.com", version)
			writer := versionClient(t, env, "alice@example.com", version)
			write := func(wing, slug string) time.Time {
				t.Helper()
				text, isErr := call(t, writer, "brain_write", fmt.Sprintf(`{"wing":%q,"hall":"facts","slug":%q,"title":"Heard of","body":"A change.\n"}`, wing, slug))
				if isErr {
					t.Fatalf("brain_write: %s", text)
				}
				return time.Now()
			}
			v := "n-" + version
			at := write("people-ops", v+"-secret")
			d1 := alice.wait(t, "alice, a people-ops write", at)
			at = write("platform", v+"-open")
			d2 := alice.wait(t, "alice, a platform write", at)
			d3 := bob.wait(t, "bob, a platform write", at)
			t.Logf("%s: notified %v and %v after the write (alice), %v (bob); deadline %v", version, d1.Round(time.Millisecond), d2.Round(time.Millisecond), d3.Round(time.Millisecond), notifyDeadline)
			// A third write bob hears of: had he been told of the people-ops
			// write, that notice came before the platform one on his ordered
			// stream, and he would now hold three.
			at = write("platform", v+"-again")
			bob.wait(t, "bob, a second platform write", at)
			if n := bob.count(); n != 2 {
				t.Errorf("bob heard %d notifications for two platform writes and a people-ops write; want 2", n)
			}
		})
	}
}

// TestResourceUpdated: on each protocol revision a client subscribed to a
// note (resources/subscribe, or the resourceSubscriptions of its
// subscriptions/listen) hears notifications/resources/updated with its URI
// within 2 s of a change of that note, and not of a change of another note
// of the wing (whose resources/list_changed it hears).
func TestResourceUpdated(t *testing.T) {
	env := startResourcesEnv(t)
	const id = "platform/decisions/use-quic-for-internal-rpc"
	for _, version := range protocolVersions {
		t.Run(version, func(t *testing.T) {
			sub := listen(t, env, "alice@example.com", version, "brain://"+id)
			writer := versionClient(t, env, "alice@example.com", version)
			text, isErr := call(t, writer, "brain_update", fmt.Sprintf(`{"id":%q,"body":"QUIC, %s.\n","reason":"notification test"}`, id, version))
			if isErr {
				t.Fatalf("brain_update: %s", text)
			}
			at := time.Now()
			select {
			case <-sub.upd:
				t.Logf("%s: resources/updated %v after the update", version, time.Since(at).Round(time.Millisecond))
			case <-time.After(notifyDeadline):
				t.Fatalf("no notifications/resources/updated within %s", notifyDeadline)
			}
			// Another note of the wing: the list changed, the subscribed note
			// did not (an updated notice would precede list_changed on the
			// ordered stream).
			sub.wait(t, "the update's list_changed", at)
			text, isErr = call(t, writer, "brain_write", fmt.Sprintf(`{"wing":"platform","hall":"facts","slug":"upd-%s","title":"Other","body":"x\n"}`, version))
			if isErr {
				t.Fatalf("brain_write: %s", text)
			}
			sub.wait(t, "a write of another note", time.Now())
			sub.mu.Lock()
			defer sub.mu.Unlock()
			if len(sub.updated) != 1 || sub.updated[0] != "brain://"+id {
				t.Errorf("resources/updated for %v, want once for brain://%s", sub.updated, id)
			}
		})
	}
}
