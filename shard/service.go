package shard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/tracing"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/search"
	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/remote"
	"github.com/brainstem/brainstem/shard/store"
	"github.com/brainstem/brainstem/shard/tools"
)

// Config describes one shard: the wing it serves and how it decides who may
// do what there.
type Config struct {
	Brain  string      // the brain directory (holds wiki/, inbox/, sessions/)
	Wing   string      // the wing this shard owns
	Policy auth.Policy // readers, writers, curators of the wing, when PolicyFile is ""
	// PolicyFile, when set, is the YAML policy of the wing (auth.LoadPolicy
	// format), read at Open (it must be valid then) and again whenever it
	// changes (ReloadPolicy, polled every PolicyPoll): a valid new policy
	// is enforced from the next call, a broken one is logged and the
	// previous policy stays. It replaces Policy.
	PolicyFile string
	// PolicyPoll is how often the policy file is checked for a new
	// version; 0 → DefaultPolicyPoll; negative: never (ReloadPolicy only).
	PolicyPoll time.Duration
	// StateDir holds the shard's own state: the idempotency journal and
	// the index snapshot that makes restarts incremental. "" →
	// <Brain>/.brainstem/<Wing>. It must survive restarts, like the brain.
	StateDir string
	// Idempotency bounds the idempotency keys remembered (zero fields
	// take the idempotency package's defaults: 24 h, 100,000 keys, 10,000
	// per caller, 64 MiB). Settle and Path are set by Open.
	Idempotency idempotency.Options
	// Metrics, if set, receives the shard's Prometheus series.
	Metrics  prometheus.Registerer
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
	// HitCacheBytes bounds the memory of what renders search hits kept so
	// that a hit opens no file (0 → 64 MiB; -1: no cache).
	HitCacheBytes int64
	// Tools are served after the brain tools, exactly like them (a test
	// declares a tool of its own with tools.Define).
	Tools []tools.Tool
	// History configures the wing's history in git (on by default; see
	// docs/history.md).
	History store.HistoryOptions
	// Remote, when set, is the wing's git remote (docs/operating.md): its
	// Wing is this shard's. Nil: the wing stays on its volume.
	Remote *remote.Config
}

// Service is one wing served over brainstem/1. It implements proto.Handler:
// every call carries a shard token that this shard signed; the token's email
// becomes the author of writes and its capabilities gate each tool.
type Service struct {
	cfg      Config
	store    *store.Store
	journal  *idempotency.Journal
	tools    *tools.Set
	minter   *auth.Minter
	verifier *auth.CachingVerifier
	policy   livePolicy
	metrics  *metrics
	log      *slog.Logger
	stop     chan struct{} // ends the policy watcher
	done     chan struct{}
	closing  sync.Once
	remote   *remoteSync // nil without Config.Remote
}

// verifiedTokens bounds the cache of verified shard tokens: one per active
// (user, gateway replica) pair is plenty; a miss only costs one Ed25519 check.
const verifiedTokens = 8192

var _ proto.Handler = (*Service)(nil)

