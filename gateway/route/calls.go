package route

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/internal/pause"
	"github.com/brainstem/brainstem/proto"
)

// maxFreshTries is how many freshly minted tokens a wing may reject before
// the call fails (with exponential backoff from shards.retry_base between).
const maxFreshTries = 3

// ErrWingHidden marks a failure the caller must not learn about: the wing
// refused the caller, or it could not be asked and the caller holds no
// grant for it. Such a call is answered as for a wing that does not exist.
var ErrWingHidden = errors.New("gateway: the caller cannot be told about this wing")

// Caller is who a request to a shard is made for.
type Caller struct {
	ID        auth.Identity
	Key       Key // the grant cache key of ID: email and group set
	RequestID string
	Base      *slog.Logger // the gateway's logger (Logger adds the caller)
}

// Logger is Base with the caller's email and request id. Built on use:
// most calls log nothing, and a JSON handler's With formats its attributes
// eagerly.
func (c Caller) Logger() *slog.Logger {
	return c.Base.With("email", c.ID.Email, "request_id", c.RequestID)
}

// Sender sends requests to wings with the caller's shard token, minting
// through Grants; the metrics it counts are function fields (the gateway's).
type Sender struct {
	Grants      *GrantCache
	CallTimeout time.Duration // shards.call_timeout
	RetryBase   time.Duration // shards.retry_base
	// LostRetry counts a request sent again after a lost connection;
	// TokenRejected a token a wing rejected ("fresh" or "cached").
	LostRetry     func(wing string, write bool)
	TokenRejected func(wing, kind string)
}

// Op is one request to a wing made with the caller's shard token: a
// tool call, or a step of a cross-wing search.
type Op struct {
	What  string // the tool (or search step), for logs and errors
	Write bool
	Key   string // the idempotency key a write carries
	Send  func(ctx context.Context, token string) error
}

// Call sends one tool call to a wing with the caller's shard token (Do)
// and returns the shard's answer unchanged. write is whether the tool
// changes the wing (Spec.Writes), looked up once by the caller.
func (s *Sender) Call(ctx context.Context, c Caller, w *Wing, req *proto.CallRequest, write bool) (*proto.CallResponse, error) {
	var resp *proto.CallResponse
	err := s.Do(ctx, c, w, Op{What: req.Tool, Write: write, Key: req.IdempotencyKey,
		Send: func(ctx context.Context, token string) (err error) {
			req.Token = token
			resp, err = w.Client.Call(ctx, req)
			return err
		}})
	return resp, err
}

// Do runs op against a wing with the caller's shard token: minting
// on a miss, and on CodeUnauthenticated dropping the token and re-minting
// (once for a cached token, then with bounded backoff for fresh ones).
// When the connection dies with the request in flight
// (proto.ErrConnectionLost) it is sent once more, after the reconnection
// and within ctx's deadline: a read always, and a write when it carries an
// idempotency key (every write the gateway routes does): the shard answers
// a key it has seen with its first answer, so the write is applied at most
// once. A write whose answer was lost and whose fate the second sending did
// not settle is outcome_unknown, quoting the key the agent can retry with
// (ClassifyCall). A failure to obtain a first grant that the caller must
// not learn about wraps ErrWingHidden.
func (s *Sender) Do(ctx context.Context, c Caller, w *Wing, op Op) (err error) {
	ctx, span := ShardSpan(ctx, op.What, w)
	defer func() { EndShardSpan(span, err) }()
	ctx, cancel := context.WithTimeout(ctx, s.CallTimeout)
	defer cancel()
	gr, fresh, err := s.Grants.GetKey(ctx, c.ID, c.Key, w, c.RequestID)
	if err != nil {
		if !s.Grants.Disclosable(c.Key, w, err) { // least disclosure
			err = errors.Join(ErrWingHidden, err)
		}
		return err
	}
	lost, err := s.send(ctx, c, w, op, gr, fresh)
	if err == nil {
		return nil
	}
	return ClassifyCall(err, lost, w, op) // the one classification of the call's failure
}

