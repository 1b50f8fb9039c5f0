package gitserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// ErrNoGit is returned when the git binary is not on PATH.
var ErrNoGit = errors.New("gitserver: the git binary is not on PATH")

// InitBare makes an empty bare repository name under root on branch main
// that accepts pushes over HTTP, and returns its path.
func InitBare(root, name string) (string, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return "", ErrNoGit
	}
	dir := filepath.Join(root, name)
	for _, args := range [][]string{
		{"init", "--quiet", "--bare", "--initial-branch=main", dir},
		{"-C", dir, "config", "http.receivepack", "true"},
		{"-C", dir, "config", "receive.denyNonFastForwards", "true"},
	} {
		if out, err := exec.Command(git, args...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("gitserver: git %v: %w: %s", args, err, out)
		}
	}
	return dir, nil
}

// HTTP is git http-backend serving Root's repositories at URL, behind
// basic auth.
type HTTP struct {
	// URL is the server's base: a repository r is at URL + "/" + r.
	URL  string
	srv  *http.Server
	done chan struct{}
}

// StartHTTP serves root's bare repositories over smart HTTP on a loopback
// port; every request must carry user and password as basic auth.
func StartHTTP(root, user, password string) (*HTTP, error) {
	return StartHTTPOn("127.0.0.1:0", root, user, password)
}

// StartHTTPOn is StartHTTP on addr (a server restarted on the address of
// one closed, for tests of a remote that comes back).
func StartHTTPOn(addr, root, user, password string) (*HTTP, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, ErrNoGit
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + user},
	}
	h := &HTTP{URL: "http://" + ln.Addr().String(), done: make(chan struct{})}
	h.srv = &http.Server{Handler: basicAuth(user, password, backend), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(h.done)
		h.srv.Serve(ln)
	}()
	return h, nil
}

func basicAuth(user, password string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Close stops the server.
func (h *HTTP) Close() error {
	err := h.srv.Close()
	<-h.done
	return err
}

// Daemon is git daemon serving Root's repositories (pushes enabled) at
// URL.
type Daemon struct {
	// URL is the server's base: a repository r is at URL + "/" + r.
	URL  string
	cmd  *exec.Cmd
	done chan error
}

// StartDaemon runs git daemon for root's repositories on a loopback port
// and returns once it accepts connections (or ctx ends).
func StartDaemon(ctx context.Context, root string) (*Daemon, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, ErrNoGit
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(git, "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
		"--informative-errors", "--base-path="+root, "--listen=127.0.0.1", "--port="+strconv.Itoa(port), root)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("gitserver: git daemon: %w", err)
	}
	d := &Daemon{URL: "git://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	if err := d.awaitListening(ctx, port); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// awaitListening polls the daemon's port until it accepts a connection:
// git daemon gives no other readiness signal.
func (d *Daemon) awaitListening(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case err := <-d.done:
			return fmt.Errorf("gitserver: git daemon exited: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("gitserver: git daemon not listening on %s: %w", addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("gitserver: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Close stops the daemon (the process this package started).
func (d *Daemon) Close() error {
	d.cmd.Process.Kill()
	<-d.done
	return nil
}
