package route

import (
	"context"
	"errors"
	"sync"

	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/internal/workers"
	"github.com/brainstem/brainstem/proto"
	"github.com/brainstem/brainstem/search"
)

// SearchWing is one wing as a cross-wing search asks it (search.Wing):
// over proto, with the caller's shard token (Sender.Do); a failure is
// described as the search's (Late).
type SearchWing struct {
	Sender *Sender
	Caller Caller
	Wing   *Wing
	Late   func(w *Wing, err error) *edge.Error
}

// Name is the wing's name.
func (s SearchWing) Name() string { return s.Wing.Name }

// Left names the wing left out for err (Unavailable); not at all when the
// caller lost its grant there meanwhile (ErrWingHidden).
func (s SearchWing) Left(err error) (toolspec.UnavailableWing, bool) {
	if errors.Is(err, ErrWingHidden) {
		return toolspec.UnavailableWing{}, false
	}
	return Unavailable(err, s.Wing), true
}

// Unavailable names a wing left out of an answer for err, as edge.Classify
// tells it.
func Unavailable(err error, w *Wing) toolspec.UnavailableWing {
	e := edge.Classify(err, w.Name)
	return toolspec.UnavailableWing{Wing: w.Name, Code: e.Code, Error: e.Message}
}

// Stats asks the wing for its statistics of the terms (no token: they
// disclose no note).
func (s SearchWing) Stats(ctx context.Context, req *search.StatsRequest) (*search.StatsResponse, error) {
	w := s.Wing
	ctx, span := ShardSpan(ctx, search.Tool+" stats", w)
	resp, err := w.Client.Stats(ctx, &proto.StatsRequest{RequestID: s.Caller.RequestID, StatsRequest: *req})
	EndShardSpan(span, err)
	if err != nil {
		return nil, s.Late(w, err)
	}
	w.MarkReached()
	return &resp.StatsResponse, nil
}

// Rank asks the wing to rank.
func (s SearchWing) Rank(ctx context.Context, req *search.RankRequest) (*search.RankResponse, error) {
	preq := &proto.RankRequest{RequestID: s.Caller.RequestID, RankRequest: *req}
	return sendStep(s, ctx, "rank", &preq.Token, func(ctx context.Context) (*proto.RankResponse, error) { return s.Wing.Client.Rank(ctx, preq) },
		func(r *proto.RankResponse) *search.RankResponse { return &r.RankResponse })
}

// Fetch asks the wing to render the hits of some keys.
func (s SearchWing) Fetch(ctx context.Context, req *search.FetchRequest) (*search.FetchResponse, error) {
	preq := &proto.FetchRequest{RequestID: s.Caller.RequestID, FetchRequest: *req}
	return sendStep(s, ctx, "fetch", &preq.Token, func(ctx context.Context) (*proto.FetchResponse, error) { return s.Wing.Client.Fetch(ctx, preq) },
		func(r *proto.FetchResponse) *search.FetchResponse { return &r.FetchResponse })
}

// sendStep sends one step of the search (rank or fetch) to the wing with
// the caller's shard token (Sender.Do), which it puts in *token, and
// returns the step's answer within the wing's (inner).
func sendStep[P, R any](s SearchWing, ctx context.Context, step string, token *string, call func(context.Context) (*P, error), inner func(*P) *R) (*R, error) {
	var resp *P
	err := s.Sender.Do(ctx, s.Caller, s.Wing, Op{What: search.Tool + " " + step, Send: func(ctx context.Context, t string) (err error) {
		*token = t
		resp, err = call(ctx)
		return err
	}})
	if err != nil {
		return nil, s.Late(s.Wing, err)
	}
	return inner(resp), nil
}

// ErrNotAsked marks a wing a step over the wings (EachWing) does not ask.
var ErrNotAsked = errors.New("gateway: wing not asked")

// EachWing runs fn for every wing whose errs entry is nil, at most limit
// at a time, and returns when all have. They run on pool's kept goroutines
// (internal/workers), the last one on the caller's own: a fresh goroutine
// would grow its stack on every exchange.
func EachWing(pool *workers.Pool, limit int, wings []*Wing, errs []error, fn func(i int, w *Wing)) {
	last := -1
	for i := range wings {
		if errs[i] == nil {
			last = i
		}
	}
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, w := range wings {
		if errs[i] != nil {
			continue
		}
		slots <- struct{}{}
		if i == last {
			fn(i, w)
			<-slots
			break
		}
		wg.Add(1)
		pool.Go(func() {
			defer wg.Done()
			defer func() { <-slots }()
			fn(i, w)
		})
	}
	wg.Wait()
}
