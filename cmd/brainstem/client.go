package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/brainstem/brainstem/doctor"
	"github.com/brainstem/brainstem/join"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/shard/check"
	"github.com/brainstem/brainstem/signin"
	"github.com/brainstem/brainstem/tooling/cli"
	"github.com/brainstem/brainstem/tooling/loadgen"
)

// The tools around the servers: login, token, join, doctor (a developer's
// machine), check and ca (a brain's repository, an operator), load.

func runLogin(ctx context.Context, args []string, s streams) error {
	mcpURL, sc, err := signInFlags(newFlagSet("login", s))(args, s.out) // login has no flags of its own
	if err != nil {
		return err
	}
	_, err = join.Login(ctx, sc, sc.HTTP, mcpURL, s.out)
	return doctor.Unreachable(err, mcpURL)
}

func runToken(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("token", s)
	jsonHeader := fs.Bool("json-header", false, `print {"Authorization":"Bearer …"} (for headersHelper)`)
	mcpURL, err := parseWithURL(fs, args, "token")
	if err != nil {
		return err
	}
	sc, err := signin.NewDefault(s.err, true, 0)
	if err != nil {
		return err
	}
	return doctor.Unreachable(join.PrintToken(ctx, sc, mcpURL, *jsonHeader, s.out), mcpURL)
}

func runJoin(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("join", s)
	opt := join.Options{Out: s.out, Err: s.err}
	fs.StringVar(&opt.Name, "name", "brainstem", "the MCP server name in your clients")
	fs.StringVar(&opt.Token, "token", "", "register this bearer `token` as a header (clients without OAuth) instead of signing in")
	fs.BoolVar(&opt.DryRun, "dry-run", false, "check and sign in, but print the 'claude mcp add' line instead of running it")
	parse := signInFlags(fs)
	mcpURL, sc, err := parse(args, s.out)
	if err != nil {
		return err
	}
	opt.URL, opt.SignIn, opt.HTTP = fs.Arg(0), sc, sc.HTTP
	return doctor.Unreachable(join.Run(ctx, opt), mcpURL)
}

func runDoctor(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("doctor", s)
	token := fs.String("token", "", "check tools/list and brain_wings with this bearer `token` (default: your stored sign-in)")
	if _, err := parseWithURL(fs, args, "doctor"); err != nil {
		return err
	}
	sc, err := signin.NewDefault(s.err, true, 0)
	if err != nil {
		return err
	}
	rep, err := doctor.Run(ctx, doctor.Config{URL: fs.Arg(0), Token: *token, SignIn: sc, HTTP: sc.HTTP})
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	rep.Print(s.out)
	return rep.Err()
}

// signInFlags defines the flags of login and join; what it returns parses
// the command line (parseWithURL) and makes the sign-in client.
func signInFlags(fs *flag.FlagSet) func(args []string, out io.Writer) (string, *signin.Client, error) {
	noBrowser := fs.Bool("no-browser", false, "print the sign-in URL instead of opening a browser")
	device := fs.Bool("device", false, "sign in with a code typed into a browser on any computer (RFC 8628), for a computer without a browser")
	timeout := fs.Duration("timeout", signin.DefaultCallbackTimeout, "how long to wait for the browser")
	return func(args []string, out io.Writer) (string, *signin.Client, error) {
		mcpURL, err := parseWithURL(fs, args, fs.Name())
		if err != nil {
			return "", nil, err
		}
		sc, err := signin.NewDefault(out, *noBrowser, *timeout)
		if err == nil {
			sc.Device = *device
		}
		return mcpURL, sc, err
	}
}

// parseWithURL parses a command line of one URL and flags and returns the
// URL as an MCP URL (doctor's as given: it reports a bad URL as a step).
func parseWithURL(fs *flag.FlagSet, args []string, cmd string) (string, error) {
	if err := cli.Parse(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		return "", cli.Usagef("%s: want exactly one URL, e.g. brainstem %s https://brain.acme.com", cmd, cmd)
	}
	if cmd == "doctor" {
		return fs.Arg(0), nil
	}
	u, err := join.MCPURL(fs.Arg(0))
	return u, cli.UsageIf(err, join.ErrURL)
}

