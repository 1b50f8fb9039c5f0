package signin

import (
	"errors"
	"slices"
	"testing"
)

func TestSystemBrowserCommands(t *testing.T) {
	const u = "https://brain.acme.com/authorize?x=1"
	tests := []struct {
		goos    string
		env     map[string]string
		want    [][]string
		wantErr bool
	}{
		{"darwin", nil, [][]string{{"open", u}}, false},
		{"windows", nil, [][]string{{"rundll32", "url.dll,FileProtocolHandler", u}}, false},
		{"linux", map[string]string{"DISPLAY": ":0"}, [][]string{{"xdg-open", u}}, false},
		{"linux", map[string]string{"WAYLAND_DISPLAY": "wayland-0"}, [][]string{{"xdg-open", u}}, false},
		{"linux", nil, nil, true},
		{"plan9", nil, nil, true},
		{"linux", map[string]string{"BROWSER": "firefox"}, [][]string{{"firefox", u}}, false},
		{"darwin", map[string]string{"BROWSER": "w3m -o x %s:lynx"}, [][]string{{"w3m", "-o", "x", u}, {"lynx", u}}, false},
	}
	for _, tt := range tests {
		b := SystemBrowser{GOOS: tt.goos, Getenv: func(k string) string { return tt.env[k] }}
		got, err := b.Commands(u)
		if tt.wantErr {
			if !errors.Is(err, ErrNoBrowser) {
				t.Errorf("%s %v: %v, want ErrNoBrowser", tt.goos, tt.env, err)
			}
			continue
		}
		if err != nil || !slices.EqualFunc(got, tt.want, slices.Equal) {
			t.Errorf("%s %v: %q, %v; want %q", tt.goos, tt.env, got, err, tt.want)
		}
	}
}
