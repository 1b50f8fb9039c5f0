package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/brainstem/brainstem/auth/offboard"
	"github.com/brainstem/brainstem/tooling/cli"
)

// runSignins is `brainstem signins list|end`: offboarding through every
// gateway replica's admin endpoint (auth/offboard.Admin).
func runSignins(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("signins", s)
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
		return listSignins(ctx, admin, replicas, *email, s)
	}
	if *email == "" {
		return cli.Usagef("signins end: --email is required")
	}
	nb, err := parseNotBefore(*notBefore, time.Now())
	if err != nil {
		return cli.UsageError{Msg: "signins end: --not-before: " + err.Error()}
	}
	e, err := offboard.Check(offboard.Entry{Email: *email, NotBefore: nb, Reason: *reason})
	if err != nil {
		return cli.UsageError{Msg: "signins end: " + err.Error()}
	}
	if *file != "" {
		if err := offboard.AddToFile(*file, e); err != nil {
			return err
		}
		fmt.Fprintf(s.out, "added to %s: %s, not before %s\n", *file, e.Email, e.NotBefore.Format(time.RFC3339))
	}
	reports, err := admin.End(ctx, replicas, e)
	for _, r := range reports {
		fmt.Fprintf(s.out, "replica %s: the sign-ins of %s are ended (tokens issued before %s are refused)\n", r.Replica, e.Email, e.NotBefore.Format(time.RFC3339))
	}
	if err != nil {
		return fmt.Errorf("signins end: %d of %d replicas took the entry; add it to the ended sign-ins file (--file, or the ConfigMap) so the others get it: %w", len(reports), len(replicas), err)
	}
	return nil
}

func listSignins(ctx context.Context, admin offboard.Admin, replicas []string, email string, s streams) error {
	reports, signins, err := admin.List(ctx, replicas, email)
	tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
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
			fmt.Fprintf(s.out, "replica %s enforces: %s not before %s %s\n", r.Replica, e.Email, e.NotBefore.Format(time.RFC3339), e.Reason)
		}
	}
	fmt.Fprintf(s.out, "%d sign-ins seen by %d of %d replicas since they started\n", len(signins), len(reports), len(replicas))
	if err != nil {
		return fmt.Errorf("signins list: %w", err)
	}
	return nil
}

// parseNotBefore reads now, now+DURATION or an RFC 3339 time; now is
// rounded up to the second (tokens carry iat in seconds).
func parseNotBefore(s string, now time.Time) (time.Time, error) {
	ceil := func(t time.Time) time.Time {
		if c := t.Truncate(time.Second); !c.Equal(t) {
			return c.Add(time.Second)
		}
		return t
	}
	switch {
	case s == "now":
		return ceil(now), nil
	case strings.HasPrefix(s, "now+"):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "now+"))
		if err != nil || d < 0 {
			return time.Time{}, errors.New("want now+DURATION, e.g. now+2m")
		}
		return ceil(now.Add(d)), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want now, now+DURATION or RFC 3339 (e.g. %s)", now.UTC().Format(time.RFC3339))
	}
	return t, nil
}
