package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/gateway/edge"
	"github.com/brainstem/brainstem/gateway/route"
	"github.com/brainstem/brainstem/proto"
)

// TestClassify: the one mapping from proto codes, proto sentinels and
// context errors to tool error codes and sentinels.
func TestClassify(t *testing.T) {
	tests := []struct {
		err      error
		code     brain.Code
		sentinel error
	}{
		{&proto.Error{Code: proto.CodeForbidden, Message: "m"}, brain.CodeForbidden, edge.ErrForbidden},
		{&proto.Error{Code: proto.CodeBadRequest}, brain.CodeInvalidArgument, edge.ErrInvalidArgument},
		{&proto.Error{Code: proto.CodeTooLarge}, brain.CodeTooLarge, nil},
		{&proto.Error{Code: proto.CodeUnknownTool}, brain.CodeUnknownTool, nil},
		{&proto.Error{Code: proto.CodeUnavailable}, brain.CodeUnavailable, edge.ErrUnavailable},
		{&proto.Error{Code: proto.CodeDeadline}, brain.CodeTimeout, edge.ErrTimeout},
		{&proto.Error{Code: proto.CodeCanceled}, brain.CodeCanceled, nil},
		{&proto.Error{Code: proto.CodeUnauthenticated}, brain.CodeUnavailable, edge.ErrTokenRejected},
		{&proto.Error{Code: proto.CodeVersion}, brain.CodeUnavailable, edge.ErrUnavailable},
		{&proto.Error{Code: proto.CodeWrongRole, Message: "only gateways may mint"}, brain.CodeUnavailable, edge.ErrMintRefused},
		{fmt.Errorf("%w: call: reset", proto.ErrConnectionLost), brain.CodeUnavailable, edge.ErrUnavailable},
		{&proto.Error{Code: proto.CodeInternal}, brain.CodeInternal, nil},
		{fmt.Errorf("proto: call: %w", context.DeadlineExceeded), brain.CodeTimeout, edge.ErrTimeout},
		{fmt.Errorf("x: %w", context.Canceled), brain.CodeCanceled, nil},
		{fmt.Errorf("%w: dial: refused", proto.ErrUnavailable), brain.CodeUnavailable, edge.ErrUnavailable},
		{proto.ErrTooLarge, brain.CodeTooLarge, nil},
		{errors.New("boom"), brain.CodeInternal, nil},
		{edge.NewError(brain.CodeUnknownWing, edge.ErrUnknownWing, "x"), brain.CodeUnknownWing, edge.ErrUnknownWing},
	}
	for _, tc := range tests {
		e := edge.Classify(tc.err, "payments")
		if e.Code != tc.code || e.Message == "" {
			t.Errorf("%v → %+v, want %s", tc.err, e, tc.code)
		}
		if tc.sentinel != nil && !errors.Is(e, tc.sentinel) {
			t.Errorf("%v → %v does not wrap %v", tc.err, e, tc.sentinel)
		}
	}
	if edge.Classify(nil, "") != nil {
		t.Fatal("nil error classified")
	}
	// A deadline with no connection is an unreachable shard.
	if e := route.ClassifyShard(context.DeadlineExceeded, &route.Wing{Name: "w", Client: disconnected{}}); e.Code != brain.CodeUnavailable {
		t.Fatalf("deadline while disconnected: %+v", e)
	}
	if e := route.ClassifyShard(context.DeadlineExceeded, &route.Wing{Name: "w", Client: &fakeMintClient{}}); e.Code != brain.CodeTimeout {
		t.Fatalf("deadline while connected: %+v", e)
	}
	// A lost answer: a read is unavailable; a write is outcome_unknown,
	// quoting its key, unless the second sending was refused for the
	// request's bytes (the first was refused alike); a request that never
	// left is unavailable either way; a write that timed out names its key.
	w := &route.Wing{Name: "payments", Client: &fakeMintClient{}}
	lost := fmt.Errorf("%w: call: stateless reset", proto.ErrConnectionLost)
	down := fmt.Errorf("%w: dial", proto.ErrUnavailable)
	for _, tc := range []struct {
		name      string
		err, lost error
		write     bool
		key       string
		code      brain.Code
		inMessage string
	}{
		{"write lost, no retry", lost, nil, true, "", brain.CodeOutcomeUnknown, "Read the note"},
		{"write lost, no retry, keyed", lost, nil, true, "gw-1f", brain.CodeOutcomeUnknown, `"idempotency_key": "gw-1f"`},
		{"write lost, retry unreachable", down, lost, true, "agent.k", brain.CodeOutcomeUnknown, `"idempotency_key": "agent.k"`},
		{"write lost twice", lost, lost, true, "gw-2", brain.CodeOutcomeUnknown, "did not settle it"},
		{"write lost, retry timed out", context.DeadlineExceeded, lost, true, "gw-3", brain.CodeOutcomeUnknown, `"gw-3"`},
		{"write lost, retry refused re-mints", &edge.Error{Code: brain.CodeUnavailable, Err: edge.ErrTokenRejected, Message: "rejected"}, lost, true, "gw-4", brain.CodeOutcomeUnknown, `"gw-4"`},
		{"write lost, retry draining", &proto.Error{Code: proto.CodeUnavailable, Message: "draining"}, lost, true, "gw-5", brain.CodeOutcomeUnknown, "draining"},
		{"write lost, retry malformed", &proto.Error{Code: proto.CodeBadRequest, Message: "bad"}, lost, true, "gw-6", brain.CodeInvalidArgument, "bad"},
		{"read lost", lost, nil, false, "", brain.CodeUnavailable, "payments"},
		{"read lost twice", lost, lost, false, "", brain.CodeUnavailable, "payments"},
		{"write never left", down, nil, true, "gw-7", brain.CodeUnavailable, "unreachable"},
		{"write timed out", context.DeadlineExceeded, nil, true, "gw-8", brain.CodeTimeout, `"idempotency_key": "gw-8"`},
		{"read timed out", context.DeadlineExceeded, nil, false, "", brain.CodeTimeout, "call_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := route.ClassifyCall(tc.err, tc.lost, w, route.Op{What: "brain_write", Key: tc.key, Write: tc.write})
			if e.Code != tc.code || !strings.Contains(e.Message, tc.inMessage) {
				t.Fatalf("= %s %q, want %s containing %q", e.Code, e.Message, tc.code, tc.inMessage)
			}
			if tc.code == brain.CodeOutcomeUnknown && (!errors.Is(e, edge.ErrOutcomeUnknown) || !errors.Is(e, proto.ErrConnectionLost)) {
				t.Errorf("outcome_unknown does not wrap its sentinel and cause: %v", e)
			}
		})
	}
}

type disconnected struct{ route.ShardClient }

func (disconnected) Connected() bool { return false }

func (disconnected) State() proto.State { return proto.State{} }

// TestRefusalAndAuthMapping: HTTP statuses for refusals and SSO errors.
func TestRefusalAndAuthMapping(t *testing.T) {
	for err, st := range map[error]int{
		edge.ErrOriginNotAllowed: 403, edge.ErrProtocolVersion: 400, edge.ErrBodyTooLarge: 413, edge.ErrBadBody: 400,
		edge.ErrRateLimited: 429, edge.ErrTooManyAuthFailed: 429, errors.New("x"): 500,
	} {
		if got := edge.RefusalOf(err).Status; got != st {
			t.Errorf("%v → %d, want %d", err, got, st)
		}
	}
}
