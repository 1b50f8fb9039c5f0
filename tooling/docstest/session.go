package docstest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// shell is one bash process, kept for all the commands of a file so that
// the variables and functions a block defines reach the next ones. Each
// command's output goes to files; the shell's own standard output carries
// only the line that says a command ended, with its status.
type shell struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	ended  chan string // the shell's output lines
	dir    string      // the commands' output files
	mark   string
	n      int
	mu     sync.Mutex
	errBuf strings.Builder // the shell's own stderr (syntax errors)
}

// errShellDied is returned when the shell itself has exited.
var errShellDied = errors.New("the shell exited")

// startShell starts bash in cwd with env, keeping the outputs in dir.
func startShell(cwd, dir string, env []string) (*shell, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("docstest: %w", err)
	}
	s := &shell{dir: dir, mark: "__docstest_" + hex.EncodeToString(b), ended: make(chan string, 1)}
	s.cmd = exec.Command("bash", "--noprofile", "--norc")
	s.cmd.Dir, s.cmd.Env = cwd, env
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the commands' processes too, to stop them all
	s.cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.errBuf.Write(p)
		return len(p), nil
	})
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("docstest: %w", err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("docstest: %w", err)
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("docstest: bash: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.ended <- sc.Text()
		}
		close(s.ended)
	}()
	return s, nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// result is what one command did.
type result struct {
	stdout, stderr string
	status         int
}

// run runs one command in the shell (its standard input /dev/null) and
// waits for it at most timeout; a command still running then is killed,
// with the shell, and the error says so.
func (s *shell) run(ctx context.Context, command string, timeout time.Duration) (result, error) {
	s.n++
	outFile := filepath.Join(s.dir, fmt.Sprintf("%d.out", s.n))
	errFile := filepath.Join(s.dir, fmt.Sprintf("%d.err", s.n))
	script := fmt.Sprintf("{\n%s\n} </dev/null >%s 2>%s\nprintf '\\n%s %%d\\n' \"$?\"\n", command, quote(outFile), quote(errFile), s.mark)
	if _, err := io.WriteString(s.in, script); err != nil {
		return result{}, fmt.Errorf("%w: %s", errShellDied, s.stderr())
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-s.ended:
			if !ok {
				return result{}, fmt.Errorf("%w: %s", errShellDied, s.stderr())
			}
			status, found := strings.CutPrefix(line, s.mark+" ")
			if !found {
				continue
			}
			code, _ := strconv.Atoi(status)
			stdout, _ := os.ReadFile(outFile)
			stderr, _ := os.ReadFile(errFile)
			return result{stdout: string(stdout), stderr: string(stderr), status: code}, nil
		case <-timer.C:
			s.kill()
			return result{}, fmt.Errorf("the command did not end within %s", timeout)
		case <-ctx.Done():
			s.kill()
			return result{}, fmt.Errorf("docstest: %w", ctx.Err())
		}
	}
}

func (s *shell) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimSpace(s.errBuf.String())
}

// kill stops the shell and every process its commands started.
func (s *shell) kill() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// close ends the shell and whatever its commands left running.
func (s *shell) close() {
	_ = s.in.Close()
	s.kill()
	_ = s.cmd.Wait()
}

// quote quotes s for the shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
