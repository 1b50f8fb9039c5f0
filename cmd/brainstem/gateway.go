package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/brainstem/brainstem/gateway"
)

const gatewayUsage = `Usage: brainstem gateway --config FILE [--check-config [--check-files=false]]

Runs the public MCP gateway described by FILE (see docs/operating.md). With
--check-config it only loads and validates FILE and the certificate files it
names (the shards.tls identity must be a gateway-role certificate whose key
matches, valid now and chaining to the CA; the public tls pair must match and
be valid), reports every problem at once, and exits 0 (valid) or 2
(invalid). --check-files=false skips the files (e.g. to check a config
rendered for another machine).

Flags:
`

func runGateway(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gateway", stderr, gatewayUsage)
	configPath := fs.String("config", "/etc/brainstem/gateway.yaml", "the gateway configuration file (YAML)")
	check := fs.Bool("check-config", false, "validate the configuration (and the files it names) and exit")
	checkFiles := fs.Bool("check-files", true, "with --check-config: also check the certificate files the configuration names")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *check {
		warnings, err := gateway.CheckConfig(*configPath, *checkFiles, time.Now())
		for _, w := range warnings {
			fmt.Fprintln(stdout, "warning:", w)
		}
		if err != nil {
			return usageError{fmt.Sprintf("%s is invalid:\n%v", *configPath, err)}
		}
		fmt.Fprintf(stdout, "%s is valid\n", *configPath)
		return nil
	}
	cfg, err := gateway.LoadConfig(*configPath)
	if err != nil {
		return usageError{err.Error()}
	}
	if err := cfg.Validate(); err != nil {
		return usageError{fmt.Sprintf("%s is invalid:\n%v", *configPath, err)}
	}
	logger, err := newLogger(stderr, cfg.Log.Format, cfg.Log.Level)
	if err != nil {
		return err
	}
	// /metrics carries the Go runtime and process series too
	// (go_goroutines, process_resident_memory_bytes ...).
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	gw, err := gateway.New(ctx, cfg, gateway.Options{Logger: logger, AuditLog: os.Stdout, Registry: reg})
	if err != nil {
		return err
	}
	defer gw.Close()
	pub, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w (change listen in %s)", cfg.Listen, err, *configPath)
	}
	admin, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w (change admin_listen in %s)", cfg.AdminListen, err, *configPath)
	}
	logger.Info("gateway serving", "public_url", cfg.PublicURL, "listen", pub.Addr().String(), "admin", admin.Addr().String(), "version", version)
	return gw.Serve(ctx, pub, admin)
}
