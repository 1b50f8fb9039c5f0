package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/brainstem/brainstem/doctor"
	"github.com/brainstem/brainstem/join"
	"github.com/brainstem/brainstem/signin"
)

const joinUsage = `Usage: brainstem join URL [--name brainstem] [--token T] [--dry-run]

Connects this machine's agents to the brain at URL (e.g. https://brain.acme.com).
Before it registers anything it checks the whole chain: the gateway's metadata,
dynamic registration, your sign-in (a stored one from 'brainstem login', or it
signs you in now in the browser) and a call with the token. Then it registers
the server with Claude Code ('claude mcp add --transport http --scope user
brainstem URL/mcp', no header: Claude Code signs in through the gateway by
itself) and prints the Cursor and VS Code settings.
With --token T it registers a header instead, for clients without OAuth.

Flags:
`

const loginUsage = `Usage: brainstem login URL [--no-browser] [--timeout 5m]

Signs you in to the brain at URL as an MCP client does: it registers with the
gateway, opens your browser on the gateway's consent page and your company's
sign-in, and receives the answer on http://127.0.0.1:<port>/callback. Then it
prints who you are and the wings you can reach. The tokens are kept in your
configuration directory (brainstem/signins, mode 0600) and renewed by
'brainstem token'. The browser command is $BROWSER when set.

Flags:
`

const tokenUsage = `Usage: brainstem token URL [--json-header]

Prints a fresh access token for the brain at URL from your stored sign-in,
refreshing it when it expires within a minute. With --json-header it prints
{"Authorization":"Bearer …"}, the output Claude Code's headersHelper expects.
Run 'brainstem login URL' first.

Flags:
`

const doctorUsage = `Usage: brainstem doctor URL [--token T]

Walks the chain an MCP client walks to reach the brain at URL and prints each
step with ✓ or ✗ and the fix: TLS, protected-resource metadata, authorization
server metadata, registration, the authorization endpoint (which must reach
your company's sign-in), the 401 challenge, then with a token (--token, or your
stored sign-in) tools/list and brain_wings, and the clock. Exits 1 when a step
fails.

Flags:
`

// signInClient is the sign-in client of the CLI: the user's configuration
// directory, the system browser (or none), messages on out.
func signInClient(out io.Writer, noBrowser bool, timeout time.Duration) (*signin.Client, error) {
	store, err := signin.DefaultStore()
	if err != nil {
		return nil, err
	}
	c := &signin.Client{Store: store, Out: out, CallbackTimeout: timeout, HTTP: &http.Client{Timeout: 30 * time.Second}}
	if noBrowser {
		c.Browser = signin.BrowserFunc(func(context.Context, string) error { return errors.New("--no-browser") })
	}
	return c, nil
}

func runLogin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("login", stderr, loginUsage)
	noBrowser := fs.Bool("no-browser", false, "print the sign-in URL instead of opening a browser")
	timeout := fs.Duration("timeout", signin.DefaultCallbackTimeout, "how long to wait for the browser")
	mcpURL, err := parseWithURL(fs, args, "login")
	if err != nil {
		return err
	}
	sc, err := signInClient(stdout, *noBrowser, *timeout)
	if err != nil {
		return err
	}
	_, err = join.Login(ctx, sc, sc.HTTP, mcpURL, stdout)
	return err
}

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("token", stderr, tokenUsage)
	jsonHeader := fs.Bool("json-header", false, `print {"Authorization":"Bearer …"} (for headersHelper)`)
	mcpURL, err := parseWithURL(fs, args, "token")
	if err != nil {
		return err
	}
	sc, err := signInClient(stderr, true, 0)
	if err != nil {
		return err
	}
	rec, err := sc.Token(ctx, mcpURL)
	switch {
	case errors.Is(err, signin.ErrNotSignedIn):
		return fmt.Errorf("not signed in to %s: run `brainstem login %s` first", mcpURL, mcpURL)
	case errors.Is(err, signin.ErrSignInEnded):
		return fmt.Errorf("%w; run `brainstem login %s` to sign in again", err, mcpURL)
	case err != nil:
		return err
	}
	if *jsonHeader {
		b, err := json.Marshal(map[string]string{"Authorization": "Bearer " + rec.AccessToken})
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintln(stdout, rec.AccessToken)
	return nil
}

func runJoin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("join", stderr, joinUsage)
	name := fs.String("name", "brainstem", "the MCP server name in your clients")
	token := fs.String("token", "", "register this bearer token as a header (clients without OAuth) instead of signing in")
	dryRun := fs.Bool("dry-run", false, "check and sign in, but print the `claude mcp add` line instead of running it")
	noBrowser := fs.Bool("no-browser", false, "print the sign-in URL instead of opening a browser")
	timeout := fs.Duration("timeout", signin.DefaultCallbackTimeout, "how long to wait for the browser")
	if _, err := parseWithURL(fs, args, "join"); err != nil {
		return err
	}
	sc, err := signInClient(stdout, *noBrowser, *timeout)
	if err != nil {
		return err
	}
	return join.Run(ctx, join.Options{URL: fs.Arg(0), Name: *name, Token: *token, DryRun: *dryRun,
		SignIn: sc, HTTP: sc.HTTP, Out: stdout, Err: stderr})
}

func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("doctor", stderr, doctorUsage)
	token := fs.String("token", "", "check tools/list and brain_wings with this bearer token (default: your stored sign-in)")
	if _, err := parseWithURL(fs, args, "doctor"); err != nil {
		return err
	}
	sc, err := signInClient(stderr, true, 0)
	if err != nil {
		return err
	}
	rep, err := doctor.Run(ctx, doctor.Config{URL: fs.Arg(0), Token: *token, SignIn: sc, HTTP: sc.HTTP})
	if err != nil {
		return usageError{err.Error()}
	}
	rep.Print(stdout)
	if n := len(rep.Failed()); n > 0 {
		return fmt.Errorf("doctor: %d step(s) failed", n)
	}
	return nil
}

// parseWithURL parses a command line of one URL and flags in any order
// (brainstem join URL --token T) and returns the URL as an MCP URL.
func parseWithURL(fs *flag.FlagSet, args []string, cmd string) (string, error) {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := fs.Lookup(name); f != nil {
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
					continue
				}
				if i+1 < len(args) {
					flags = append(flags, args[i+1])
					i++
				}
			}
			continue
		}
		rest = append(rest, a)
	}
	if err := parseFlags(fs, append(flags, rest...)); err != nil {
		return "", err
	}
	if fs.NArg() != 1 {
		return "", usageError{fmt.Sprintf("%s: want exactly one URL, e.g. brainstem %s https://brain.acme.com", cmd, cmd)}
	}
	if cmd == "doctor" {
		return fs.Arg(0), nil // doctor reports a bad URL as a step
	}
	u, err := join.MCPURL(fs.Arg(0))
	if err != nil {
		return "", usageError{err.Error()}
	}
	return u, nil
}
