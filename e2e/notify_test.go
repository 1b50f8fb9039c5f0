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
	mu    sync.Mutex
	n     int
	acked chan struct{} // closed on subscriptions/acknowledged (2026-07-28)
	next  chan struct{} // signalled on every list_changed
}

func (l *changeListener) count() int { l.mu.Lock(); defer l.mu.Unlock(); return l.n }

// listen opens a listening client for email on version: the GET stream of
// a session (2025-*), or a subscriptions/listen stream asking for
// resourcesListChanged (2026-07-28), acknowledged before it returns.
func listen(t *testing.T, env *devenv.Env, email, version string) *changeListener {
	t.Helper()
	l := &changeListener{acked: make(chan struct{}), next: make(chan struct{}, 16)}
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
		}
	})
	initialize(t, c)
	if got := c.ProtocolVersion(); got != version {
		t.Fatalf("the listener speaks %s, not %s", got, version)
	}
	if version == mcp.ProtocolVersion20260728 {
		stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ResourcesListChanged: true}, func(err error) { t.Errorf("listen: %v", err) })
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
