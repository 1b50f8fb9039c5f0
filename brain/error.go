package brain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Error is a failure whoever made the call may be shown: a code and a
// message that is safe to show, built where the failure is known (as
// tailscale's vizerror does). Safe to show means the message names
// brain-relative paths only (never a host path), no secret and nothing of
// another caller, and says what to do. Any error that is not an *Error is
// internal: its text goes to the log, and the caller gets a generic
// message.
//
// Wrapping an *Error with fmt.Errorf("…: %w", err) adds context for logs
// only: As finds the *Error and its message is shown unchanged.
type Error struct {
	Code    Code
	Message string
	// Err is the cause, for errors.Is and logs; it is never shown. It may
	// be nil.
	Err error
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the formatted message (fmt.Sprintf; a cause
// goes in Err, see Wrap).
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error with the formatted message whose cause is err.
func Wrap(err error, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// As returns the first *Error in err's chain: the failure to show.
func As(err error) (*Error, bool) { return errors.AsType[*Error](err) }

// ErrorBody is the JSON document of a tool error result (MCP isError):
// {"error":{"code":"…","message":"…"}}, exactly these fields in this order.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the "error" object of an ErrorBody.
type ErrorDetail struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// EncodeError renders the tool error document as compact JSON without HTML
// escaping (the bytes agents receive).
func EncodeError(code Code, message string) []byte {
	b, err := Marshal(ErrorBody{ErrorDetail{code, message}})
	if err != nil {
		return []byte(`{"error":{"code":"internal","message":"unencodable error"}}`) // strings always encode
	}
	return b
}

// Marshal encodes v as the JSON agents receive: compact, without HTML
// escaping (a note's "<" stays "<"), without a trailing newline. The
// shard's tool results and error documents, and what the gateway composes
// itself, are encoded with it.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}

// DecodeError reads a tool error document; ok is false when b is not one
// with a non-empty code.
func DecodeError(b []byte) (code Code, message string, ok bool) {
	var body ErrorBody
	if json.Unmarshal(b, &body) != nil || body.Error.Code == "" {
		return "", "", false
	}
	return body.Error.Code, body.Error.Message, true
}
