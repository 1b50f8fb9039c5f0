package gateway

import (
	"strings"
	"testing"
)

func TestSpanMethod(t *testing.T) {
	for in, want := range map[string]string{
		"tools/call":                 "tools/call",
		"notifications/initialized":  "notifications/initialized",
		"":                           "request",
		"tools/call\n":               "other",
		"alice@example.com":          "other",
		strings.Repeat("a", 65):      "other",
		"subscriptions/listen":       "subscriptions/listen",
		"resources/templates_list-x": "resources/templates_list-x",
	} {
		if got := spanMethod(in); got != want {
			t.Errorf("spanMethod(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMetaTraceparent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for in, want := range map[string]string{
		`{"name":"x","_meta":{"traceparent":"` + tp + `"}}`: tp,
		`{"name":"x","_meta":{"traceparent":7}}`:            "",
		`{"name":"x"}`:                                      "",
		`not json`:                                          "",
		``:                                                  "",
	} {
		if got := metaTraceparent([]byte(in)); got != want {
			t.Errorf("metaTraceparent(%s) = %q, want %q", in, got, want)
		}
	}
}