func runCheck(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("check", s)
	maxNote := fs.Int("max-note-bytes", check.DefaultMaxNoteBytes, "the shards' note size limit (their --max-note-bytes)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return cli.Usagef("check: give the brain directory, e.g. brainstem check ./brain")
	}
	rep, err := check.Brain(ctx, fs.Arg(0), check.Options{MaxNoteBytes: *maxNote})
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	write := rep.WriteText
	if *asJSON {
		write = rep.WriteJSON
	}
	if err := write(s.out); err != nil {
		return err
	}
	return rep.Err()
}

func runCA(_ context.Context, args []string, s streams) error {
	fs := newFlagSet("ca", s)
	dir := fs.String("dir", "", "the CA `directory` (ca.crt, ca.key)")
	role := fs.String("role", "", "issue: the certificate's `role`, gateway or shard")
	names := fs.String("name", "", "issue: the certificate's DNS `names` or IPs, comma-separated")
	out := fs.String("out", "", "issue: the `directory` to write tls.crt, tls.key and ca.crt into")
	validity := fs.Duration("validity", pki.DefaultCertValidity, "issue: certificate lifetime")
	if err := cli.Subcommand(fs, args, "init", "issue"); err != nil {
		return err
	}
	if err := cli.Parse(fs, args[1:]); err != nil {
		return err
	}
	switch r, err := pki.ParseRole(*role); {
	case *dir == "":
		return cli.Usagef("ca: --dir is required")
	case args[0] == "init":
		ca, err := pki.InitDir(*dir)
		if err == nil {
			fmt.Fprintf(s.out, "created CA %q in %s (expires %s)\n", ca.Certificate().Subject.CommonName, *dir, ca.Certificate().NotAfter.Format(time.DateOnly))
		}
		return err
	case *role == "":
		return cli.Usagef("ca issue: --role is required: one of %s, %s", pki.RoleGateway, pki.RoleShard)
	case err != nil:
		return cli.UsageError{Msg: err.Error()}
	case *out == "" || *names == "":
		return cli.Usagef("ca issue: --name and --out are required")
	default:
		err := pki.IssueFiles(*dir, *out, r, cli.List(*names), *validity)
		if err == nil {
			fmt.Fprintf(s.out, "issued a %s certificate for %s into %s\n", r, strings.Join(cli.List(*names), ", "), *out)
		}
		return err
	}
}

func runLoad(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("load", s)
	var cfg loadgen.Config
	fs.StringVar(&cfg.URL, "url", "", "the MCP endpoint's `url`, e.g. http://127.0.0.1:8080/mcp (required)")
	tokens := fs.String("token", "", "bearer `tokens`, comma-separated (required)")
	fs.IntVar(&cfg.Clients, "clients", 64, "concurrent MCP clients")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to issue calls")
	fs.StringVar(&cfg.Tool, "tool", "brain_get", "the `tool` every client calls")
	argsJSON := fs.String("args", `{"id":"payments/decisions/use-idempotency-keys"}`, "the call's arguments, a JSON `object`")
	fs.BoolVar(&cfg.Legacy, "legacy", false, "use the session-based protocol 2025-06-18 instead of negotiating")
	fs.Float64Var(&cfg.Rate, "rate", 0, "calls per second across all clients, on a fixed schedule (0: as fast as answered)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	cfg.Tokens, cfg.Arguments = cli.List(*tokens), json.RawMessage(*argsJSON)
	res, err := loadgen.Run(ctx, cfg)
	if errors.Is(err, loadgen.ErrConfig) {
		return cli.UsageError{Msg: err.Error()}
	}
	if err == nil {
		fmt.Fprintln(s.out, res)
		err = res.Err()
	}
	return err
}
