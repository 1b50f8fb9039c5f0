package console

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
)

// Limits on every input the console reads. The tools check their own
// arguments again; these keep a request from carrying more than a tool
// would ever accept, and name what was wrong.
const (
	maxFormBytes   = 512 << 10 // a whole form: a body of brain_write's limit and the rest
	MaxQueryBytes  = 1024      // brain_query's query
	MaxTitleBytes  = 300       // brain_write's title
	MaxBodyBytes   = 262144    // brain_write's body
	MaxReasonBytes = 1024      // a restore's or an archive's reason
	MaxTags        = 32        // brain_write's tags
	MaxTagBytes    = 64        // one tag
	MaxCursorBytes = 512       // a page cursor, as the tools hand them out
	MaxKeyBytes    = brain.MaxIdempotencyKeyBytes
)

// Input errors: every refusal of an input wraps one of them, in an
// *InputError naming the field.
var (
	ErrTooLong  = errors.New("console: input too long")
	ErrRequired = errors.New("console: input required")
	ErrInvalid  = errors.New("console: input invalid")
)

// InputError is an input the console refused, with a message for the page.
type InputError struct {
	Field string
	Err   error
	Msg   string
}

func (e *InputError) Error() string { return "console: " + e.Field + ": " + e.Msg }
func (e *InputError) Unwrap() error { return e.Err }

func tooLong(field string, n, limit int) *InputError {
	return &InputError{field, ErrTooLong, fmt.Sprintf("%s is %d bytes; the limit is %d", field, n, limit)}
}

// text checks a free-text field: valid UTF-8, within limit bytes, and
// (oneLine) without line breaks or other control characters.
func text(field, v string, limit int, required, oneLine bool) (string, error) {
	if len(v) > limit {
		return "", tooLong(field, len(v), limit)
	}
	if !utf8.ValidString(v) {
		return "", &InputError{field, ErrInvalid, field + " is not valid UTF-8"}
	}
	if oneLine && auth.HasControlChar(v) {
		return "", &InputError{field, ErrInvalid, field + " must be one line without control characters"}
	}
	if required && strings.TrimSpace(v) == "" {
		return "", &InputError{field, ErrRequired, field + " is required"}
	}
	return v, nil
}

// name checks a name with its brain rule (wing, hall, slug, inbox name,
// version).
func name(field, v string, rule func(string) error) (string, error) {
	if err := rule(v); err != nil {
		msg := err.Error()
		if be, ok := brain.As(err); ok {
			msg = be.Message
		}
		return "", &InputError{field, errors.Join(ErrInvalid, err), msg}
	}
	return v, nil
}

// token checks an opaque token (a cursor, an idempotency key): printable
// ASCII without spaces, within limit bytes.
func token(field, v string, limit int) (string, error) {
	if len(v) > limit {
		return "", tooLong(field, len(v), limit)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", &InputError{field, ErrInvalid, field + " holds characters it never has"}
	}
	return v, nil
}

// tags splits a comma-separated list of tags.
func tags(v string) ([]string, error) {
	if _, err := text("tags", v, MaxTags*(MaxTagBytes+2), false, true); err != nil {
		return nil, err
	}
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if len(t) > MaxTagBytes {
			return nil, tooLong("tag", len(t), MaxTagBytes)
		}
		out = append(out, t)
	}
	if len(out) > MaxTags {
		return nil, &InputError{"tags", ErrTooLong, fmt.Sprintf("%d tags; the limit is %d", len(out), MaxTags)}
	}
	return out, nil
}
