package cli

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEnvFillsUnsetFlags(t *testing.T) {
	t.Setenv("BRAINSTEM_WING", "from-env")
	t.Setenv("BRAINSTEM_BRAIN", "env-brain")
	t.Setenv("BRAINSTEM_MAX_NOTE_BYTES", "not a number")
	fs := NewFlagSet("x", io.Discard, "")
	wing := fs.String("wing", "", "")
	brain := fs.String("brain", "", "")
	if err := Parse(fs, []string{"--brain", "flag-brain"}); err != nil {
		t.Fatal(err)
	}
	if *wing != "from-env" || *brain != "flag-brain" {
		t.Errorf("wing=%q brain=%q: the environment fills unset flags only", *wing, *brain)
	}
	fs.Int("max-note-bytes", 0, "")
	var ue UsageError
	if err := Parse(fs, nil); !errors.As(err, &ue) || !strings.Contains(err.Error(), "BRAINSTEM_MAX_NOTE_BYTES") {
		t.Errorf("a bad environment value: %v, want a usage error naming the variable", err)
	}
}

func TestFlagsAndArgumentsInAnyOrder(t *testing.T) {
	tests := []struct {
		args  []string
		token string
		bare  bool
		rest  []string
	}{
		{[]string{"https://x", "--token", "T"}, "T", false, []string{"https://x"}},
		{[]string{"--bare", "https://x", "--token=T"}, "T", true, []string{"https://x"}},
		{[]string{"a", "--", "--token", "b"}, "", false, []string{"a", "--token", "b"}},
		{[]string{"-", "-bare"}, "", true, []string{"-"}},
	}
	for _, tt := range tests {
		fs := NewFlagSet("x", io.Discard, "")
		token := fs.String("token", "", "")
		bare := fs.Bool("bare", false, "")
		if err := Parse(fs, tt.args); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if *token != tt.token || *bare != tt.bare || !reflect.DeepEqual(fs.Args(), tt.rest) {
			t.Errorf("%v: token %q bare %v rest %q; want %q %v %q", tt.args, *token, *bare, fs.Args(), tt.token, tt.bare, tt.rest)
		}
	}
	fs := NewFlagSet("x", io.Discard, "")
	var ue UsageError
	if err := Parse(fs, []string{"--bogus", "x"}); !errors.As(err, &ue) {
		t.Errorf("an unknown flag: %v, want a usage error", err)
	}
	if err := Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

func TestExitCode(t *testing.T) {
	var b strings.Builder
	for _, tt := range []struct {
		err  error
		want int
	}{{nil, 0}, {flag.ErrHelp, 0}, {Usagef("bad %s", "flag"), 2}, {errors.New("boom"), 1}} {
		if got := ExitCode(tt.err, &b); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if b.String() != "brainstem: bad flag\nbrainstem: boom\n" {
		t.Errorf("printed %q", b.String())
	}
}

func TestCheckedAndList(t *testing.T) {
	var b strings.Builder
	if err := Checked(&b, "x.yaml", []string{"expires soon"}, nil); err != nil || b.String() != "warning: expires soon\nx.yaml is valid\n" {
		t.Errorf("valid: %v %q", err, b.String())
	}
	var ue UsageError
	if err := Checked(&b, "x.yaml", nil, errors.New("no wings")); !errors.As(err, &ue) || !strings.Contains(err.Error(), "x.yaml is invalid:\nno wings") {
		t.Errorf("invalid: %v", err)
	}
	if got := List(" a, ,b ,"); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("List = %q", got)
	}
	if _, err := Logger(io.Discard, "xml", "info"); !errors.As(err, &ue) {
		t.Errorf("Logger with a bad format: %v", err)
	}
	if _, err := Logger(io.Discard, "text", "loud"); !errors.As(err, &ue) {
		t.Errorf("Logger with a bad level: %v", err)
	}
}

func TestSubcommand(t *testing.T) {
	var out strings.Builder
	fs := NewFlagSet("ca", &out, "Usage: brainstem ca init|issue\n")
	fs.String("dir", "", "the CA `directory`")
	if err := Subcommand(fs, []string{"issue", "--dir", "x"}, "init", "issue"); err != nil || out.Len() != 0 {
		t.Fatalf("a known subcommand: %v, printed %q", err, out.String())
	}
	if err := Subcommand(fs, []string{"-h"}, "init", "issue"); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "\n  --dir directory\n") {
		t.Fatalf("-h: %v, printed %q; want the usage and flags, and flag.ErrHelp", err, out.String())
	}
	var ue UsageError
	for _, args := range [][]string{nil, {"nope"}, {"--dir", "x"}} {
		if err := Subcommand(fs, args, "init", "issue"); !errors.As(err, &ue) || err.Error() != "ca: want init or issue" {
			t.Errorf("%q: %v, want the usage error naming init and issue", args, err)
		}
	}
}

