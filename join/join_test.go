package join

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestMCPURL(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"brain.acme.com", "https://brain.acme.com/mcp", false},
		{"https://brain.acme.com", "https://brain.acme.com/mcp", false},
		{"https://brain.acme.com/", "https://brain.acme.com/mcp", false},
		{"https://brain.acme.com/mcp", "https://brain.acme.com/mcp", false},
		{"https://acme.com/brain/mcp/", "https://acme.com/brain/mcp", false},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/mcp", false},
		{"http://brain.acme.com", "", true},
		{"ftp://brain.acme.com", "", true},
		{"", "", true},
		{"https://", "", true},
	}
	for _, tt := range tests {
		got, err := MCPURL(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("MCPURL(%q) = %q, %v; want %q, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestDiscover(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{"https://login.example.com"}})
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/other/mcp", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": "https://elsewhere.example.com/mcp"})
	})

	plan, err := Discover(context.Background(), srv.URL, Options{Token: "tok en"})
	if err != nil {
		t.Fatal(err)
	}
	if plan.MCPURL != srv.URL+"/mcp" || len(plan.AuthorizationServers) != 1 {
		t.Fatalf("plan = %+v", plan)
	}
	got := Quote(plan.ClaudeArgs())
	want := "mcp add --transport http --scope user brainstem " + srv.URL + "/mcp --header 'Authorization: Bearer tok en'"
	if got != want {
		t.Errorf("claude args:\n got %s\nwant %s", got, want)
	}
	for _, js := range []string{plan.CursorJSON(), plan.VSCodeJSON()} {
		var v map[string]any
		if err := json.Unmarshal([]byte(js), &v); err != nil || !strings.Contains(js, srv.URL+"/mcp") || !strings.Contains(js, "Bearer tok en") {
			t.Errorf("bad snippet %s (%v)", js, err)
		}
	}

	for _, bad := range []string{srv.URL + "/other", srv.URL + "/missing"} {
		if _, err := Discover(context.Background(), bad, Options{}); !errors.Is(err, ErrNotBrainstem) {
			t.Errorf("Discover(%s) = %v, want ErrNotBrainstem", bad, err)
		}
	}
}
