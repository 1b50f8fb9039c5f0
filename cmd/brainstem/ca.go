package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/brainstem/brainstem/proto/pki"
)

const caUsage = `Usage: brainstem ca init --dir DIR
       brainstem ca issue --dir DIR --role gateway|shard --name NAME[,NAME…] --out OUTDIR [--validity 8760h]

init creates the internal CA (ca.crt, ca.key) that signs gateway and shard
certificates. issue writes tls.crt, tls.key and ca.crt for one gateway or
shard into OUTDIR. Shards need the DNS names gateways dial them by; a gateway
certificate's names are informational.

Flags:
`

func runCA(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "init" && args[0] != "issue") {
		fmt.Fprint(stderr, caUsage)
		return usageError{"ca: want init or issue"}
	}
	fs := newFlagSet("ca "+args[0], stderr, caUsage)
	dir := fs.String("dir", "", "the CA directory (ca.crt, ca.key)")
	role := fs.String("role", "", "issue: gateway or shard")
	names := fs.String("name", "", "issue: comma-separated DNS names or IPs")
	out := fs.String("out", "", "issue: where to write tls.crt, tls.key and ca.crt")
	validity := fs.Duration("validity", pki.DefaultCertValidity, "issue: certificate lifetime")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *dir == "" {
		return usageError{"ca: --dir is required"}
	}
	if args[0] == "init" {
		ca, err := pki.InitDir(*dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "created CA %q in %s (expires %s)\n", ca.Certificate().Subject.CommonName, *dir, ca.Certificate().NotAfter.Format(time.DateOnly))
		return nil
	}
	r, err := pki.ParseRole(*role)
	if err != nil {
		return usageError{err.Error()}
	}
	if *out == "" || *names == "" {
		return usageError{"ca issue: --name and --out are required"}
	}
	var list []string
	for _, n := range strings.Split(*names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			list = append(list, n)
		}
	}
	if err := pki.IssueFiles(*dir, *out, r, list, *validity); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "issued a %s certificate for %s into %s\n", r, strings.Join(list, ", "), *out)
	return nil
}
