package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/proto"
)

// This file is the ONE place where failures are mapped: proto codes, SSO
// verification errors and the gateway's own sentinels become either an HTTP
// status (for requests refused before mcp-go sees them) or a tool error code
// (for tool calls). Nothing else in the package decides a status or a code.

// The tool error codes the gateway answers with are the contract's
// (brain.Code*, listed with their meanings by brain.Codes): the same
// {"error":{"code","message"}} document with isError as a shard's.

// Sentinel errors. Every *Error wraps one of them, so callers can use
// errors.Is without caring about the message.
var (
	ErrUnknownWing       = errors.New("gateway: unknown wing")
	ErrForbidden         = errors.New("gateway: forbidden")
	ErrUnavailable       = errors.New("gateway: wing unavailable")
	ErrTimeout           = errors.New("gateway: shard timeout")
	ErrInvalidArgument   = errors.New("gateway: invalid argument")
	ErrRateLimited       = errors.New("gateway: rate limited")
	ErrTokenRejected     = errors.New("gateway: shard rejected freshly minted tokens")
	ErrBodyTooLarge      = errors.New("gateway: request body too large")
	ErrOriginNotAllowed  = errors.New("gateway: origin not allowed")
	ErrProtocolVersion   = errors.New("gateway: unsupported MCP protocol version")
	ErrNoIdentity        = errors.New("gateway: no verified identity in request context")
	ErrTooManyAuthFailed = errors.New("gateway: too many failed authentications from this address")
	ErrUnknownSession    = errors.New("gateway: unknown session")
	ErrBadRequestID      = errors.New("gateway: JSON-RPC id is neither a string nor a number")
	ErrOutcomeUnknown    = errors.New("gateway: the write's outcome is unknown")
	ErrMintRefused       = errors.New("gateway: the shard refuses this gateway's mints")
	// ErrResourceNotFound: resources/read of a note the caller cannot
	// read, for whatever reason (missing, moved, archived, in a wing that
	// does not admit them or does not exist): one answer for all.
	ErrResourceNotFound = errors.New("gateway: resource not found")
	// ErrBadCursor: a resources/list cursor the gateway did not issue.
	ErrBadCursor = errors.New("gateway: invalid cursor")
	// ErrBadParams: params of a resources or prompts request that are not
	// what the method takes.
	ErrBadParams = errors.New("gateway: invalid params")
	// ErrShardAnswer wraps a shard's refusal or malformed answer within a
	// cross-wing search (the wing is then listed as unavailable).
	ErrShardAnswer = errors.New("gateway: a wing's answer could not be used")
)

// Error is a gateway failure with a stable tool error code and a message a
// person can act on.
type Error struct {
	Code    brain.Code
	Message string
	Err     error // the sentinel or cause; may be nil
}

// Error returns "gateway: <code>: <message>".
func (e *Error) Error() string { return "gateway: " + string(e.Code) + ": " + e.Message }

// Unwrap returns the sentinel or cause.
func (e *Error) Unwrap() error { return e.Err }

func NewError(code brain.Code, sentinel error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: sentinel}
}

