package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"

	"github.com/brainstem/brainstem/join"
)

const joinUsage = `Usage: brainstem join URL [--name brainstem] [--token T] [--dry-run]

Connects this machine's agents to the brain at URL (e.g. https://brain.acme.com):
checks that URL serves a Brainstem MCP endpoint, registers it with Claude Code
('claude mcp add --transport http'), and prints the Cursor and VS Code settings.
Without --token the client signs in through your company's SSO on first use.

Flags:
`

func runJoin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("join", stderr, joinUsage)
	name := fs.String("name", "brainstem", "the MCP server name in your clients")
	token := fs.String("token", "", "a bearer token to send (development; production clients sign in with SSO)")
	dryRun := fs.Bool("dry-run", false, "print what would be run instead of running it")
	if err := parseFlags(fs, reorderArgs(args)); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"join: want exactly one URL, e.g. brainstem join https://brain.acme.com"}
	}
	plan, err := join.Discover(ctx, fs.Arg(0), join.Options{Name: *name, Token: *token})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Found a Brainstem MCP endpoint at %s (sign-in: %v)\n", plan.MCPURL, plan.AuthorizationServers)
	claudeArgs := plan.ClaudeArgs()
	if _, err := exec.LookPath("claude"); err != nil || *dryRun {
		fmt.Fprintln(stdout, "\nRegister it with Claude Code:\n  claude "+join.Quote(claudeArgs))
	} else {
		cmd := exec.CommandContext(ctx, "claude", claudeArgs...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("join: claude %s: %w", join.Quote(claudeArgs), err)
		}
		fmt.Fprintln(stdout, "Registered with Claude Code as", *name)
	}
	fmt.Fprintf(stdout, "\nCursor (.cursor/mcp.json):\n%s\n\nVS Code (.vscode/mcp.json):\n%s\n", plan.CursorJSON(), plan.VSCodeJSON())
	return nil
}

// reorderArgs lets flags follow the URL (brainstem join URL --token T).
func reorderArgs(args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			if i+1 < len(args) && !hasValue(a) && a != "--dry-run" && a != "-dry-run" {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		rest = append(rest, a)
	}
	return append(flags, rest...)
}

func hasValue(flag string) bool {
	for _, c := range flag {
		if c == '=' {
			return true
		}
	}
	return false
}
