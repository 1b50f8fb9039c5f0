package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/brainstem/brainstem/gateway"
	"github.com/brainstem/brainstem/gateway/config"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/shardserver"
	"github.com/brainstem/brainstem/tooling/cli"
)

// The servers: brainstem gateway and brainstem shard.

func runGateway(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("gateway", s)
	configPath := fs.String("config", "/etc/brainstem/gateway.yaml", "the gateway configuration `file` (YAML)")
	check := fs.Bool("check-config", false, "validate the configuration (and the files it names) and exit")
	checkFiles := fs.Bool("check-files", true, "with --check-config: also check the certificate files the configuration names")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *check {
		warnings, err := config.CheckConfig(*configPath, *checkFiles, time.Now())
		return cli.Checked(s.out, *configPath, warnings, err)
	}
	cfg, err := config.LoadConfig(*configPath)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if err := cfg.Validate(); err != nil {
		return cli.Usagef("%s is invalid:\n%v", *configPath, err)
	}
	logger, tr, err := cli.Observability(s.err, cfg.Log.Format, cfg.Log.Level, "brainstem-gateway")
	if err != nil {
		return err
	}
	gw, err := gateway.New(ctx, cfg, gateway.Options{Logger: logger, AuditLog: os.Stdout, Registry: cli.ProcessRegistry(), Tracing: tr})
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

func runShard(ctx context.Context, args []string, s streams) error {
	fs := newFlagSet("shard", s)
	// Errors name the TLS files by their flags.
	cfg := shardserver.Config{TLS: pki.Files{CAName: "--tls-ca", CertName: "--tls-cert", KeyName: "--tls-key"}}
	sc := &cfg.Shard
	fs.StringVar(&sc.Brain, "brain", "", "the brain `directory` (holds wiki/, inbox/, sessions/) (required)")
	fs.StringVar(&sc.Wing, "wing", "", "the `wing` this shard serves (required)")
	stdioMode := fs.Bool("stdio", false, "serve MCP over stdin/stdout instead of QUIC")
	email := fs.String("email", "", "with --stdio: the `email` of the author of writes (default: git config user.email)")
	listen := fs.String("listen", ":7443", "UDP `address` for QUIC")
	fs.StringVar(&cfg.TLS.CA, "tls-ca", "", "PEM `file` of the internal CA that signs gateway and shard certificates")
	fs.StringVar(&cfg.TLS.Cert, "tls-cert", "", "PEM `file` of this shard's certificate")
	fs.StringVar(&cfg.TLS.Key, "tls-key", "", "PEM `file` of this shard's private key")
	fs.StringVar(&sc.PolicyFile, "policy", "", "YAML `file` with the wing policy (readers, writers, curators); re-read when it changes and on SIGHUP")
	fs.DurationVar(&sc.PolicyPoll, "policy-poll", shard.DefaultPolicyPoll, "check the policy file for a new version this often (0: only on SIGHUP)")
	fs.StringVar(&sc.StateDir, "state-dir", "", "`directory` of the shard's own state: the idempotency journal and the index snapshot that makes restarts fast (default: <brain>/.brainstem/<wing>); keep it on the brain's volume")
	fs.DurationVar(&sc.Idempotency.TTL, "idempotency-ttl", idempotency.DefaultTTL, "how long a write's idempotency key is remembered")
	fs.IntVar(&sc.Idempotency.MaxKeys, "idempotency-max-keys", idempotency.DefaultMaxKeys, "idempotency keys remembered at most (oldest forgotten first)")
	fs.IntVar(&sc.Idempotency.MaxKeysPerCaller, "idempotency-max-keys-per-caller", idempotency.DefaultMaxKeysPerCaller, "idempotency keys remembered at most per caller")
	fs.StringVar(&cfg.KeyFile, "key-file", "", "PEM `file` of the shard-token signing key, created if missing (default: a new key each start, which makes the gateway re-mint)")
	fs.DurationVar(&sc.IndexDelay, "index-delay", store.DefaultIndexDelay, "rewrite the wing's _index.md at most this often after a change (0: on every write, which costs more as the wing grows); shutdown always brings it up to date")
	fs.BoolVar(&sc.History.AllowPurge, "allow-purge", false, "let curators purge content from the wing's history for good (brain_purge); off: it is refused")
	fs.IntVar(&sc.MaxNoteBytes, "max-note-bytes", store.DefaultMaxNoteBytes, "largest note file the shard loads or writes; larger files are skipped with a warning")
	fs.Int64Var(&sc.HitCacheBytes, "hit-cache-bytes", 0, "memory bound in bytes of the notes kept to render search hits without opening their files (0: 64 MiB; -1: no cache)")
	fs.DurationVar(&sc.TokenTTL, "token-ttl", 10*time.Minute, "lifetime of the shard tokens this shard mints")
	admin := fs.String("admin-listen", ":9091", "HTTP `address` for /healthz, /readyz and /metrics (empty: off)")
	logFormat := fs.String("log-format", "json", "log format: json or text")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	gitRemote := remote.Flags(fs)
	check := fs.Bool("check-config", false, "check the brain, --policy, --key-file and the TLS identity (role, key, expiry, CA chain), then exit")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *check {
		warnings, err := shard.Check(shard.Files{Brain: sc.Brain, Wing: sc.Wing, Policy: sc.PolicyFile, KeyFile: cfg.KeyFile,
			TLSCA: cfg.TLS.CA, TLSCert: cfg.TLS.Cert, TLSKey: cfg.TLS.Key, Remote: gitRemote()}, time.Now())
		return cli.Checked(s.out, "shard configuration", warnings, err)
	}
	sc.IndexDelay, sc.PolicyPoll, sc.Remote, sc.Version = cli.FlagZero(sc.IndexDelay), cli.FlagZero(sc.PolicyPoll), gitRemote(), version
	var err error
	if sc.Logger, cfg.Tracing, err = cli.Observability(s.err, *logFormat, *logLevel, "brainstem-shard"); err != nil {
		return err
	}
	if *stdioMode {
		return cli.UsageIf(shardserver.ServeStdio(ctx, *sc, *email, s.in, s.out), shardserver.ErrConfig)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg.Reload = hup
	srv, err := shardserver.New(ctx, cfg)
	if err != nil {
		return cli.UsageIf(err, shardserver.ErrConfig)
	}
	defer srv.Close()
	if err := srv.ListenAndServe(ctx, *listen, *admin); err != nil {
		return err
	}
	return srv.Close()
}
