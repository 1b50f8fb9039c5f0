package store

import (
	"errors"
	"fmt"

	"github.com/brainstem/brainstem/brain"
)

// The store's error sentinels. Every failure the store returns for a
// caller's mistake is a *brain.Error wrapping exactly one of them; anything
// else is an internal failure.
var (
	ErrNotFound  = errors.New("store: not found")
	ErrExists    = errors.New("store: already exists")
	ErrConflict  = errors.New("store: conflict")
	ErrInvalid   = errors.New("store: invalid argument")
	ErrTooLarge  = errors.New("store: too large")
	ErrForbidden = errors.New("store: forbidden")
	ErrClosed    = errors.New("store: closed")
	ErrMoved     = errors.New("store: moved")
)

// codes gives each sentinel the code a caller receives.
var codes = map[error]brain.Code{
	ErrNotFound:  brain.CodeNotFound,
	ErrExists:    brain.CodeAlreadyExists,
	ErrConflict:  brain.CodeConflict,
	ErrInvalid:   brain.CodeInvalidArgument,
	ErrTooLarge:  brain.CodeTooLarge,
	ErrForbidden: brain.CodeForbidden,
	ErrClosed:    brain.CodeInternal,
	ErrMoved:     brain.CodeMoved,
}

// errClosed is every call's answer once the store is closed.
var errClosed = brain.Wrap(ErrClosed, brain.CodeInternal, "the shard is shutting down; retry in a moment")

// refuse returns a caller's mistake found here: a *brain.Error with the
// code of sentinel and the formatted message, which must be safe to show
// (brain-relative paths only, no tool names), wrapping sentinel.
func refuse(sentinel error, format string, args ...any) error {
	code, ok := codes[sentinel]
	if !ok {
		panic("store: refuse with an unknown sentinel: " + sentinel.Error()) // a programming error
	}
	return brain.Wrap(sentinel, code, format, args...)
}

// invalid marks err, a refusal of the naming rules (a *brain.Error from
// package brain or layout), as the store's ErrInvalid; its message is
// shown unchanged.
func invalid(err error) error { return fmt.Errorf("store: %w: %w", ErrInvalid, err) }

// about puts what a refusal is about in front of its message ("<what>:
// <message>"), keeping its code and cause; an error that is not a
// refusal is wrapped for the log.
func about(what string, err error) error {
	if e, ok := brain.As(err); ok {
		return brain.Wrap(err, e.Code, "%s: %s", what, e.Message)
	}
	return fmt.Errorf("store: %s: %w", what, err)
}
