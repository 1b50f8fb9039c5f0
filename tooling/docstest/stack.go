package docstest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The ports `brainstem dev` uses by default, which the docs show.
const (
	docGatewayPort = 8080
	docAdminPort   = 9090
	docIdPPort     = 5556
	docShardPort   = 7401
)

// DevStack is a running `brainstem dev`: what its banner printed and the
// ports it listens on.
type DevStack struct {
	URL   string // the MCP URL
	Token string // the banner's bearer token (alice@example.com)
	IdP   string // the identity provider's base URL
	Ports []portPair

	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	out    strings.Builder // everything it printed
}

// StartStack starts bin dev with args on a block of free ports (the
// gateway's, then admin, IdP and the shards' after it, as .ci/startdev.sh
// chooses them: below the kernel's ephemeral range) and returns once its
// banner printed the token. A block whose port turns out taken is tried
// again elsewhere, five times at most.
func StartStack(ctx context.Context, bin, dir string, args []string) (*DevStack, error) {
	first, span := portRange()
	var err error
	for range 5 {
		port := first + rand.IntN(span)
		var s *DevStack
		s, err = startAt(ctx, bin, dir, args, port)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
	return nil, err
}

var errPortTaken = errors.New("a port was taken")

// portRange is where a block of ports is chosen: above 20000 and below the
// ephemeral range, whose ports any outgoing connection may hold.
func portRange() (first, span int) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	if low-20000-16 > 100 {
		return 20000, low - 20000 - 16
	}
	return 61000, 4000
}

// startAt starts the stack with its gateway on port.
func startAt(ctx context.Context, bin, dir string, args []string, port int) (*DevStack, error) {
	s := &DevStack{exited: make(chan struct{}), Ports: []portPair{
		{docGatewayPort, port}, {docAdminPort, port + 1}, {docIdPPort, port + 2}, {docShardPort, port + 3},
	}}
	full := append([]string{"dev"}, args...)
	full = append(full, "--port", strconv.Itoa(port), "--admin-port", strconv.Itoa(port+1),
		"--idp-port", strconv.Itoa(port+2), "--shard-port", strconv.Itoa(port+3))
	s.cmd = exec.Command(bin, full...)
	s.cmd.Dir = dir
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("docstest: %w", err)
	}
	s.cmd.Stdout, s.cmd.Stderr = w, w
	if err := s.cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, fmt.Errorf("docstest: %s dev: %w", bin, err)
	}
	_ = w.Close()
	ready := make(chan struct{})
	go s.read(r, ready)
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case <-ready:
		if s.URL == "" || s.Token == "" { // the output ended: it exits
			<-s.exited
			return nil, s.exitedEarly(full)
		}
		u, err := url.Parse(s.URL)
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("docstest: the banner's MCP URL: %w", err)
		}
		s.IdP = fmt.Sprintf("http://%s:%d", u.Hostname(), port+2)
		return s, nil
	case <-s.exited:
		<-ready // the output is read to its end
		return nil, s.exitedEarly(full)
	case <-time.After(time.Minute):
		s.Stop()
		return nil, fmt.Errorf("docstest: brainstem dev printed no token within a minute:\n%s", s.Output())
	case <-ctx.Done():
		s.Stop()
		return nil, fmt.Errorf("docstest: %w", ctx.Err())
	}
}

// exitedEarly is the error of a stack that exited before its banner.
func (s *DevStack) exitedEarly(args []string) error {
	if strings.Contains(s.Output(), "address already in use") {
		return errPortTaken
	}
	return fmt.Errorf("docstest: brainstem %s exited before its banner:\n%s", strings.Join(args, " "), s.Output())
}

// read keeps what the stack prints, reads the banner's URL and token, and
// closes ready once it has both (or the output ends).
func (s *DevStack) read(r io.ReadCloser, ready chan struct{}) {
	defer r.Close()
	once := sync.OnceFunc(func() { close(ready) })
	defer once()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.out.WriteString(line + "\n")
		s.mu.Unlock()
		if v, ok := strings.CutPrefix(line, "  MCP URL:"); ok {
			s.URL = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "  Token:"); ok {
			s.Token = strings.TrimSpace(v)
		}
		if s.URL != "" && s.Token != "" {
			once()
		}
	}
}

// Output is what the stack has printed so far.
func (s *DevStack) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// Stop interrupts the stack, as Ctrl-C does, and waits for it (killing it
// after ten seconds).
func (s *DevStack) Stop() {
	if s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

// port returns the stack's port for the documented one.
func (s *DevStack) port(doc int) int {
	for _, p := range s.Ports {
		if p.doc == doc {
			return p.actual
		}
	}
	return doc
}
