// Package refusal holds the store's refusals: the sentinels every failure
// the store (and its subpackages) returns for a caller's mistake wraps,
// and the code a caller receives for each. A refusal is a *brain.Error
// whose message is safe to show: brain-relative paths only, no tool names.
package refusal

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
	// ErrFlagged: a promotion of an inbox note the injection audit flags,
	// not acknowledged (store.Promotion.AcknowledgeFlags).
	ErrFlagged = errors.New("store: flagged by the injection audit")
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
	ErrFlagged:   brain.CodeConflict,
}

// Refuse returns a caller's mistake: a *brain.Error with the code of
// sentinel and the formatted message, which must be safe to show
// (brain-relative paths only, no tool names), wrapping sentinel.
func Refuse(sentinel error, format string, args ...any) error {
	code, ok := codes[sentinel]
	if !ok {
		panic("store: refuse with an unknown sentinel: " + sentinel.Error()) // a programming error
	}
	return brain.Wrap(sentinel, code, format, args...)
}

// Invalid marks err, a refusal of the naming rules (a *brain.Error from
// package brain or layout), as ErrInvalid; its message is shown unchanged.
func Invalid(err error) error { return fmt.Errorf("store: %w: %w", ErrInvalid, err) }
