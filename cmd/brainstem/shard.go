package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/stdio"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/shard/tools"
)

const shardUsage = `Usage: brainstem shard --brain DIR --wing NAME [flags]

Serves one wing of a brain. With --stdio it speaks MCP on stdin/stdout for one
local developer (every capability, authored as --email or git's user.email).
Otherwise it serves the gateway over QUIC (brainstem/1) with mutual TLS,
verifying a shard token on every call and minting tokens by --policy.
With --check-config it only checks the brain, the policy, the key file and
the TLS identity (shard role, key, expiry, CA chain), reports every problem
at once, and exits 0 (usable) or 2.

Flags:
`

func runShard(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("shard", stderr, shardUsage)
	brain := fs.String("brain", "", "the brain directory (holds wiki/, inbox/, sessions/) (required)")
	wing := fs.String("wing", "", "the wing this shard serves (required)")
	stdioMode := fs.Bool("stdio", false, "serve MCP over stdin/stdout instead of QUIC")
	email := fs.String("email", "", "with --stdio: the author of writes (default: git config user.email)")
	listen := fs.String("listen", ":7443", "UDP address for QUIC")
	tlsCA := fs.String("tls-ca", "", "PEM file of the internal CA that signs gateway and shard certificates")
	tlsCert := fs.String("tls-cert", "", "PEM file of this shard's certificate")
	tlsKey := fs.String("tls-key", "", "PEM file of this shard's private key")
	policyFile := fs.String("policy", "", "YAML file with the wing policy (readers, writers, curators); re-read when it changes and on SIGHUP")
	policyPoll := fs.Duration("policy-poll", shard.DefaultPolicyPoll, "check the policy file for a new version this often (0: only on SIGHUP)")
	stateDir := fs.String("state-dir", "", "directory of the shard's own state: the idempotency journal and the index snapshot that makes restarts fast (default: <brain>/.brainstem/<wing>); keep it on the brain's volume")
	keyTTL := fs.Duration("idempotency-ttl", idempotency.DefaultTTL, "how long a write's idempotency key is remembered")
	maxKeys := fs.Int("idempotency-max-keys", idempotency.DefaultMaxKeys, "idempotency keys remembered at most (oldest forgotten first)")
	maxCallerKeys := fs.Int("idempotency-max-keys-per-caller", idempotency.DefaultMaxKeysPerCaller, "idempotency keys remembered at most per caller")
	keyFile := fs.String("key-file", "", "PEM file of the shard-token signing key, created if missing (default: a new key each start, which makes the gateway re-mint)")
	indexDelay := fs.Duration("index-delay", store.DefaultIndexDelay, "rewrite the wing's _index.md at most this often after a change (0: on every write, which costs more as the wing grows); shutdown always brings it up to date")
	maxNote := fs.Int("max-note-bytes", store.DefaultMaxNoteBytes, "largest note file the shard loads or writes; larger files are skipped with a warning")
	tokenTTL := fs.Duration("token-ttl", 10*time.Minute, "lifetime of the shard tokens this shard mints")
	admin := fs.String("admin-listen", ":9091", "HTTP address for /healthz, /readyz and /metrics (empty: off)")
	logFormat := fs.String("log-format", "json", "log format: json or text")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	check := fs.Bool("check-config", false, "check the brain, --policy, --key-file and the TLS identity (role, key, expiry, CA chain), then exit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *check {
		warnings, err := shard.Check(shard.Files{Brain: *brain, Wing: *wing, Policy: *policyFile, KeyFile: *keyFile,
			TLSCA: *tlsCA, TLSCert: *tlsCert, TLSKey: *tlsKey}, time.Now())
		for _, w := range warnings {
			fmt.Fprintln(stdout, "warning:", w)
		}
		if err != nil {
			return usageError{fmt.Sprintf("shard configuration is invalid:\n%v", err)}
		}
		fmt.Fprintln(stdout, "shard configuration is valid")
		return nil
	}
	if *brain == "" || *wing == "" {
		return usageError{"shard: --brain and --wing are required"}
	}
	delay := *indexDelay
	if delay == 0 {
		delay = -1 // write-through
	}
	logger, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}

	if *stdioMode {
		author := *email
		if author == "" {
			if author, err = stdio.DefaultEmail(ctx); err != nil {
				return usageError{"shard --stdio: no --email and " + err.Error()}
			}
		} else if author, err = auth.CanonicalEmail(author); err != nil {
			return usageError{fmt.Sprintf("shard --stdio: --email %q: %v", *email, err)}
		}
		svc, err := shard.Open(ctx, shard.Config{Brain: *brain, Wing: *wing, Key: mustKey(), StateDir: *stateDir,
			Idempotency: idempotency.Options{TTL: *keyTTL, MaxKeys: *maxKeys, MaxKeysPerCaller: *maxCallerKeys},
			IndexDelay:  delay, MaxNoteBytes: *maxNote, Logger: logger, Version: version})
		if err != nil {
			return err
		}
		defer svc.Close()
		caller := tools.Caller{Email: author, Caps: auth.CapRead | auth.CapWrite | auth.CapCurate}
		return stdio.Serve(ctx, svc.Tools(), caller, stdin, stdout, logger)
	}

	var missing []string
	for name, v := range map[string]string{"--tls-ca": *tlsCA, "--tls-cert": *tlsCert, "--tls-key": *tlsKey, "--policy": *policyFile} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return usageError{fmt.Sprintf("shard: %v required to serve over QUIC (or use --stdio)", missing)}
	}
	if _, err := auth.LoadPolicy(*policyFile); err != nil {
		return usageError{err.Error()}
	}
	key, err := auth.LoadOrCreateKey(*keyFile)
	if err != nil {
		return err
	}
	tlsConf, resetKey, err := serverTLSFromFiles(*tlsCA, *tlsCert, *tlsKey, *wing)
	if err != nil {
		return err
	}
	poll := *policyPoll
	if poll <= 0 {
		poll = -1 // SIGHUP only
	}
	reg := prometheus.NewRegistry()
	svc, err := shard.Open(ctx, shard.Config{Brain: *brain, Wing: *wing, PolicyFile: *policyFile, PolicyPoll: poll, StateDir: *stateDir,
		Idempotency: idempotency.Options{TTL: *keyTTL, MaxKeys: *maxKeys, MaxKeysPerCaller: *maxCallerKeys}, Metrics: reg,
		Key: key, TokenTTL: *tokenTTL, IndexDelay: delay, MaxNoteBytes: *maxNote, Logger: logger, Version: version})
	if err != nil {
		return err
	}
	defer svc.Close()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				logger.Info("SIGHUP: re-reading the policy file", "path", *policyFile)
				_, _ = svc.ReloadPolicy(true) // the outcome is logged
			}
		}
	}()
	pc, err := net.ListenPacket("udp", *listen)
	if err != nil {
		return fmt.Errorf("shard: listen %s: %w (change --listen)", *listen, err)
	}
	srv := proto.NewServer(svc, proto.ServerConfig{TLS: tlsConf, Logger: logger, StatelessResetKey: resetKey})
	if *admin != "" {
		stopAdmin, err := serveAdmin(ctx, *admin, shardProbes(svc), reg, logger, shardMetrics(*wing, svc)...)
		if err != nil {
			return err
		}
		defer stopAdmin()
	}
	logger.Info("shard serving", "wing", *wing, "listen", pc.LocalAddr().String(), "version", version)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, pc) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// shardMetrics exports the wing's files that are not loaded, by kind.
