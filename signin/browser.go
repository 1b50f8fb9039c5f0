package signin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Browser opens the sign-in page for the user. Open returns once the
// browser was asked to show the page; the sign-in finishes when the
// browser reaches the loopback redirect URI.
type Browser interface {
	Open(ctx context.Context, url string) error
}

// BrowserFunc adapts a function to Browser (tests drive a scripted browser
// with it).
type BrowserFunc func(ctx context.Context, url string) error

// Open calls f.
func (f BrowserFunc) Open(ctx context.Context, url string) error { return f(ctx, url) }

// ErrNoBrowser: there is no way to open a browser here (no graphical
// session and no $BROWSER); the URL must be opened by hand.
var ErrNoBrowser = errors.New("signin: cannot open a browser here")

// SystemBrowser opens URLs with the platform's opener: $BROWSER when set
// (a list of commands separated like $PATH, "%s" standing for the URL),
// else xdg-open (Linux and BSDs, when a graphical session is running),
// open (macOS) or rundll32 url.dll,FileProtocolHandler (Windows).
type SystemBrowser struct {
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// GOOS is the platform; "" means runtime.GOOS.
	GOOS string
}

// Open starts the opener and does not wait for it: a browser started in
// the foreground may run until the user closes it.
func (b SystemBrowser) Open(_ context.Context, url string) error {
	cmds, err := b.Commands(url)
	if err != nil {
		return err
	}
	var errs []error
	for _, argv := range cmds {
		cmd := exec.Command(argv[0], argv[1:]...)
		if err := cmd.Start(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", argv[0], err))
			continue
		}
		go func() { _ = cmd.Wait() }() // reap it
		return nil
	}
	return fmt.Errorf("%w: %w", ErrNoBrowser, errors.Join(errs...))
}

// Commands are the command lines Open tries, in order.
func (b SystemBrowser) Commands(url string) ([][]string, error) {
	getenv, goos := b.Getenv, cmp.Or(b.GOOS, runtime.GOOS)
	if getenv == nil {
		getenv = os.Getenv
	}
	var cmds [][]string
	for _, c := range filepath.SplitList(getenv("BROWSER")) {
		f := strings.Fields(c)
		if len(f) == 0 {
			continue
		}
		substituted := false
		for i := range f {
			if strings.Contains(f[i], "%s") {
				f[i], substituted = strings.ReplaceAll(f[i], "%s", url), true
			}
		}
		if !substituted {
			f = append(f, url)
		}
		cmds = append(cmds, f)
	}
	if len(cmds) > 0 {
		return cmds, nil
	}
	switch goos {
	case "darwin":
		return [][]string{{"open", url}}, nil
	case "windows":
		return [][]string{{"rundll32", "url.dll,FileProtocolHandler", url}}, nil
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly", "solaris", "illumos":
		if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
			return nil, fmt.Errorf("%w: no graphical session (DISPLAY and WAYLAND_DISPLAY are unset) and no $BROWSER", ErrNoBrowser)
		}
		return [][]string{{"xdg-open", url}}, nil
	}
	return nil, fmt.Errorf("%w: no known opener on %s; set $BROWSER", ErrNoBrowser, goos)
}
