// Command brainstem is the one binary of Brainstem: the gateway, a shard, the
// one-machine development environment and the tooling around them. It only
// parses flags and wires packages together; the logic lives in those packages.
//
// Exit codes: 0 success, 1 runtime failure, 2 bad usage or invalid
// configuration.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

// usageError marks a bad command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

const topUsage = `brainstem — one MCP URL for your company's brain

Usage:
  brainstem dev [flags]            run an identity provider, a gateway and three shards on loopback
  brainstem dev token --email E    print a development token for another user
  brainstem dev idp [--port N]     run only the development identity provider
  brainstem gateway --config F     run the public MCP gateway (--check-config to validate F)
  brainstem shard [flags]          serve one wing over QUIC (or --stdio for one local developer)
  brainstem check BRAIN            check a brain directory (the CI check of a brain repository)
  brainstem ca init|issue [flags]  create the internal CA and gateway/shard certificates
  brainstem login URL              sign in to a brain (browser) and show the wings you reach
  brainstem token URL              print a fresh access token (--json-header for headersHelper)
  brainstem join URL               check the sign-in chain, then connect Claude Code (and print Cursor/VS Code settings)
  brainstem doctor URL             check every step an MCP client takes to reach a brain, with fixes
  brainstem load --url U --token T drive an MCP endpoint with concurrent clients (benchmark)
  brainstem version                print the version

Every flag can also be set from the environment as BRAINSTEM_<FLAG>, e.g.
BRAINSTEM_CONFIG=/etc/brainstem/gateway.yaml. Run 'brainstem <command> -h' for its flags.
Exit codes: 0 ok, 1 failure, 2 bad usage or invalid configuration.
`

func main() { os.Exit(runWithSignals()) }

// runWithSignals runs the command line of this process until it finishes or
// SIGINT/SIGTERM asks it to stop cleanly.
func runWithSignals() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage)
		return 2
	}
	var err error
	switch args[0] {
	case "dev":
		err = runDev(ctx, args[1:], stdout, stderr)
	case "gateway":
		err = runGateway(ctx, args[1:], stdout, stderr)
	case "shard":
		err = runShard(ctx, args[1:], stdin, stdout, stderr)
	case "check":
		err = runCheck(ctx, args[1:], stdout, stderr)
	case "ca":
		err = runCA(args[1:], stdout, stderr)
	case "join":
		err = runJoin(ctx, args[1:], stdout, stderr)
	case "login":
		err = runLogin(ctx, args[1:], stdout, stderr)
	case "token":
		err = runToken(ctx, args[1:], stdout, stderr)
	case "doctor":
		err = runDoctor(ctx, args[1:], stdout, stderr)
	case "load":
		err = runLoad(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "brainstem", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, topUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "brainstem: unknown command %q\n\n%s", args[0], topUsage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "brainstem:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "brainstem:", err)
		return 1
	}
}

// newFlagSet makes a flag set whose errors are returned, not fatal.
func newFlagSet(name string, stderr io.Writer, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, then fills every flag not given on the command line
// from BRAINSTEM_<FLAG> (dashes become underscores).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		env := "BRAINSTEM_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", env, v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return usageError{err.Error()}
	}
	return nil
}