// send is Do's retry loop: it sends op with gr's token, re-minting after a
// rejected token and sending once more after a lost answer, and returns
// how the call finally failed, unclassified, and the first lost answer
// (nil if none).
func (s *Sender) send(ctx context.Context, c Caller, w *Wing, op Op, gr Grant, fresh bool) (lost, err error) {
	freshRejected := 0
	for {
		err := op.Send(ctx, gr.Token)
		if err == nil {
			w.MarkReached()
			return lost, nil
		}
		if proto.CodeOf(err) == 0 {
			if errors.Is(err, proto.ErrConnectionLost) && lost == nil && ctx.Err() == nil && (!op.Write || op.Key != "") {
				lost = err
				s.LostRetry(w.Name, op.Write)
				c.Logger().Info("connection lost with a call in flight; sending it again", "wing", w.Name, "tool", op.What, "write", op.Write, "err", err)
				continue
			}
			return lost, err // unreachable, lost, timeout, cancelled
		}
		w.MarkReached()
		if proto.CodeOf(err) != proto.CodeUnauthenticated {
			return lost, err
		}
		s.Grants.Invalidate(c.Key, w, gr.Token)
		if fresh {
			freshRejected++
			s.TokenRejected(w.Name, "fresh")
			if freshRejected >= maxFreshTries {
				c.Logger().Warn("wing keeps rejecting freshly minted tokens", "wing", w.Name, "tries", freshRejected, "err", err)
				return lost, edge.NewError(brain.CodeUnavailable, errors.Join(edge.ErrTokenRejected, err),
					"wing %q rejected %d freshly minted tokens (its signing key may be rotating); retry in a minute or ask an operator to check the shard", w.Name, freshRejected)
			}
			if err := pause.For(ctx, s.RetryBase<<(freshRejected-1)); err != nil {
				return lost, err
			}
		} else {
			s.TokenRejected(w.Name, "cached")
			c.Logger().Info("wing rejected a cached token; re-minting", "wing", w.Name, "err", err)
		}
		if gr, _, err = s.Grants.GetKey(ctx, c.ID, c.Key, w, c.RequestID); err != nil {
			return lost, err
		}
		fresh = true
	}
}

// ClassifyCall is edge.ClassifyCall for op, sent to w.
func ClassifyCall(err, lost error, w *Wing, op Op) *edge.Error {
	return edge.ClassifyCall(err, lost, w.Name, w.Client.Connected, edge.Call{What: op.What, Write: op.Write, Key: op.Key})
}

// Spec is what the gateway knows of a shard tool, from the spec its
// descriptor carries, read from the catalog once per call and passed down.
type Spec struct {
	Meta       toolspec.Meta // capability, routing and fan-out
	Known      bool          // some wing advertises the tool
	Structured bool          // it declares an outputSchema
}

// Writes reports whether a call of the tool changes a wing: its spec needs
// write or curate. A tool the gateway does not know counts as a write (it
// carries no idempotency key, so a lost answer is never sent again).
func (s Spec) Writes() bool { return !s.Known || s.Meta.Writes() }

// Spec looks a shard tool up in the catalog (the first wing in config
// order that advertises it); Known is false for a tool no wing advertises
// and in a nil catalog (none registered yet).
func (c *Catalog) Spec(tool string) Spec {
	if c != nil {
		if e, ok := c.By[tool]; ok {
			return Spec{Meta: e.Desc.Spec, Known: true, Structured: len(e.Desc.OutputSchema) > 0}
		}
	}
	return Spec{}
}

// IdempotencyKey is the key the gateway sends with a write call: the
// agent's idempotency_key when it gave one, else a fresh random key, so
// that every retry of the call (a re-mint, a reconnection) is applied at
// most once.
func IdempotencyKey(agent string) string {
	if agent != "" {
		return agent
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("gateway: crypto/rand: " + err.Error()) // not recoverable
	}
	return "gw-" + hex.EncodeToString(b[:])
}
