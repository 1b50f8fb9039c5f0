package proto

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/brainstem/brainstem/internal/codec"
)

// Code is a protocol error code. Codes are stable: new ones may be added,
// existing ones never change meaning (see docs/protocol.md).
type Code uint16

// The error codes.
const (
	CodeInternal        Code = 1  // the shard failed; retrying may help
	CodeBadRequest      Code = 2  // malformed message or arguments
	CodeUnauthenticated Code = 3  // shard token missing, invalid, expired or signed by an old key: re-mint
	CodeForbidden       Code = 4  // the token lacks the capability, or the wing differs
	CodeTooLarge        Code = 5  // a message exceeded the size limit
	CodeUnknownMethod   Code = 6  // the request type is not known to this shard
	CodeUnknownTool     Code = 7  // no tool of that name
	CodeUnavailable     Code = 8  // the shard is draining or not ready
	CodeDeadline        Code = 9  // the request's deadline passed
	CodeCanceled        Code = 10 // the caller cancelled
	CodeVersion         Code = 11 // unsupported protocol version
	CodeWrongRole       Code = 12 // the client's certificate role may not make this request (only gateways may mint)
)

var codeNames = map[Code]string{
	CodeInternal:        "internal",
	CodeBadRequest:      "bad_request",
	CodeUnauthenticated: "unauthenticated",
	CodeForbidden:       "forbidden",
	CodeTooLarge:        "too_large",
	CodeUnknownMethod:   "unknown_method",
	CodeUnknownTool:     "unknown_tool",
	CodeUnavailable:     "unavailable",
	CodeDeadline:        "deadline_exceeded",
	CodeCanceled:        "canceled",
	CodeVersion:         "unsupported_version",
	CodeWrongRole:       "wrong_role",
}

func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("code_%d", uint16(c))
}

// Error is an error the peer answered with.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return "proto: " + e.Code.String() + ": " + e.Message }

// Is makes errors.Is(err, &Error{Code: c}) match on the code alone.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

// ErrUnavailable wraps every failure to reach a shard before the request
// left: a dial or handshake that failed, a shard known to be down (the
// client fails fast while it redials in the background), a connection that
// died before the request was handed to it. The shard cannot have run such
// a request, so retrying it is always safe. Compare ErrConnectionLost.
var ErrUnavailable = errors.New("proto: shard unreachable")

// ErrConnectionLost is returned (wrapped, with the connection's cause) when
// a request was sent but the connection died, or the stream was reset,
// before the whole answer arrived. The shard may or may not have run the
// request: its fate is unknown, so a write must not be retried blindly. It
// is distinct from ErrUnavailable (errors.Is matches one or the other).
var ErrConnectionLost = errors.New("proto: connection lost with the request in flight")

// ErrTooLarge is returned when a message to send or receive exceeds the limit.
var ErrTooLarge = errors.New("proto: message too large")

// CodeOf returns the code of an *Error in err's chain, or 0.
func CodeOf(err error) Code {
	if pe, ok := errors.AsType[*Error](err); ok {
		return pe.Code
	}
	return 0
}

// The error frame: a big-endian uint16 code, then the message (cut to
// MaxErrorMessageBytes).

func (*Error) msgType() MsgType { return MsgError }

func (v *Error) appendBody(b []byte) ([]byte, error) {
	msg := v.Message
	msg = msg[:min(len(msg), MaxErrorMessageBytes)]
	b = binary.BigEndian.AppendUint16(b, uint16(v.Code))
	return codec.AppendString(b, msg), nil
}

func decodeError(p []byte) (*Error, error) {
	if len(p) < 2 {
		return nil, fmt.Errorf("%w: error frame of %d bytes", ErrMalformed, len(p))
	}
	d := codec.NewDecoder(p[2:])
	e := &Error{Code: Code(binary.BigEndian.Uint16(p)), Message: d.String("error message", MaxErrorMessageBytes)}
	return e, decoded(d.Err())
}
