package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/brainstem/brainstem/tooling/cli"
	"github.com/brainstem/brainstem/tooling/devenv"
)

// The one-machine environment: brainstem dev, dev token and dev idp.

func runDev(ctx context.Context, args []string, s streams) error {
	if len(args) > 0 && args[0] == "token" {
		return runDevToken(ctx, args[1:], s)
	}
	if len(args) > 0 && args[0] == "idp" {
		return runDevIdP(ctx, args[1:], s)
	}
	fs := newFlagSet("dev", s)
	var cfg devenv.Config
	fs.StringVar(&cfg.Brain, "brain", "", "serve this existing brain `directory` in place (default: a copy of the sample brain)")
	fs.StringVar(&cfg.Data, "data", "", "keep state (brain copy, shard keys, policies, logs) in this `directory` between runs (default: a temporary directory removed on exit)")
	fs.StringVar(&cfg.Host, "host", "127.0.0.1", "loopback `address` to listen on")
	fs.IntVar(&cfg.GatewayPort, "port", 8080, "gateway port (the MCP URL)")
	fs.IntVar(&cfg.AdminPort, "admin-port", 9090, "gateway admin port (/metrics, /healthz, /readyz)")
	fs.IntVar(&cfg.IdPPort, "idp-port", 5556, "development identity provider port")
	fs.IntVar(&cfg.ShardBasePort, "shard-port", 7401, "first shard UDP port; wing i uses shard-port+i")
	fs.Float64Var(&cfg.CallsPerSecond, "calls-per-second", 0, "per-user rate limit of the gateway (0: the gateway default); raise it to load-test with 'brainstem load'")
	fs.StringVar(&cfg.GitRemote, "git-remote", "", "sync every wing with this git remote: a bare repository's `path` (created if missing) or a URL needing no credentials")
	user := fs.String("email", "alice@example.com", "the `email` of the demo user whose token is printed")
	logLevel := fs.String("log-level", "info", "log level of the log file: debug, info, warn, error")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	logFile, err := devenv.OpenLog(cfg.Data)
	if err != nil {
		return err
	}
	defer logFile.Close()
	if cfg.Logger, err = cli.Logger(logFile, "json", *logLevel); err != nil {
		return err
	}
	cfg.Version, cfg.AuditLog = version, logFile
	return devenv.Run(ctx, cfg, s.out, *user, logFile.Name())
}

func runDevToken(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("dev token", s)
	email := fs.String("email", "", "the user's `email` (required)")
	groups := fs.String("groups", "", "the user's `groups`, comma-separated, e.g. people-team")
	idp := fs.String("idp", "http://127.0.0.1:5556", "the identity provider's `url`, as 'brainstem dev' printed it")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *email == "" {
		return cli.Usagef("dev token: --email is required")
	}
	tok, exp, err := devenv.FetchToken(ctx, *idp, *email, *groups)
	if err == nil {
		fmt.Fprintln(s.out, tok)
		fmt.Fprintln(s.err, "expires", exp)
	}
	return err
}

func runDevIdP(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("dev idp", s)
	host := fs.String("host", "127.0.0.1", "loopback `address` to listen on")
	port := fs.Int("port", 5556, "port to listen on (0: any free port)")
	ttl := fs.Duration("token-ttl", 8*time.Hour, "lifetime of the tokens it issues")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	logger, err := cli.Logger(s.err, "json", *logLevel)
	if err != nil {
		return err
	}
	return devenv.RunIdP(ctx, net.JoinHostPort(*host, strconv.Itoa(*port)), *ttl, logger, s.out)
}
