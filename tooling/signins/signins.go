// Package signins is the command `brainstem signins list|end`: offboarding
// through every gateway replica's admin endpoint (auth/offboard.Admin), and
// the ended sign-ins file.
package signins

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/brainstem/brainstem/auth/offboard"
	"github.com/brainstem/brainstem/tooling/cli"
)

// Run is `brainstem signins list|end` with the arguments after "signins";
// usage returns a command's help text by name (the binary's usage files).
func Run(ctx context.Context, args []string, out, errw io.Writer, usage func(string) string) error {
	fs := cli.NewFlagSet("signins", errw, usage("signins"))
	admins := fs.String("admin", "", "each gateway replica's admin `urls`, comma-separated, e.g. http://10.0.0.7:9090")
	resolve := fs.Bool("resolve", false, "a name in --admin that resolves to several addresses (a headless Service) means each of them")
	tokenFile := fs.String("token-file", "", "the `file` holding the operator token (the gateway's signins.admin_token_file)")
	email := fs.String("email", "", "the person's `email` (list: empty lists everyone)")
	notBefore := fs.String("not-before", "now", "end: refuse tokens issued before this `time`: now, now+DURATION or RFC 3339")
	reason := fs.String("reason", "", "end: a `reason` the gateways log with each refusal")
	file := fs.String("file", "", "end: also add the entry to this ended sign-ins `file`")
	if err := cli.Subcommand(fs, args, "list", "end"); err != nil {
		return err
	}
	if err := cli.Parse(fs, args[1:]); err != nil {
		return err
	}
	if *tokenFile == "" || *admins == "" {
		return cli.Usagef("signins %s: --admin and --token-file are required", args[0])
	}
	tok, err := os.ReadFile(*tokenFile)
	if err != nil {
		return fmt.Errorf("signins: --token-file: %w", err)
	}
	replicas, err := offboard.ExpandReplicas(ctx, cli.List(*admins), *resolve)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	admin := offboard.Admin{Token: strings.TrimSpace(string(tok))}
	if args[0] == "list" {
		return printList(ctx, out, admin, replicas, *email)
	}
	if *email == "" {
		return cli.Usagef("signins end: --email is required")
	}
	nb, err := offboard.ParseNotBefore(*notBefore, time.Now())
	if err != nil {
		return cli.UsageError{Msg: "signins end: --not-before: " + err.Error()}
	}
	e, err := offboard.Check(offboard.Entry{Email: *email, NotBefore: nb, Reason: *reason})
	if err != nil {
		return cli.UsageError{Msg: "signins end: " + err.Error()}
	}
	return printEnd(ctx, out, admin, replicas, e, *file)
}

// printList asks every replica for email's sign-ins and prints them, the
// entries each replica enforces, and how many replicas answered.
func printList(ctx context.Context, w io.Writer, a offboard.Admin, replicas []string, email string) error {
	reports, signins, err := a.List(ctx, replicas, email)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EMAIL\tCLIENT\tGRANT\tLAST SEEN\tACCESS EXPIRES\tSIGN-IN ENDS\tENDED\tREPLICAS")
	for _, si := range signins {
		ends := "-"
		if !si.Expires.IsZero() {
			ends = si.Expires.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%v\t%s\n", si.Email, si.Client, si.Grant, si.LastSeen.UTC().Format(time.RFC3339),
			si.AccessExpires.UTC().Format(time.RFC3339), ends, si.Ended, strings.Join(si.Replicas, ","))
	}
	if ferr := tw.Flush(); ferr != nil {
		return ferr
	}
	for _, r := range reports {
		for _, e := range r.Ended {
			fmt.Fprintf(w, "replica %s enforces: %s not before %s %s\n", r.Replica, e.Email, e.NotBefore.Format(time.RFC3339), e.Reason)
		}
	}
	fmt.Fprintf(w, "%d sign-ins seen by %d of %d replicas since they started\n", len(signins), len(reports), len(replicas))
	if err != nil {
		return fmt.Errorf("signins list: %w", err)
	}
	return nil
}

// printEnd adds e to file (when set), posts it to every replica and prints
// what each answered; it fails naming the replicas that did not take it.
func printEnd(ctx context.Context, w io.Writer, a offboard.Admin, replicas []string, e offboard.Entry, file string) error {
	e, err := offboard.Check(e)
	if err != nil {
		return err
	}
	if file != "" {
		if err := offboard.AddToFile(file, e); err != nil {
			return err
		}
		fmt.Fprintf(w, "added to %s: %s, not before %s\n", file, e.Email, e.NotBefore.Format(time.RFC3339))
	}
	reports, err := a.End(ctx, replicas, e)
	for _, r := range reports {
		fmt.Fprintf(w, "replica %s: the sign-ins of %s are ended (tokens issued before %s are refused)\n", r.Replica, e.Email, e.NotBefore.Format(time.RFC3339))
	}
	if err != nil {
		return fmt.Errorf("signins end: %d of %d replicas took the entry; add it to the ended sign-ins file (--file, or the ConfigMap) so the others get it: %w", len(reports), len(replicas), err)
	}
	return nil
}
