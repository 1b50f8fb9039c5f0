package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/injection"
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
	// not acknowledged (Promotion.AcknowledgeFlags).
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

// flaggedErr refuses to promote the inbox note rel, which the injection
// audit flags: the message names each rule and why, and the argument that
// promotes it anyway.
func flaggedErr(rel string, fs []injection.Finding) error {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%s)", f.Rule, f.Why)
	}
	return refuse(ErrFlagged, "%s is flagged by the injection audit: %s. Read the note, and promote it only if it informs rather than steers: pass acknowledge_flags: true; the inbox note was left untouched",
		rel, b.String())
}