// Classify maps any failure of a call to one wing to an *Error. wing names
// the wing for the message ("" when not wing specific).
func Classify(err error, wing string) *Error {
	if err == nil {
		return nil
	}
	if ge, ok := errors.AsType[*Error](err); ok {
		return ge
	}
	if be, ok := brain.As(err); ok { // a refusal by the contract's rules (a tool's spec): safe to show
		return &Error{Code: be.Code, Message: be.Message, Err: err}
	}
	where := "the shard"
	if wing != "" {
		where = "wing " + strconv.Quote(wing)
	}
	if pe, ok := errors.AsType[*proto.Error](err); ok {
		switch pe.Code {
		case proto.CodeForbidden:
			return &Error{Code: brain.CodeForbidden, Message: where + " refused: " + pe.Message, Err: errors.Join(ErrForbidden, err)}
		case proto.CodeBadRequest:
			return &Error{Code: brain.CodeInvalidArgument, Message: where + " rejected the request: " + pe.Message, Err: errors.Join(ErrInvalidArgument, err)}
		case proto.CodeTooLarge:
			return &Error{Code: brain.CodeTooLarge, Message: where + ": " + pe.Message, Err: err}
		case proto.CodeUnknownTool, proto.CodeUnknownMethod:
			return &Error{Code: brain.CodeUnknownTool, Message: where + " does not know this tool (" + pe.Message + "); list the tools again", Err: err}
		case proto.CodeUnavailable:
			return &Error{Code: brain.CodeUnavailable, Message: where + " is not ready or is draining (" + pe.Message + "); retry shortly", Err: errors.Join(ErrUnavailable, err)}
		case proto.CodeDeadline:
			return &Error{Code: brain.CodeTimeout, Message: where + " did not finish in time: " + pe.Message, Err: errors.Join(ErrTimeout, err)}
		case proto.CodeCanceled:
			return &Error{Code: brain.CodeCanceled, Message: "the call was cancelled", Err: err}
		case proto.CodeUnauthenticated:
			return &Error{Code: brain.CodeUnavailable, Message: where + " rejected the gateway's token: " + pe.Message, Err: errors.Join(ErrTokenRejected, err)}
		case proto.CodeVersion:
			return &Error{Code: brain.CodeUnavailable, Message: where + " speaks another protocol version; upgrade the gateway or the shard", Err: errors.Join(ErrUnavailable, err)}
		case proto.CodeWrongRole:
			return &Error{Code: brain.CodeUnavailable, Message: where + " refuses this gateway (" + pe.Message + "); an operator must give the gateway a gateway-role certificate",
				Err: errors.Join(ErrUnavailable, ErrMintRefused, err)}
		default:
			return &Error{Code: brain.CodeInternal, Message: where + " failed: " + pe.Message, Err: err}
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: brain.CodeTimeout, Message: where + " did not answer within shards.call_timeout", Err: errors.Join(ErrTimeout, err)}
	case errors.Is(err, context.Canceled):
		return &Error{Code: brain.CodeCanceled, Message: "the call was cancelled", Err: err}
	case errors.Is(err, proto.ErrConnectionLost):
		return &Error{Code: brain.CodeUnavailable, Message: where + " was lost before it answered (the connection dropped); retry shortly", Err: errors.Join(ErrUnavailable, err)}
	case errors.Is(err, proto.ErrUnavailable):
		return &Error{Code: brain.CodeUnavailable, Message: where + " is unreachable; retry later or ask an operator to check the shard", Err: errors.Join(ErrUnavailable, err)}
	case errors.Is(err, proto.ErrTooLarge):
		return &Error{Code: brain.CodeTooLarge, Message: where + ": message exceeds the protocol size limit", Err: err}
	}
	return &Error{Code: brain.CodeInternal, Message: where + ": internal error", Err: err}
}

// ClassifyShard is Classify for a failure talking to one wing's shard: a
// deadline that passed while no connection to the shard existed
// (connected reports it) means the shard could not be reached
// (unavailable), not that it was slow (timeout).
func ClassifyShard(err error, wing string, connected func() bool) *Error {
	if err != nil && errors.Is(err, context.DeadlineExceeded) && !connected() && proto.CodeOf(err) == 0 {
		return &Error{Code: brain.CodeUnavailable, Message: "wing " + strconv.Quote(wing) + " is unreachable (no connection within shards.call_timeout); retry later or ask an operator to check the shard",
			Err: errors.Join(ErrUnavailable, err)}
	}
	return Classify(err, wing)
}

// Call is what ClassifyCall needs to know of a request to a wing: the
// tool (or search step), whether it writes, and the idempotency key a
// write carries.
type Call struct {
	What  string
	Write bool
	Key   string
}