func shardMetrics(wing string, svc *shard.Service) []prometheus.Collector {
	var out []prometheus.Collector
	for _, kind := range store.SkipKinds() {
		out = append(out, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "brainstem_shard_skipped_files",
			Help:        "Files of the wing's wiki directory the shard does not load (see its warning logs and `brainstem check`), by kind: name, place, type, size, read.",
			ConstLabels: prometheus.Labels{"wing": wing, "kind": kind},
		}, func() float64 { return float64(svc.SkippedFiles(kind)) }))
	}
	return out
}

func mustKey() auth.KeyPair {
	k, err := auth.GenerateKey()
	if err != nil {
		panic(err) // crypto/rand failing is not recoverable
	}
	return k
}

// shardProbes answers /healthz and /readyz from the service's health.
func shardProbes(svc *shard.Service) http.Handler {
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, r *http.Request) {
		h, err := svc.Health(r.Context())
		if err != nil || !h.Ready {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok %s %d notes\n", h.Wing, h.Notes)
	}
	mux.HandleFunc("GET /healthz", ok)
	mux.HandleFunc("GET /readyz", ok)
	return mux
}

// serverTLSFromFiles loads the shard's mTLS identity and derives its
// stateless-reset key from the TLS private key (stable across restarts,
// distinct per wing).
func serverTLSFromFiles(ca, cert, key, wing string) (*tls.Config, *quic.StatelessResetKey, error) {
	caPEM, err1 := os.ReadFile(ca)
	certPEM, err2 := os.ReadFile(cert)
	keyPEM, err3 := os.ReadFile(key)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, nil, fmt.Errorf("reading TLS material: %w", err)
	}
	tc, err := pki.ServerTLS(caPEM, certPEM, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	secret, err := pki.PrivateKeyDER(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	rk, err := proto.DeriveStatelessResetKey(secret, "wing "+wing)
	if err != nil {
		return nil, nil, err
	}
	return tc, rk, nil
}
