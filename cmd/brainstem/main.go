// Command brainstem is the one binary of Brainstem: the gateway, a shard, the
// one-machine development environment and the tooling around them. It only
// declares flags and wires packages together; the logic lives in those
// packages, the command-line conventions in tooling/cli (flags from the
// environment, usage errors and exit statuses) and each command's help in
// usage/<command>.txt.
//
// Exit codes: 0 success, 1 runtime failure, 2 bad usage or invalid
// configuration.
package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/brainstem/brainstem/tooling/cli"
	"github.com/brainstem/brainstem/tooling/hookcmd"
	"github.com/brainstem/brainstem/tooling/signins"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

// streams are a command's standard streams.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

// command runs one command with the arguments after its name; every
// command has this form.
type command func(ctx context.Context, args []string, s streams) error

// commands are the commands of the binary by name; usage/brainstem.txt,
// the top usage, lists each.
func commands() map[string]command {
	return map[string]command{
		"dev": runDev, "gateway": runGateway, "shard": runShard, "check": runCheck, "ca": runCA,
		"login": runLogin, "token": runToken, "join": runJoin, "doctor": runDoctor, "load": runLoad, "signins": func(c context.Context, a []string, s streams) error { return signins.Run(c, a, s.out, s.err, usage) },
		"hooks": func(c context.Context, a []string, s streams) error { return hookcmd.Hooks(c, a, s.out, s.err, usage) },
		"hook": func(c context.Context, a []string, s streams) error {
			return hookcmd.Hook(c, a, s.in, s.out, s.err, usage)
		},
		"version": func(_ context.Context, a []string, s streams) error {
			if err := cli.Parse(newFlagSet("version", s), a); err != nil {
				return err
			}
			_, err := fmt.Fprintln(s.out, "brainstem", version)
			return err
		},
	}
}

//go:embed usage/*.txt
var usageFS embed.FS

// usage is the help of a command: usage/<name>.txt, spaces in name
// becoming dashes; "brainstem" is the top usage.
func usage(name string) string {
	text, err := usageFS.ReadFile("usage/" + strings.ReplaceAll(name, " ", "-") + ".txt")
	if err != nil {
		panic(err) // a command without its usage file: caught by TestEveryCommandHasUsage
	}
	return string(text)
}

// newFlagSet is the flag set of a command, whose -h prints its usage and
// the flags.
func newFlagSet(name string, s streams) *flag.FlagSet {
	return cli.NewFlagSet(name, s.err, usage(name))
}

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
		fmt.Fprint(stderr, usage("brainstem"))
		return 2
	}
	switch name := strings.TrimLeft(args[0], "-"); name {
	case "help", "h":
		if len(args) > 1 && args[1] != "help" && !strings.HasPrefix(args[1], "-") { // help <command>: its -h, on stdout
			return run(ctx, append(args[1:], "-h"), stdin, stdout, stdout)
		}
		fmt.Fprint(stdout, usage("brainstem"))
		return 0
	default:
		cmd, ok := commands()[name]
		if !ok {
			fmt.Fprintf(stderr, "brainstem: unknown command %q\n\n%s", args[0], usage("brainstem"))
			return 2
		}
		return cli.ExitCode(cmd(ctx, args[1:], streams{in: stdin, out: stdout, err: stderr}), stderr)
	}
}
