// Package hookcmd is the commands `brainstem hook <event>` and `brainstem
// hooks install|uninstall`: their flags and messages, on package hooks
// (as package signins is `brainstem signins`), so that cmd/brainstem only
// wires them.
package hookcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/brainstem/brainstem/hooks"
	"github.com/brainstem/brainstem/join"
	"github.com/brainstem/brainstem/tooling/cli"
)

// Hook is `brainstem hook <event> [--url URL]` with the arguments after
// "hook"; usage returns a command's help by name. It never fails a hook:
// Claude Code takes exit status 2 as "block" (a prompt erased, a stop
// refused), so a bad command line is answered with a systemMessage naming
// it, exit status 0; only -h is not a hook's run.
func Hook(ctx context.Context, args []string, in io.Reader, out, errw io.Writer, usage func(string) string) error {
	fs := cli.NewFlagSet("hook", errw, usage("hook"))
	url := fs.String("url", "", "the gateway's `url` (default: url in hooks.json, else your one stored sign-in)")
	err := cli.Subcommand(fs, args, hooks.EventNames()...)
	if err == nil {
		err = cli.Parse(fs, args[1:])
	}
	if err == nil && fs.NArg() > 0 {
		err = cli.Usagef("hook %s: unexpected argument %q", args[0], fs.Arg(0))
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		return err
	case err != nil:
		fmt.Fprintln(errw, "brainstem:", err)
		_, werr := out.Write(hooks.Output{SystemMessage: "Brainstem hooks: the settings entry runs a bad command line: " + err.Error()}.Encode())
		return werr
	}
	return hooks.Run(ctx, args[0], hooks.Options{URL: *url, MCPURL: join.MCPURL, In: in, Out: out})
}

// Hooks is `brainstem hooks install|uninstall [--user|--project] [--print]
// [--url URL]` with the arguments after "hooks".
func Hooks(_ context.Context, args []string, out, errw io.Writer, usage func(string) string) error {
	fs := cli.NewFlagSet("hooks", errw, usage("hooks"))
	user := fs.Bool("user", false, "change your user settings, ~/.claude/settings.json (the default)")
	project := fs.Bool("project", false, "change this project's settings, ./.claude/settings.json")
	printOnly := fs.Bool("print", false, "install: print the settings to merge instead of writing them")
	url := fs.String("url", "", "install: pass this gateway `url` to every hook (default: each hook reads hooks.json, else your one sign-in)")
	if err := cli.Subcommand(fs, args, "install", "uninstall"); err != nil {
		return err
	}
	if err := cli.Parse(fs, args[1:]); err != nil {
		return err
	}
	if *user && *project || fs.NArg() > 0 {
		return cli.Usagef("hooks %s: give --user or --project (or neither, for --user) and no argument", args[0])
	}
	opt, err := installOptions(*project, *url)
	if err != nil {
		return err
	}
	if *printOnly {
		_, err := io.WriteString(out, opt.Fragment())
		return err
	}
	if args[0] == "uninstall" {
		res, err := hooks.Uninstall(opt)
		if err == nil {
			fmt.Fprintln(out, uninstalled(res))
		}
		return err
	}
	res, err := hooks.Install(opt)
	if err != nil {
		return cli.UsageIf(err, hooks.ErrSettingsFile)
	}
	if res.Changed {
		fmt.Fprintf(out, "Installed the Brainstem hooks in %s: session-start, prompt, stop and pre-compact.\n"+
			"Claude Code runs them from its next session; `brainstem hooks uninstall` takes them out. Their settings: docs/agents.md.\n", res.Path)
	} else {
		fmt.Fprintf(out, "The Brainstem hooks are installed in %s already; nothing changed.\n", res.Path)
	}
	return nil
}

// installOptions are the settings file of the scope and the command line
// of the entries.
func installOptions(project bool, rawURL string) (hooks.InstallOptions, error) {
	scope, base := hooks.ScopeUser, ""
	var err error
	if project {
		scope = hooks.ScopeProject
		base, err = os.Getwd()
	} else {
		base, err = os.UserHomeDir()
	}
	if err != nil {
		return hooks.InstallOptions{}, fmt.Errorf("hooks: %w", err)
	}
	path, err := hooks.ClaudeSettingsPath(scope, base, base)
	if err != nil {
		return hooks.InstallOptions{}, cli.UsageError{Msg: err.Error()}
	}
	opt := hooks.InstallOptions{Path: path}
	if rawURL != "" {
		if opt.URL, err = join.MCPURL(rawURL); err != nil {
			return opt, cli.UsageError{Msg: err.Error()}
		}
	}
	return opt, nil
}

func uninstalled(res hooks.Result) string {
	switch {
	case res.Restored:
		return fmt.Sprintf("Removed the Brainstem hooks from %s: it is as it was before they were installed.", res.Path)
	case res.Changed:
		return fmt.Sprintf("Removed the Brainstem hooks from %s; the rest of it is unchanged.", res.Path)
	default:
		return fmt.Sprintf("No Brainstem hooks in %s; nothing changed.", res.Path)
	}
}