// ClassifyCall is ClassifyShard for a tool call. err is how the call
// finally failed; lost is the answer lost earlier (proto.ErrConnectionLost
// on a first sending the gateway then sent again), nil if none. A write or
// curate call whose answer was lost and whose fate the second sending did
// not settle is outcome_unknown: it may or may not have happened, and the
// message quotes the idempotency key it was sent with (the agent's, or the
// gateway's gw-… key: the shard remembers either per caller), so a retry
// with it is applied at most once and answers the first answer. Only a
// Refusal of the request's bytes themselves (the first sending got the
// same) settles it. A write that timed out is still timeout, and its
// message quotes the key too.
func ClassifyCall(err, lost error, wing string, connected func() bool, op Call) *Error {
	if !op.Write {
		return ClassifyShard(err, wing, connected)
	}
	if lost == nil && proto.CodeOf(err) == 0 && errors.Is(err, proto.ErrConnectionLost) {
		lost, err = err, nil
	}
	if lost == nil || RefusedUnrun(err) {
		e := ClassifyShard(err, wing, connected)
		if e.Code == brain.CodeTimeout && op.Key != "" {
			e = &Error{Code: e.Code, Err: e.Err, Message: e.Message + ": the write may or may not have happened. " + RetryWith(op.Key)}
		}
		return e
	}
	what := fmt.Sprintf("the connection to wing %q was lost after %s was sent", wing, op.What)
	if err != nil {
		what += fmt.Sprintf(", and sending it again did not settle it (%s)", ClassifyShard(err, wing, connected).Message)
	}
	hint := "Read the note to check before writing again"
	if op.Key != "" {
		hint = RetryWith(op.Key)
	}
	return &Error{Code: brain.CodeOutcomeUnknown, Err: errors.Join(ErrOutcomeUnknown, lost, err),
		Message: what + ": the write may or may not have happened. " + hint}
}

// RetryWith tells the agent how to retry a write whose fate is unknown.
func RetryWith(key string) string {
	return fmt.Sprintf(`Retry the same call with "idempotency_key": %q (the key it was sent with): it is applied at most once, and if it already happened you get its first answer`, key)
}

// RefusedUnrun reports a shard's refusal of a request's bytes themselves:
// malformed, too large, a tool it does not know. A request refused so was
// not run, and an identical earlier sending was refused alike.
func RefusedUnrun(err error) bool {
	switch proto.CodeOf(err) {
	case proto.CodeBadRequest, proto.CodeTooLarge, proto.CodeUnknownTool, proto.CodeUnknownMethod:
		return true
	}
	return proto.CodeOf(err) == 0 && errors.Is(err, proto.ErrTooLarge)
}

// ToolErrorResult turns an *Error into an MCP tool error result.
func ToolErrorResult(e *Error) *mcp.CallToolResult {
	return mcp.NewToolResultError(string(brain.EncodeError(e.Code, e.Message)))
}

// ShardResult wraps a shard's result bytes, unchanged, as the text content.
func ShardResult(resp *proto.CallResponse) *mcp.CallToolResult {
	res := mcp.NewToolResultText(string(resp.Result))
	res.IsError = resp.IsError
	return res
}

// QuoteParam quotes an auth-param value; RFC 6750 limits error_description
// to %x20-21 / %x23-5B / %x5D-7E, so others are replaced.
func QuoteParam(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\'')
		case r < 0x20 || r > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func WriteOAuthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	body := struct {
		Error       string `json:"error,omitempty"`
		Description string `json:"error_description"`
	}{code, description}
	b, _ := brain.Marshal(body)
	_, _ = w.Write(b)
}

