package docstest

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	n := normalizer{ports: []portPair{{8080, 23456}, {5556, 23458}}}
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:23456/mcp and localhost:23458", "http://127.0.0.1:8080/mcp and localhost:5556"},
		{"127.0.0.1:234567 stays", "127.0.0.1:234567 stays"},
		{"Bearer eyJhbGciOi.eyJzdWIi.sig-_x", "Bearer <token>"},
		{"expires 2026-12-07T21:39:39Z, at 2026-10-02T14:00:00.123+02:00", "expires <time>, at <time>"},
		{`"content_hash":"cd58f460aa12"`, `"content_hash":"<hex>"`},
		{"score 6.413274258180154", "score 6.413274258180154"},
		{"gw-0123456789abcdef0123456789abcdef", "gw-<hex>"},
		{"id 123e4567-e89b-12d3-a456-426614174000", "id <uuid>"},
		{"ready in 361ms, 1.5s, 8h0m0s", "ready in <duration>, <duration>, <duration>"},
		{"Brain: /tmp/brainstem-dev-3514628634/brain", "Brain: <tmp>/brain"},
	}
	for _, tt := range tests {
		if got := n.apply(tt.in); got != tt.want {
			t.Errorf("apply(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMatch(t *testing.T) {
	envelope := `{
  "content": [{"type": "text", "text": "{\"wings\":[{\"wing\":\"payments\",\"capabilities\":[\"read\"]}]}"}],
  "structuredContent": {"wings": [{"wing": "payments", "capabilities": ["read"]}]}
}`
	n := normalizer{ports: []portPair{{8080, 23456}}}
	tests := []struct {
		name           string
		want           []string
		stdout, stderr string
		diff           string // "" when it matches
	}{
		{"the tool's text in the Inspector's envelope", []string{`{"wings":[{"wing":"payments","capabilities":["read"]}]}`}, envelope, "", ""},
		{"wrapped and indented", []string{`{"wings":[{"wing":"payments",`, `  "capabilities":["read"]}]}`}, envelope, "", ""},
		{"cut with …", []string{`{"wings":[{"wing":"pay…]}`}, envelope, "", ""},
		{"on stderr", []string{`{"error":{"code":"error","message":"resource not found: x"}}`}, "", `{"error":{"code":"error","message":"resource not found: x"}}`, ""},
		{"hashes cut short", []string{`{"content_hash":"cd58f460…"}`}, `{"content_hash":"cd58f460aa12bb34"}`, "", ""},
		{"ports and tokens", []string{"http://127.0.0.1:8080/mcp Bearer <token>"}, "http://127.0.0.1:23456/mcp Bearer eyJa.eyJb.c", "", ""},
		{"a wrong value", []string{`{"wings":[{"wing":"payments","capabilities":["write"]}]}`}, envelope, "", `the docs show `},
		{"more than shown", []string{`{"wings":[]`}, `{"wings":[]}`, "", "it prints more than the docs show"},
		{"a middle part missing", []string{`{"a":1,…"c":3…}`}, `{"a":1,"b":2}`, "", "which it does not print"},
		{"a different end", []string{`{"a":1…"z":9}`}, `{"a":1,"b":2}`, "", "the docs end with"},
		{"text lines", []string{"✓ TLS   plain http", "✗ clock"}, "✓ TLS plain http\n✗ clock\n", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := match(tt.want, tt.stdout, tt.stderr, n)
			switch {
			case tt.diff == "" && got != "":
				t.Errorf("match = %q, want a match", got)
			case tt.diff != "" && !strings.Contains(got, tt.diff):
				t.Errorf("match = %q, want %q", got, tt.diff)
			}
		})
	}
}
