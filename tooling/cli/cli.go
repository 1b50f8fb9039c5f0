// Package cli holds the command-line conventions of the brainstem binary,
// so that cmd/brainstem only declares flags and wires packages: flag sets
// whose errors are returned, flags and arguments in any order, every flag
// also settable from the environment (BRAINSTEM_<FLAG>), usage errors (exit
// status 2), the process logger and the output of --check-config.
package cli

import (
	"github.com/brainstem/brainstem/internal/tracing"

	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/brainstem/brainstem/internal/logging"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// UsageError marks a bad command line or configuration (exit status 2).
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// ExitCode prints err (if any) on stderr and returns the exit status:
// 0 success (or -h), 2 a UsageError, 1 anything else.
func ExitCode(err error, stderr io.Writer) int {
	var ue UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "brainstem:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "brainstem:", err)
		return 1
	}
}

// NewFlagSet makes a flag set whose errors are returned, not fatal, and
// whose -h prints usage and then the flags (PrintFlags).
func NewFlagSet(name string, stderr io.Writer, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { PrintUsage(stderr, usage, fs) }
	return fs
}

// PrintUsage prints a command's help: its usage text, then, under a
// "Flags:" header (added unless the text ends with one), its flags as
// PrintFlags lists them.
func PrintUsage(w io.Writer, usage string, fs *flag.FlagSet) {
	text := strings.TrimRight(usage, "\n")
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		fmt.Fprintln(w, text)
		return
	}
	if !strings.HasSuffix(text, "Flags:") {
		text += "\n\nFlags:"
	}
	fmt.Fprintln(w, text)
	PrintFlags(w, fs)
}

// PrintFlags lists fs's flags in name order as the brainstem binary names
// them, with two dashes ("--admin-port int"), each with its usage below
// and its default when it is not the zero value. It replaces package
// flag's PrintDefaults, which writes one dash.
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		value, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if value != "" {
			line += " " + value
		}
		usage = strings.ReplaceAll(usage, "\n", "\n        ")
		if !isZeroDefault(f) {
			if s, ok := f.Value.(flag.Getter); ok && isString(s.Get()) {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		}
		fmt.Fprintf(w, "%s\n        %s\n", line, usage)
	})
}

func isString(v any) bool { _, ok := v.(string); return ok }

// isZeroDefault reports whether f's default is its type's zero value (an
// empty string, 0, false, 0s), which PrintFlags does not show, as package
// flag does not.
func isZeroDefault(f *flag.Flag) (zero bool) {
	defer func() {
		if recover() != nil { // a Value whose String needs more than its zero value
			zero = f.DefValue == ""
		}
	}()
	t := reflect.TypeOf(f.Value)
	z := reflect.Zero(t)
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	}
	return f.DefValue == z.Interface().(flag.Value).String()
}

// Parse parses args, flags and positional arguments in any order
// (brainstem join URL --token T), then fills every flag not given on the
// command line from BRAINSTEM_<FLAG> (upper case, dashes become
// underscores). Its errors are UsageErrors, or flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string) error {
	// Package flag prints its error, naming the flag with one dash, before
	// the usage: the error is returned instead, with two (dashed).
	out := fs.Output()
	fs.SetOutput(io.Discard)
	err := fs.Parse(interspersed(fs, args))
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return UsageError{dashed(err.Error())}
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		env := EnvName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", env, v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return UsageError{err.Error()}
	}
	return nil
}

// Subcommand checks that args start with one of names, the subcommands of
// fs's command (brainstem ca init). If they do not, it prints fs's usage
// and returns flag.ErrHelp for -h, else a UsageError naming the
// subcommands.
func Subcommand(fs *flag.FlagSet, args []string, names ...string) error {
	if len(args) > 0 && slices.Contains(names, args[0]) {
		return nil
	}
	fs.Usage()
	if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--h", "--help"}, args[0]) {
		return flag.ErrHelp
	}
	return Usagef("%s: want %s", fs.Name(), strings.Join(names, " or "))
}

// flagInError is a flag named in one of package flag's errors ("flag
// provided but not defined: -x", "invalid value \"y\" for flag -x: …").
var flagInError = regexp.MustCompile(`(: |flag |for )-([A-Za-z0-9][A-Za-z0-9_-]*)`)

// dashed names the flags of a package flag error with two dashes, as the
// binary writes them everywhere else.
func dashed(msg string) string { return flagInError.ReplaceAllString(msg, "$1--$2") }

// EnvName is the environment variable that sets a flag.
func EnvName(flag string) string {
	return "BRAINSTEM_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// interspersed moves the flags of args (with the values of non-boolean
// flags) before the positional arguments, which package flag wants last;
// "--" ends the flags.
func interspersed(fs *flag.FlagSet, args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
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
	}
	if len(rest) == 0 {
		return flags
	}
	return append(append(flags, "--"), rest...)
}

// Observability builds the process logger (Logger) and its tracing from
// the OTEL_* environment (tracing.Setup, service.name service unless
// OTEL_SERVICE_NAME says otherwise): the one place the gateway and shard
// commands read them. An environment tracing refuses is a usage error.
func Observability(w io.Writer, format, level, service string) (*slog.Logger, *tracing.Tracing, error) {
	l, err := Logger(w, format, level)
	if err != nil {
		return nil, nil, err
	}
	tr, err := tracing.Setup(os.LookupEnv, service)
	if err != nil {
		return nil, nil, UsageError{err.Error()}
	}
	return l, tr, nil
}

// Logger builds the process logger from --log-format (json, the
// production format, or text) and --log-level; durations are logged in
// seconds (internal/logging).
func Logger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, Usagef("--log-level %q: want debug, info, warn or error", level)
	}
	f := strings.ToLower(format)
	if f != "json" && f != "text" {
		return nil, Usagef("--log-format %q: want json or text", format)
	}
	l, err := logging.New(w, f, level)
	if err != nil {
		return nil, UsageError{err.Error()}
	}
	return l, nil
}

// Checked prints the warnings of a --check-config and that what was
// checked is valid, or returns the problems as a UsageError.
func Checked(w io.Writer, what string, warnings []string, err error) error {
	for _, x := range warnings {
		fmt.Fprintln(w, "warning:", x)
	}
	if err != nil {
		return Usagef("%s is invalid:\n%v", what, err)
	}
	_, err = fmt.Fprintf(w, "%s is valid\n", what)
	return err
}

// List splits a comma-separated flag value, dropping empty items.
func List(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// UsageIf makes err a UsageError when it wraps target (a package's
// configuration error), and returns it unchanged otherwise.
func UsageIf(err, target error) error {
	if err != nil && errors.Is(err, target) {
		return UsageError{err.Error()}
	}
	return err
}

// ProcessRegistry is a metrics registry holding the Go runtime and process
// collectors (go_goroutines, process_resident_memory_bytes ...), which
// every server's /metrics carries.
func ProcessRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// FlagZero maps a duration flag's 0 (or less) to -1: on a flag 0 means
// "never" or "every time", while the packages' Config reads 0 as their
// default and a negative duration as that choice.
func FlagZero(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
