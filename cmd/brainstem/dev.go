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
	opt := devenv.Flags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	return cli.UsageIf(devenv.Main(ctx, opt, version, s.out), devenv.ErrUsage)
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
