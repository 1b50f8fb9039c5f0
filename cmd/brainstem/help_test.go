package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/help/*.golden")

// helpCommands are the command lines whose -h is checked: every command,
// and dev's subcommands.
func helpCommands() []string {
	names := []string{"dev token", "dev idp"}
	for name := range commands() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// valueName is what the flag package prints after a flag's name: the type
// ("string", "duration") or the word a usage backquotes ("file", "url").
var valueName = regexp.MustCompile(`^[a-z]+$`)

// commandLine is a command's line of the top usage: the command, at least
// two spaces, its description.
var commandLine = regexp.MustCompile(`^  brainstem \S.*?\S {2,}\S`)

// oneDash is a flag named with one dash ("-admin-port"), which the help
// never does: the binary's flags are written --admin-port everywhere.
var oneDash = regexp.MustCompile(`(^|[\s\[(|,'"])-[a-z][a-z-]+`)

// TestHelp renders the -h of every command and holds it to a golden file
// (testdata/help/<command>.golden; -update rewrites them, so that a change
// of the help is reviewed), and checks every flag line: package flag takes
// a backquoted word of a usage for the flag's value name, so a backquoted
// command in a usage ("with `brainstem load`") would print as
// "-calls-per-second brainstem load"; the value name must be one
// lower-case word.
func TestHelp(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	check := func(t *testing.T, golden, text string) {
		t.Helper()
		path := filepath.Join("testdata", "help", golden+".golden")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if text != string(want) {
			t.Errorf("the help changed; review it and run go test -update:\n%s", text)
		}
	}
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("brainstem help: code %d, stderr %q", code, errb.String())
	}
	check(t, "brainstem", out.String())
	if m := oneDash.FindString(out.String()); m != "" {
		t.Errorf("brainstem help names a flag with one dash: %q", m)
	}
	for line := range strings.Lines(out.String()) {
		if strings.HasPrefix(line, "  brainstem ") && !commandLine.MatchString(line) {
			t.Errorf("brainstem help: %q runs into its description (two spaces at least between them)", line)
		}
	}
	for _, name := range helpCommands() {
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			var out, errb strings.Builder
			code := run(context.Background(), append(strings.Fields(name), "-h"), strings.NewReader(""), &out, &errb)
			if code != 0 || out.Len() != 0 {
				t.Fatalf("brainstem %s -h: code %d, stdout %q", name, code, out.String())
			}
			help := errb.String()
			flags := 0
			for line := range strings.Lines(help) {
				if !strings.HasPrefix(line, "  -") {
					continue
				}
				flags++
				f := strings.Fields(line)
				if !strings.HasPrefix(f[0], "--") || len(f) > 2 || len(f) == 2 && !valueName.MatchString(f[1]) {
					t.Errorf("brainstem %s: the flag line %q: want --name and at most one lower-case word for its value (a backquoted phrase in the usage?)", name, strings.TrimSpace(line))
				}
			}
			if flags == 0 && name != "version" || flags > 0 && !strings.Contains(help, "\nFlags:\n  --") {
				t.Errorf("brainstem %s -h: %d flags, and they need a Flags: header:\n%s", name, flags, help)
			}
			if m := oneDash.FindString(help); m != "" {
				t.Errorf("brainstem %s -h names a flag with one dash: %q", name, m)
			}
			// brainstem help <command> is the same text, on stdout.
			var hout, herr strings.Builder
			code = run(context.Background(), append([]string{"help"}, strings.Fields(name)...), strings.NewReader(""), &hout, &herr)
			if code != 0 || hout.String() != help || herr.Len() != 0 {
				t.Errorf("brainstem help %s: code %d, stderr %q, and its text differs from -h's:\n%s", name, code, herr.String(), hout.String())
			}
			check(t, strings.ReplaceAll(name, " ", "-"), help)
		})
	}
}
