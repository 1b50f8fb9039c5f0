package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/shard/tools"
)

// Config describes one shard: the wing it serves and how it decides who may
// do what there.
type Config struct {
	Brain    string        // the brain directory (holds wiki/, inbox/, sessions/)
	Wing     string        // the wing this shard owns
	Policy   auth.Policy   // readers, writers, curators of the wing
	Key      auth.KeyPair  // the shard-token signing key (ephemeral unless loaded from a file)
	TokenTTL time.Duration // shard-token lifetime; 0 → 10 minutes
	Version  string        // reported by Health
	Logger   *slog.Logger
	Now      func() time.Time
	Progress func(done, total int) // optional: called while the index builds
	// IndexDelay batches rewrites of the wing's _index.md: 0 means the
	// default (1s), a positive delay rewrites it at most that often, a
	// negative one rewrites it on every write. Close brings it up to date;
	// notes are durable either way.
	IndexDelay time.Duration
	// MaxNoteBytes bounds a note file (0 → 1 MiB); larger files are skipped
	// with a warning.
	MaxNoteBytes int
	// StateDir holds the index snapshot that makes restarts incremental
	// ("" → <Brain>/.brainstem).
	StateDir string
}

// Service is one wing served over brainstem/1. It implements proto.Handler:
// every call carries a shard token that this shard signed; the token's email
// becomes the author of writes and its capabilities gate each tool.
type Service struct {
	cfg      Config
	store    *store.Store
	tools    *tools.Set
	minter   *auth.Minter
	verifier *auth.CachingVerifier
	log      *slog.Logger
}

// verifiedTokens bounds the cache of verified shard tokens: one per active
// (user, gateway replica) pair is plenty; a miss only costs one Ed25519 check.
const verifiedTokens = 8192

var _ proto.Handler = (*Service)(nil)

// Open opens the wing's store (building its index) and prepares the tools.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if err := cfg.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("shard: policy of wing %q: %w", cfg.Wing, err)
	}
	if cfg.Key.Private == nil {
		return nil, errors.New("shard: no signing key")
	}
	st, err := store.Open(ctx, store.Options{
		Root:         cfg.Brain,
		Wing:         cfg.Wing,
		Logger:       cfg.Logger,
		Now:          cfg.Now,
		Progress:     cfg.Progress,
		IndexDelay:   cfg.IndexDelay,
		MaxNoteBytes: cfg.MaxNoteBytes,
		StateDir:     cfg.StateDir,
	})
	if err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	verifier, err := auth.NewCachingVerifier(auth.NewTokenVerifier(cfg.Wing, cfg.Now, cfg.Key.Public()), verifiedTokens)
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("shard: %w", err)
	}
	return &Service{
		verifier: verifier,
		cfg:      cfg,
		store:    st,
		tools:    tools.New(st, tools.Options{Logger: cfg.Logger}),
		minter:   auth.NewMinter(cfg.Wing, cfg.Key, cfg.TokenTTL, cfg.Now),
		log:      cfg.Logger.With("wing", cfg.Wing),
	}, nil
}

// Tools returns the wing's tool set (the stdio mode serves it directly).
func (s *Service) Tools() *tools.Set { return s.tools }

// Close stops the store's background work, writes _index.md if it is
// behind and saves the index snapshot.
func (s *Service) Close() error { return s.store.Close() }

// Skipped lists the files of the wing that are not loaded, with the reason.
func (s *Service) Skipped() []store.Skipped { return s.store.Skipped() }

// SkippedFiles returns how many files of the given kind (store.SkipKinds)
// the wing does not load.
func (s *Service) SkippedFiles(kind string) int { return s.store.SkippedCount(kind) }

// ListTools answers the tool descriptors, unparsed.
func (s *Service) ListTools(context.Context) (*proto.ListToolsResponse, error) {
	return &proto.ListToolsResponse{Tools: s.tools.Descriptors()}, nil
}

// Call verifies the shard token, checks the capability the tool needs, and
// runs the tool as the token's email.
func (s *Service) Call(ctx context.Context, req *proto.CallRequest) (*proto.CallResponse, error) {
	claims, err := s.verifier.Verify(req.Token)
	switch {
	case errors.Is(err, auth.ErrWrongWing):
		return nil, &proto.Error{Code: proto.CodeForbidden, Message: fmt.Sprintf("this shard serves wing %q; the token is for another wing", s.cfg.Wing)}
	case err != nil:
		return nil, &proto.Error{Code: proto.CodeUnauthenticated, Message: "shard token rejected (" + err.Error() + "); mint a new one"}
	}
	needs, ok := s.tools.Needs(req.Tool)
	if !ok {
		return nil, &proto.Error{Code: proto.CodeUnknownTool, Message: fmt.Sprintf("wing %q has no tool %q", s.cfg.Wing, req.Tool)}
	}
	if !claims.Caps.Has(needs) {
		return nil, &proto.Error{Code: proto.CodeForbidden, Message: fmt.Sprintf("%s needs %s in wing %q; %s has %s", req.Tool, needs, s.cfg.Wing, claims.Email, claims.Caps)}
	}
	var stats *index.Stats
	if req.Stats != nil {
		stats = &index.Stats{Docs: req.Stats.Docs, TotalLength: req.Stats.TotalLength, DocFreq: req.Stats.DocFreq}
	}
	result, isErr := s.tools.CallWith(ctx, tools.Caller{Email: claims.Email, Caps: claims.Caps}, req.Tool, req.Args,
		tools.CallOptions{Stats: stats, Rank: req.Rank, Fetch: req.Fetch})
	return &proto.CallResponse{Result: result, IsError: isErr}, nil
}

// Mint evaluates the wing policy for the identity the gateway vouches for and
// signs a token with the capabilities it grants. proto only lets gateways ask.
func (s *Service) Mint(_ context.Context, peer proto.Peer, req *proto.MintRequest) (*proto.MintResponse, error) {
	email := auth.CanonicalEmail(req.Email)
	if email == "" {
		return nil, &proto.Error{Code: proto.CodeBadRequest, Message: "mint needs an email"}
	}
	caps := s.cfg.Policy.Caps(email, req.Groups)
	if caps == 0 {
		s.log.Info("mint denied", "email", email, "request_id", req.RequestID, "peer", peer.CommonName)
		return nil, &proto.Error{Code: proto.CodeForbidden, Message: fmt.Sprintf("%s has no access to wing %q", email, s.cfg.Wing)}
	}
	tok, exp, err := s.minter.Mint(email, caps, req.NotAfter)
	if err != nil {
		return nil, &proto.Error{Code: proto.CodeBadRequest, Message: err.Error()}
	}
	s.log.Info("minted", "email", email, "request_id", req.RequestID, "caps", caps.String(), "expires", exp)
	return &proto.MintResponse{Token: tok, Caps: caps.Strings(), Expiry: exp}, nil
}

// Stats answers the corpus statistics of the query's terms in this wing.
func (s *Service) Stats(_ context.Context, req *proto.StatsRequest) (*proto.CorpusStats, error) {
	st := s.tools.QueryStats(req.Query)
	return &proto.CorpusStats{Docs: st.Docs, TotalLength: st.TotalLength, DocFreq: st.DocFreq}, nil
}

// Health reports the wing and its size.
func (s *Service) Health(context.Context) (*proto.HealthResponse, error) {
	return &proto.HealthResponse{Wing: s.cfg.Wing, Ready: true, Notes: int64(s.store.Len()), Version: s.cfg.Version}, nil
}
