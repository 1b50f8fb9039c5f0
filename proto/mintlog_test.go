package proto

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/tooling/logcheck"
)

// TestRefusedMintIsLogged: a mint from a peer that is not a gateway is
// refused before the handler, and the server logs it with the peer
// certificate's role and the reason.
func TestRefusedMintIsLogged(t *testing.T) {
	f := newFixture(t)
	var logs logcheck.Buffer
	srv := startServer(t, f, &handler{}, ServerConfig{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}, "127.0.0.1:0")
	c := newClient(t, f, srv.Addr().String(), ClientConfig{TLS: f.clientTLS(t, pki.RoleShard), DialTimeout: 2 * time.Second})
	if _, err := c.Mint(context.Background(), &MintRequest{RequestID: "m-1", Email: "ada@acme.com"}); CodeOf(err) != CodeWrongRole {
		t.Fatalf("mint from a shard certificate: %v, want wrong_role", err)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "proto: mint refused" {
			continue
		}
		if rec["peer_role"] != "shard" || rec["request_id"] != "m-1" || rec["email"] != "ada@acme.com" || !strings.Contains(rec["reason"].(string), "gateways") {
			t.Fatalf("refusal logged as %s", line)
		}
		return
	}
	t.Fatalf("no refusal logged:\n%s", logs.String())
}
