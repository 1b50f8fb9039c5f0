package devenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/brainstem/brainstem/tooling/cli"
)

// Options is the command line of `brainstem dev` (Flags declares it): the
// environment's Config and what the command does around it.
type Options struct {
	Config
	User     string // the email of the demo user whose token the banner prints
	LogLevel string // of the log file
	// KeepLogs keeps a temporary log directory (no --data) after a clean
	// stop; without it the directory is removed with the brain copy.
	KeepLogs bool
}

// Flags declares the flags of `brainstem dev` on fs, into the Options it
// returns (filled once fs is parsed).
func Flags(fs *flag.FlagSet) *Options {
	o := &Options{}
	fs.StringVar(&o.Brain, "brain", "", "serve this existing brain `directory` in place (default: a copy of the sample brain)")
	fs.StringVar(&o.Data, "data", "", "keep state (brain copy, shard keys, policies, secrets, logs) in this `directory` between runs (default: a temporary directory removed on exit)")
	fs.StringVar(&o.Host, "host", "127.0.0.1", "loopback `address` to listen on")
	fs.IntVar(&o.GatewayPort, "port", 8080, "gateway port (the MCP URL)")
	fs.IntVar(&o.AdminPort, "admin-port", 9090, "gateway admin port (/metrics, /healthz, /readyz, /signins)")
	fs.IntVar(&o.IdPPort, "idp-port", 5556, "development identity provider port")
	fs.IntVar(&o.ShardBasePort, "shard-port", 7401, "first shard UDP port; wing i uses shard-port+i")
	fs.Float64Var(&o.CallsPerSecond, "calls-per-second", 0, "per-user rate limit of the gateway (0: the gateway default); raise it to load-test with 'brainstem load'")
	fs.StringVar(&o.GitRemote, "git-remote", "", "sync every wing with this git remote: a bare repository's `path` (created if missing) or a URL needing no credentials")
	fs.BoolVar(&o.AllowPurge, "allow-purge", false, "let curators purge content from history for good (brain_purge) in every wing")
	fs.StringVar(&o.DefaultWing, "default-wing", "", "the `wing` of calls in the predecessor's shape that name none, e.g. platform (the gateway's default_wing; default: such calls are refused)")
	fs.DurationVar(&o.TokenTTL, "token-ttl", DefaultTokenTTL, "lifetime of the demo tokens, and of the gateway's access tokens (at most 1h) and service accounts' (at most 10m): shorten it to try expiry and refresh; at least 1m")
	fs.StringVar(&o.User, "email", "alice@example.com", "the `email` of the demo user whose token is printed")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level of the log file: debug, info, warn, error")
	fs.BoolVar(&o.KeepLogs, "keep-logs", false, "without --data: keep the log file's temporary directory after a clean stop")
	return o
}

// Main is `brainstem dev` once its flags are parsed: it opens the log
// file, runs the environment (Run) and removes a temporary log directory
// after a clean stop (unless KeepLogs); after a failure it keeps the log
// and names it. Errors of the command line are ErrUsage's.
func Main(ctx context.Context, o *Options, version string, out io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	logFile, temp, err := OpenLog(o.Data)
	if err != nil {
		return err
	}
	remove := func() error {
		err := logFile.Close()
		if temp && !o.KeepLogs {
			err = errors.Join(err, os.RemoveAll(filepath.Dir(logFile.Name())))
		}
		return err
	}
	cfg := o.Config
	if cfg.Logger, err = cli.Logger(logFile, "json", o.LogLevel); err != nil {
		return errors.Join(usageError{err.Error()}, remove())
	}
	cfg.Version, cfg.AuditLog = version, logFile
	err = Run(ctx, cfg, out, o.User, logFile.Name())
	if err != nil && !errors.Is(err, ErrUsage) {
		logFile.Close()
		return fmt.Errorf("%w (the log is kept: %s)", err, logFile.Name())
	}
	return errors.Join(err, remove())
}

// OpenLog opens the log file of `brainstem dev`, brainstem.log in data
// (made 0700 if missing), or in a new temporary directory
// (brainstem-dev-logs-*) when data is "": temp says so, and the caller
// removes that directory when the log is no longer wanted.
func OpenLog(data string) (f *os.File, temp bool, err error) {
	dir := data
	if dir == "" {
		d, err := os.MkdirTemp("", "brainstem-dev-logs-")
		if err != nil {
			return nil, false, fmt.Errorf("devenv: log directory: %w", err)
		}
		dir, temp = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("devenv: log directory: %w", err)
	}
	f, err = os.OpenFile(filepath.Join(dir, "brainstem.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		if temp {
			_ = os.RemoveAll(dir)
		}
		return nil, false, fmt.Errorf("devenv: %w", err)
	}
	return f, temp, nil
}