// JSONRPCErrorBody renders an id-less (or id-carrying) JSON-RPC error used
// for HTTP-level refusals (413, 429, 403, 400): MCP clients parse it.
func JSONRPCErrorBody(id []byte, code int, message string, toolCode brain.Code) []byte {
	type data = brain.ErrorBody
	var d *data
	if toolCode != "" {
		d = &data{Error: brain.ErrorDetail{Code: toolCode, Message: message}}
	}
	if len(id) == 0 {
		id = []byte("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    *data  `json:"data,omitempty"`
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{JSONRPC: "2.0", ID: json.RawMessage(id), Error: rpcError{code, message, d}})
	return body
}

// JSON-RPC error codes used in HTTP-level refusals.
const (
	RPCInvalidRequest = -32600
	RPCServerError    = -32000 // implementation-defined server error
)

// ErrBadBody reports a request body that could not be read.
var ErrBadBody = errors.New("gateway: unreadable request body")

// Refusal is how a request refused before mcp-go is answered: the HTTP
// status, the JSON-RPC error code and, where there is one, the tool error
// code put in the error's data.
type Refusal struct {
	Status   int
	RPCCode  int
	ToolCode brain.Code
}

// RefusalOf maps the gateway's HTTP-level sentinels (the one table).
func RefusalOf(err error) Refusal {
	switch {
	case errors.Is(err, ErrOriginNotAllowed):
		return Refusal{http.StatusForbidden, RPCInvalidRequest, ""}
	case errors.Is(err, ErrProtocolVersion):
		return Refusal{http.StatusBadRequest, RPCInvalidRequest, ""}
	case errors.Is(err, ErrBodyTooLarge):
		return Refusal{http.StatusRequestEntityTooLarge, RPCInvalidRequest, brain.CodeTooLarge}
	case errors.Is(err, ErrBadBody), errors.Is(err, ErrBadRequestID):
		return Refusal{http.StatusBadRequest, RPCInvalidRequest, ""}
	case errors.Is(err, ErrUnknownSession):
		return Refusal{http.StatusNotFound, RPCInvalidRequest, ""}
	case errors.Is(err, ErrRateLimited), errors.Is(err, ErrTooManyAuthFailed):
		return Refusal{http.StatusTooManyRequests, RPCServerError, brain.CodeRateLimited}
	}
	return Refusal{http.StatusInternalServerError, RPCServerError, brain.CodeInternal}
}

// Refuse answers a request refused before mcp-go with a JSON-RPC error
// body (MCP clients parse it); message is what a person reads.
func Refuse(w http.ResponseWriter, err error, id []byte, message string) {
	r := RefusalOf(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.Status)
	_, _ = w.Write(JSONRPCErrorBody(id, r.RPCCode, message, r.ToolCode))
}

// JSON-RPC error codes of the answers to resources and prompts requests
// (MCP: -32602 invalid params, -32603 internal error, -32002 resource not
// found, which 2026-07-28 folds into -32602, as mcp-go answers it).
const (
	RPCInvalidParams    = -32602
	RPCInternalError    = -32603
	RPCResourceNotFound = -32002
)

// RPCCodeOf maps the failure of a resources or prompts request (an *Error
// from classify, or one of the sentinels above) to its JSON-RPC error
// code: the one table for these methods. modern is the 2026-07-28
// revision.
func RPCCodeOf(e *Error, modern bool) int {
	switch {
	case errors.Is(e, ErrResourceNotFound):
		if modern {
			return RPCInvalidParams
		}
		return RPCResourceNotFound
	case errors.Is(e, ErrBadCursor), errors.Is(e, ErrBadParams), e.Code == brain.CodeInvalidArgument, e.Code == brain.CodeTooLarge,
		e.Code == brain.CodeUnknownWing, e.Code == brain.CodeForbidden:
		return RPCInvalidParams
	}
	return RPCInternalError
}

// notFoundCodes are the tool error codes a note read answers that all
// mean, to a resources/read, "no such resource for you": the note is
// missing, moved or archived, or its wing does not exist or does not
// admit the caller (unknown_wing, which the gateway also answers for a
// wing it may not disclose), or the caller may not read there.
func NotFoundCode(c brain.Code) bool {
	return slices.Contains([]brain.Code{brain.CodeNotFound, brain.CodeMoved, brain.CodeUnknownWing, brain.CodeForbidden}, c)
}

// WriteRPCError answers a JSON-RPC request with an error (HTTP 200: the
// request was received and answered); the tool error code goes in data.
func WriteRPCError(w http.ResponseWriter, id []byte, code int, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(JSONRPCErrorBody(id, code, e.Message, e.Code))
}
