package hooks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// ErrUsage: a command line the hooks cannot run (an unknown event, a
// settings file scope that is not one).
var ErrUsage = errors.New("hooks: bad usage")

// drainGrace is how long Run waits, after answering, for a hook cut off by
// its time box to stop (every step of a hook stops with its context).
const drainGrace = 200 * time.Millisecond

// Options configure Run. The zero value but In and Out is the command line's.
type Options struct {
	// URL is the gateway the person asked for (--url, BRAINSTEM_URL); ""
	// means the settings file's, else the one stored sign-in.
	URL string
	// MCPURL turns a URL as a person types it into the MCP URL sign-ins
	// are kept under (join.MCPURL); nil takes it as it is.
	MCPURL func(string) (string, error)
	// ConfigDir holds the sign-ins and hooks.json; "" means
	// <user config dir>/brainstem.
	ConfigDir string
	// CacheDir holds what the hooks remember of a session; "" means
	// <user cache dir>/brainstem.
	CacheDir string
	// HTTP calls the gateway; nil means a client of its own.
	HTTP *http.Client
	// Git is the git command; "" means git on $PATH.
	Git string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// In is the hook's input (stdin), Out receives its answer (stdout).
	In  io.Reader
	Out io.Writer
}

// runner is one hook's run.
type runner struct {
	opt       Options
	ev        Event
	settings  Settings
	es        EventSettings
	loadErr   error // the settings file is unusable
	configDir string
	cacheDir  string
	hc        *http.Client
	now       func() time.Time
	in        *Input
}

// Run runs the hook named name: it reads the hook's input from opt.In and
// writes exactly one JSON object to opt.Out, within the hook's time box,
// whatever happens (fail-soft: every failure is {} or a systemMessage).
// It returns an error only for an unknown hook (ErrUsage) or when the
// answer could not be written.
func Run(ctx context.Context, name string, opt Options) error {
	ev, ok := LookupEvent(name)
	if !ok {
		return fmt.Errorf("%w: no hook %q; the hooks are %v", ErrUsage, name, EventNames())
	}
	r := newRunner(ev, opt)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(r.es.Timeout))
	defer cancel()
	done := make(chan Output, 1)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer func() {
			if recover() != nil {
				done <- Output{}
			}
		}()
		done <- r.handle(ctx)
	}()
	var out Output
	select {
	case out = <-done:
	case <-ctx.Done():
	}
	_, err := opt.Out.Write(out.Encode())
	cancel()
	select {
	case <-stopped:
	case <-time.After(drainGrace):
	}
	if err != nil {
		return fmt.Errorf("hooks: writing the answer: %w", err)
	}
	return nil
}

// newRunner settles the directories, the settings and the HTTP client.
func newRunner(ev Event, opt Options) *runner {
	r := &runner{opt: opt, ev: ev, configDir: opt.ConfigDir, cacheDir: opt.CacheDir, hc: cmp.Or(opt.HTTP, newHTTPClient()), now: opt.Now}
	if r.now == nil {
		r.now = time.Now
	}
	if r.configDir == "" {
		if d, err := os.UserConfigDir(); err == nil {
			r.configDir = filepath.Join(d, "brainstem")
		}
	}
	if r.cacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			r.cacheDir = filepath.Join(d, "brainstem")
		}
	}
	if r.configDir != "" {
		r.settings, r.loadErr = LoadSettings(settingsPath(r.configDir))
	} else {
		r.settings = DefaultSettings()
	}
	r.es = r.settings.For(ev.Name)
	return r
}

// newHTTPClient is a client for one process's few calls: no keep-alive
// pool to speak of, connections bounded by the hook's context.
func newHTTPClient() *http.Client {
	tr := &http.Transport{
		Proxy:             http.ProxyFromEnvironment,
		DialContext:       (&net.Dialer{Timeout: MaxTimeout, KeepAlive: -1}).DialContext,
		ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 4,
		TLSHandshakeTimeout: MaxTimeout, ResponseHeaderTimeout: MaxTimeout,
	}
	return &http.Client{Transport: tr, Timeout: MaxTimeout}
}

// handle reads the input and runs the hook; every path returns an answer.
func (r *runner) handle(ctx context.Context) Output {
	in, err := ParseInput(r.opt.In, r.ev)
	if err != nil {
		return Output{}
	}
	r.in = in
	if r.loadErr != nil {
		return r.warn(ctx, "Brainstem hooks: "+r.loadErr.Error()+"; fix or delete the file (docs/agents.md lists the settings).")
	}
	if !r.es.Enabled {
		return Output{}
	}
	switch r.ev.Name {
	case NameSessionStart:
		return r.sessionStart(ctx)
	case NamePrompt:
		return r.prompt(ctx)
	case NameStop:
		return r.stop(ctx)
	default:
		return r.preCompact(ctx)
	}
}

// warn answers msg as a systemMessage once per session (the session's
// state remembers it was said), and {} after that.
func (r *runner) warn(ctx context.Context, msg string) Output {
	if msg == "" {
		return Output{}
	}
	st := loadState(r.cacheDir, r.in.SessionID, r.now())
	if st.Warned {
		return Output{}
	}
	st.Warned = true
	_ = st.save(ctx, r.cacheDir) // unsaved, the next hook says it again: better than never
	return Output{SystemMessage: msg}
}

// cwd is the hook's working directory: the input's, else the process's.
func (r *runner) cwd() string {
	if r.in.Cwd != "" {
		return r.in.Cwd
	}
	d, _ := os.Getwd()
	return d
}