func TestFlagZero(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: -1, -5: -1, time.Second: time.Second} {
		if got := FlagZero(in); got != want {
			t.Errorf("FlagZero(%v) = %v, want %v", in, got, want)
		}
	}
}

// TestPrintUsage: -h prints the usage, a "Flags:" header (once, whether
// the usage ends with one or not) and every flag with two dashes, its value
// name, its usage and its default unless that is the zero value; a command
// without flags gets no header.
func TestPrintUsage(t *testing.T) {
	fs := NewFlagSet("x", io.Discard, "")
	fs.String("email", "alice@example.com", "the `email` of the user")
	fs.String("brain", "", "the brain `directory`")
	fs.Int("port", 8080, "gateway port")
	fs.Int("zero", 0, "a number")
	fs.Duration("ttl", 0, "a lifetime")
	fs.Duration("timeout", 5*time.Minute, "how long")
	fs.Bool("json", false, "print JSON")
	fs.Bool("files", true, "check files")
	fs.Float64("rate", 0, "calls per second")
	const flags = `  --brain directory
        the brain directory
  --email email
        the email of the user (default "alice@example.com")
  --files
        check files (default true)
  --json
        print JSON
  --port int
        gateway port (default 8080)
  --rate float
        calls per second
  --timeout duration
        how long (default 5m0s)
  --ttl duration
        a lifetime
  --zero int
        a number
`
	for _, usage := range []string{"Usage: x\n", "Usage: x\n\nFlags:\n", "Usage: x"} {
		var b strings.Builder
		PrintUsage(&b, usage, fs)
		if want := "Usage: x\n\nFlags:\n" + flags; b.String() != want {
			t.Errorf("usage %q:\n%s\nwant\n%s", usage, b.String(), want)
		}
	}
	var b strings.Builder
	PrintUsage(&b, "Usage: y\n", NewFlagSet("y", io.Discard, ""))
	if b.String() != "Usage: y\n" {
		t.Errorf("no flags: %q", b.String())
	}
}

// TestParseErrorsNameFlagsWithTwoDashes: package flag's errors name the
// flag with one dash; Parse's name it --flag, and the flag package's own
// copy of the error is not printed (only the usage, then the caller's
// error).
func TestParseErrorsNameFlagsWithTwoDashes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "flag provided but not defined: --bogus"},
		{[]string{"-bogus"}, "flag provided but not defined: --bogus"},
		{[]string{"--port", "abc"}, `invalid value "abc" for flag --port: parse error`},
		{[]string{"--json=maybe"}, `invalid boolean value "maybe" for --json: parse error`},
		{[]string{"--port"}, "flag needs an argument: --port"},
	} {
		var out strings.Builder
		fs := NewFlagSet("x", &out, "Usage: x\n")
		fs.Int("port", 0, "a port")
		fs.Bool("json", false, "JSON")
		var ue UsageError
		err := Parse(fs, tc.args)
		if !errors.As(err, &ue) || err.Error() != tc.want {
			t.Errorf("%q: %v, want the usage error %q", tc.args, err, tc.want)
		}
		if strings.Contains(out.String(), "flag") || !strings.HasPrefix(out.String(), "Usage: x\n") {
			t.Errorf("%q printed %q, want the usage only", tc.args, out.String())
		}
	}
}