// Open opens the wing's store (building its index) and prepares the tools.
func Open(ctx context.Context, cfg Config) (*Service, error) {
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	// Every line the shard's parts write names the wing, once.
	log := cfg.Logger.With("wing", cfg.Wing)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pol, seen, err := initialPolicy(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Key.Private == nil {
		return nil, errors.New("shard: no signing key")
	}
	cfg.StateDir = cmp.Or(cfg.StateDir, filepath.Join(cfg.Brain, ".brainstem", cfg.Wing))
	// Before the store reads the notes: a pull a crash cut is finished.
	if n, err := remote.Recover(cfg.Brain); err != nil {
		return nil, fmt.Errorf("shard: wing %q: %w", cfg.Wing, err)
	} else if n > 0 {
		log.Warn("remote: finished a pull that a crash had cut", "notes", n)
	}
	if cfg.Remote != nil {
		cfg.History.Remote = &purgeLink{} // the syncer joins it in startRemote
	}
	st, err := store.Open(ctx, store.Options{Root: cfg.Brain, Wing: cfg.Wing, Now: cfg.Now, Progress: cfg.Progress, IndexDelay: cfg.IndexDelay,
		MaxNoteBytes: cfg.MaxNoteBytes, HitCacheBytes: cfg.HitCacheBytes, StateDir: cfg.StateDir, History: cfg.History,
		Logger: cfg.Logger}) // cfg.Logger, not log: the store names the wing on every line itself
	if err != nil {
		return nil, fmt.Errorf("shard: %w", err)
	}
	verifier, err := auth.NewCachingVerifier(auth.NewTokenVerifier(cfg.Wing, cfg.Now, cfg.Key.Public()), verifiedTokens)
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("shard: %w", err)
	}
	journal, err := openJournal(cfg, st)
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("shard: idempotency journal of wing %q (set the state directory): %w", cfg.Wing, err)
	}
	s := &Service{verifier: verifier, cfg: cfg, store: st, journal: journal, log: log, stop: make(chan struct{}), done: make(chan struct{}),
		tools:  tools.New(st, tools.Options{Logger: log, Journal: journal, Extra: cfg.Tools}),
		minter: auth.NewMinter(cfg.Wing, cfg.Key, cfg.TokenTTL, cfg.Now)}
	s.policy.path, s.policy.seen = cfg.PolicyFile, seen
	s.policy.store(pol)
	if s.metrics, err = newMetrics(cfg.Metrics, s); err != nil {
		_ = journal.Close()
		_ = st.Close()
		return nil, fmt.Errorf("shard: metrics: %w", err)
	}
	s.policy.reloadOK = func() { s.metrics.policyReloads.WithLabelValues("ok").Inc() }
	s.policy.reloadKO = func() { s.metrics.policyReloads.WithLabelValues("error").Inc() }
	s.startPolicyWatch()
	if err := s.startRemote(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// initialPolicy is the policy in force at Open: the policy file's (which
// must be valid then), else cfg.Policy.
func initialPolicy(cfg Config) (*policyVersion, fileVersion, error) {
	if cfg.PolicyFile != "" {
		pol, seen, err := loadPolicyFile(cfg.PolicyFile, cfg.Now())
		if err != nil {
			return nil, fileVersion{}, fmt.Errorf("shard: policy of wing %q: %w", cfg.Wing, err)
		}
		return pol, seen, nil
	}
	cp, err := auth.CompilePolicy(cfg.Policy)
	if err != nil {
		return nil, fileVersion{}, fmt.Errorf("shard: policy of wing %q: %w", cfg.Wing, err)
	}
	return &policyVersion{compiled: cp, loadedAt: cfg.Now()}, fileVersion{}, nil
}

// openJournal opens the wing's idempotency journal in its state directory.
func openJournal(cfg Config, st *store.Store) (*idempotency.Journal, error) {
	jopt := cfg.Idempotency
	jopt.Path = filepath.Join(cfg.StateDir, "idempotency.journal")
	jopt.Settle = tools.Settle(st)
	jopt.Logger = cfg.Logger.With("wing", cfg.Wing)
	if jopt.Now == nil {
		jopt.Now = cfg.Now
	}
	return idempotency.Open(jopt)
}

// startPolicyWatch polls the policy file every cfg.PolicyPoll (when there
// is a file and polling is on) until Close.
func (s *Service) startPolicyWatch() {
	poll := cmp.Or(s.cfg.PolicyPoll, DefaultPolicyPoll)
	if s.cfg.PolicyFile == "" || poll <= 0 {
		close(s.done)
		return
	}
	go func() {
		defer close(s.done)
		s.watchPolicy(poll, s.stop)
	}()
}

// Tools returns the wing's tool set (the stdio mode serves it directly).
func (s *Service) Tools() *tools.Set { return s.tools }

// Close stops watching the policy file, closes the idempotency journal and
// stops the store's background work, writing _index.md if it is behind and
// saving the index snapshot.
func (s *Service) Close() error {
	s.closing.Do(func() { close(s.stop) })
	<-s.done
	s.stopRemote()
	return errors.Join(s.journal.Close(), s.store.Close())
}

// Skipped lists the files of the wing that are not loaded, with the reason.
func (s *Service) Skipped() []store.Skipped { return s.store.Skipped() }

// SkippedFiles returns how many files of the given kind (store.SkipKinds)
// the wing does not load.
func (s *Service) SkippedFiles(kind string) int { return s.store.SkippedCount(kind) }

// WritesStopped says why the wing refuses writes while it serves reads:
// its history's committer stopped on a change it can never commit
// (history.Stuck: the path, the error and the fix), or "" while writes
// are accepted.
func (s *Service) WritesStopped() string {
	if h := s.store.History(); h != nil {
		if st := h.Stuck(); st != nil {
			return st.String()
		}
	}
	return ""
}

// ListTools answers the tool descriptors, unparsed.
func (s *Service) ListTools(context.Context) (*proto.ListToolsResponse, error) {
	return &proto.ListToolsResponse{Tools: s.tools.Descriptors(), Prompts: s.tools.PromptDescriptors()}, nil
}

// Call verifies the shard token, evaluates the policy in force for the
// token's identity (authorize), and runs the tool as the token's email
// with the capabilities both grant; the tool set refuses a call whose
// tool needs more (a forbidden tool error, like every refusal of a tool).
func (s *Service) Call(ctx context.Context, req *proto.CallRequest) (*proto.CallResponse, error) {
	if name, ok := strings.CutPrefix(req.Tool, proto.PromptCall); ok {
		return s.getPrompt(ctx, req, name)
	}
	t, ok := s.tools.Lookup(req.Tool)
	if !ok {
		return nil, &proto.Error{Code: proto.CodeUnknownTool, Message: fmt.Sprintf("wing %q has no tool %q", s.cfg.Wing, req.Tool)}
	}
	claims, caps, granted, err := s.authorize(req.Token, req.RequestID, req.Tool, t.Spec.Capability())
	if err != nil {
		return nil, err
	}
	ctx, span := s.workSpan(ctx, "store", req.Tool, req.Tool)
	result, isErr := s.tools.Run(ctx, tools.Caller{Email: claims.Email, Caps: caps, IdempotencyKey: req.IdempotencyKey}, t, granted, req.Args)
	endWork(span, len(result), isErr, nil)
	return &proto.CallResponse{Result: result, IsError: isErr}, nil
}

// getPrompt answers a prompts/get (proto.PromptCall) as Call answers a
// tool call: the token and the policy in force, then the prompt's own
// capability and arguments (tools.Set.GetPrompt).
func (s *Service) getPrompt(ctx context.Context, req *proto.CallRequest, name string) (*proto.CallResponse, error) {
	p, ok := s.tools.LookupPrompt(name)
	if !ok {
		return nil, &proto.Error{Code: proto.CodeUnknownTool, Message: fmt.Sprintf("wing %q has no prompt %q", s.cfg.Wing, name)}
	}
	claims, caps, granted, err := s.authorize(req.Token, req.RequestID, req.Tool, p.Capability())
	if err != nil {
		return nil, err
	}
	result, isErr := s.tools.RunPrompt(ctx, tools.Caller{Email: claims.Email, Caps: caps}, p, granted, req.Args)
	return &proto.CallResponse{Result: result, IsError: isErr}, nil
}

// authorize verifies a shard token and returns its claims, the
// capabilities the call has, and granted: the call's one capability check,
// whether those include needs (the tool set answers a call not granted
// with its forbidden error). The capabilities are those of the token
// intersected with those the policy in force grants the token's email and
// groups, so a policy change is enforced from the next call, not when
// tokens expire. When the policy grants other capabilities than the token
// records and the call needs one it lacks, the answer is unauthenticated
// ("mint again"): the gateway drops the token and mints one under the
// current policy, which either grants the call or refuses it.
func (s *Service) authorize(token, requestID, what string, needs brain.Caps) (claims auth.ShardClaims, caps brain.Caps, granted bool, err error) {
	claims, err = s.verifier.Verify(token)
	switch {
	case errors.Is(err, auth.ErrWrongWing):
		return claims, 0, false, &proto.Error{Code: proto.CodeForbidden, Message: fmt.Sprintf("this shard serves wing %q; the token is for another wing", s.cfg.Wing)}
	case err != nil:
		return claims, 0, false, &proto.Error{Code: proto.CodeUnauthenticated, Message: "shard token rejected (" + err.Error() + "); mint a new one"}
	}
	current := s.policy.current().compiled.Caps(claims.Email, claims.Groups)
	caps = claims.Caps & current
	granted = caps.Has(needs)
	if !granted && current != claims.Caps {
		s.metrics.staleGrants.Inc()
		s.log.Info("call refused: the policy changed since the token was minted", "email", claims.Email, "request_id", requestID,
			"tool", what, "token_caps", claims.Caps.String(), "policy_caps", current.String())
		return claims, 0, false, &proto.Error{Code: proto.CodeUnauthenticated, Message: fmt.Sprintf("the policy of wing %q changed since this token was minted (it granted %s, the policy now grants %s); mint a new one",
			s.cfg.Wing, claims.Caps, current)}
	}
	return claims, caps, granted, nil
}

// searchStep runs a step of a cross-wing search for the token's holder,
// who must read the wing (refused as a tool call would be): serve answers
// it within a work span of kind, which counts what the answer holds.
func searchStep[R any](s *Service, ctx context.Context, token, requestID, kind, step, tool string,
	serve func(context.Context) (*R, error), count func(*R) int) (*R, error) {
	claims, _, granted, err := s.authorize(token, requestID, search.Tool+" "+step, brain.CapRead)
	if err != nil {
		return nil, err
	}
	if !granted {
		return nil, &proto.Error{Code: proto.CodeForbidden, Message: fmt.Sprintf("%s cannot read wing %q", claims.Email, s.cfg.Wing)}
	}
	ctx, span := s.workSpan(ctx, kind, step, tool)
	resp, err := serve(ctx)
	if span.IsRecording() && resp != nil {
		span.SetAttributes(tracing.KeyCount.Int(count(resp)))
	}
	endWork(span, 0, false, err)
	return resp, err
}

// Stats answers the statistics of a query's terms in this wing, and the
// index generation they are of.
func (s *Service) Stats(ctx context.Context, req *proto.StatsRequest) (*proto.StatsResponse, error) {
	_, span := s.workSpan(ctx, "index", "stats", searchStats)
	resp := search.ServeStats(s.store, &req.StatsRequest)
	endWork(span, 0, false, nil)
	return &proto.StatsResponse{StatsResponse: *resp}, nil
}

// Rank answers the rank step of a cross-wing search for the token's holder.
func (s *Service) Rank(ctx context.Context, req *proto.RankRequest) (*proto.RankResponse, error) {
	resp, err := searchStep(s, ctx, req.Token, req.RequestID, "index", "rank", searchRank, func(ctx context.Context) (*search.RankResponse, error) {
		return search.ServeRank(ctx, s.store, s.tools.Limits().Search(), &req.RankRequest)
	}, func(r *search.RankResponse) int { return len(r.Ranked) })
	if err != nil {
		return nil, err
	}
	return &proto.RankResponse{RankResponse: *resp}, nil
}

// Fetch answers the fetch step of a cross-wing search for the token's
// holder.
func (s *Service) Fetch(ctx context.Context, req *proto.FetchRequest) (*proto.FetchResponse, error) {
	resp, err := searchStep(s, ctx, req.Token, req.RequestID, "store", "fetch", searchFetch, func(ctx context.Context) (*search.FetchResponse, error) {
		return search.ServeFetch(ctx, s.store, &req.FetchRequest)
	}, func(r *search.FetchResponse) int { return len(r.Hits) })
	if err != nil {
		return nil, err
	}
	return &proto.FetchResponse{FetchResponse: *resp}, nil
}

// Mint evaluates the wing policy for the identity the gateway vouches for and
// signs a token with the capabilities it grants. proto only lets gateways ask.
//
// Every refused mint is logged with the reason and the peer certificate's
// role and common name (refusals of peers that are not gateways happen in
// proto, before this handler, and are logged there).
func (s *Service) Mint(_ context.Context, peer proto.Peer, req *proto.MintRequest) (*proto.MintResponse, error) {
	refused := func(outcome, reason, email string) {
		s.metrics.mints.WithLabelValues(outcome).Inc()
		s.log.Warn("mint refused", "reason", reason, "email", email, "request_id", req.RequestID,
			"peer_role", peer.Role, "peer_cn", peer.CommonName, "groups", len(req.Groups))
	}
	email, err := auth.CanonicalEmail(req.Email)
	if err != nil {
		refused("bad_request", "not an acceptable email: "+err.Error(), req.Email)
		return nil, &proto.Error{Code: proto.CodeBadRequest, Message: "mint needs an acceptable email address: " + err.Error()}
	}
	pol := s.policy.current()
	caps, groups := pol.compiled.Grant(email, req.Groups)
	if caps == 0 {
		refused("no_access", "the wing's policy grants this email and these groups nothing", email)
		return nil, &proto.Error{Code: proto.CodeForbidden, Message: fmt.Sprintf("%s has no access to wing %q", email, s.cfg.Wing)}
	}
	tok, exp, err := s.minter.MintGroups(email, caps, groups, req.NotAfter)
	if err != nil {
		refused("bad_request", err.Error(), email)
		return nil, &proto.Error{Code: proto.CodeBadRequest, Message: err.Error()}
	}
	s.metrics.mints.WithLabelValues("ok").Inc()
	s.log.Info("minted", "email", email, "request_id", req.RequestID, "caps", caps.String(), "groups", groups, "expires", exp,
		"peer_cn", peer.CommonName, "policy_sha256", pol.sha256)
	return &proto.MintResponse{Token: tok, Caps: caps.Strings(), Expiry: exp}, nil
}

// Health reports the wing and its size.
func (s *Service) Health(context.Context) (*proto.HealthResponse, error) {
	return &proto.HealthResponse{Wing: s.cfg.Wing, Ready: true, Notes: int64(s.store.Len()), Version: s.cfg.Version}, nil
}
