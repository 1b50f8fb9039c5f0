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
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/proto/pki"
	"github.com/brainstem/brainstem/shard"
	"github.com/brainstem/brainstem/shard/stdio"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/shard/tools"
)

const shardUsage = `Usage: brainstem shard --brain DIR --wing NAME [flags]

Serves one wing of a brain. With --stdio it speaks MCP on stdin/stdout for one
local developer (every capability, authored as --email or git's user.email).
Otherwise it serves the gateway over QUIC (brainstem/1) with mutual TLS,
verifying a shard token on every call and minting tokens by --policy.

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
	policyFile := fs.String("policy", "", "YAML file with the wing policy (readers, writers, curators)")
	keyFile := fs.String("key-file", "", "PEM file of the shard-token signing key, created if missing (default: a new key each start, which makes the gateway re-mint)")
	indexDelay := fs.Duration("index-delay", store.DefaultIndexDelay, "rewrite the wing's _index.md at most this often after a change (0: on every write, which costs more as the wing grows); shutdown always brings it up to date")
	maxNote := fs.Int("max-note-bytes", store.DefaultMaxNoteBytes, "largest note file the shard loads or writes; larger files are skipped with a warning")
	stateDir := fs.String("state-dir", "", "directory for the index snapshot that makes restarts fast (default: BRAIN/.brainstem)")
	tokenTTL := fs.Duration("token-ttl", 10*time.Minute, "lifetime of the shard tokens this shard mints")
	admin := fs.String("admin-listen", ":9091", "HTTP address for /healthz, /readyz and /metrics (empty: off)")
	logFormat := fs.String("log-format", "json", "log format: json or text")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := parseFlags(fs, args); err != nil {
		return err
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
		}
		svc, err := shard.Open(ctx, shard.Config{Brain: *brain, Wing: *wing, Key: mustKey(), IndexDelay: delay, MaxNoteBytes: *maxNote, StateDir: *stateDir, Logger: logger, Version: version})
		if err != nil {
			return err
		}
		defer svc.Close()
		caller := tools.Caller{Email: auth.CanonicalEmail(author), Caps: auth.CapRead | auth.CapWrite | auth.CapCurate}
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
	policy, err := auth.LoadPolicy(*policyFile)
	if err != nil {
		return usageError{err.Error()}
	}
	key, err := auth.LoadOrCreateKey(*keyFile)
	if err != nil {
		return err
	}
	tlsConf, err := serverTLSFromFiles(*tlsCA, *tlsCert, *tlsKey)
	if err != nil {
		return err
	}
	svc, err := shard.Open(ctx, shard.Config{Brain: *brain, Wing: *wing, Policy: policy, Key: key, TokenTTL: *tokenTTL,
		IndexDelay: delay, MaxNoteBytes: *maxNote, StateDir: *stateDir, Logger: logger, Version: version})
	if err != nil {
		return err
	}
	defer svc.Close()
	pc, err := net.ListenPacket("udp", *listen)
	if err != nil {
		return fmt.Errorf("shard: listen %s: %w (change --listen)", *listen, err)
	}
	srv := proto.NewServer(svc, proto.ServerConfig{TLS: tlsConf, Logger: logger})
	if *admin != "" {
		stopAdmin, err := serveAdmin(ctx, *admin, shardProbes(svc), logger, shardMetrics(*wing, svc)...)
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

func serverTLSFromFiles(ca, cert, key string) (*tls.Config, error) {
	caPEM, err1 := os.ReadFile(ca)
	certPEM, err2 := os.ReadFile(cert)
	keyPEM, err3 := os.ReadFile(key)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("reading TLS material: %w", err)
	}
	return pki.ServerTLS(caPEM, certPEM, keyPEM)
}
