package brain

// Code is the stable code of a tool error, the "code" of the envelope
// {"error":{"code","message"}}. Agents and scripts branch on it; the
// message is for people.
type Code string

// Every code a client can receive. Codes() lists them with their meaning
// and who answers with them; docs/tools.md's table is generated from it.
const (
	CodeInvalidArgument Code = "invalid_argument" // an argument is missing, malformed or unknown, or names no wing
	CodeNotFound        Code = "not_found"        // the note or inbox note does not exist
	CodeAlreadyExists   Code = "already_exists"   // a create or promote would overwrite a note
	CodeMoved           Code = "moved"            // the note was moved: the message names where it is now
	CodeConflict        Code = "conflict"         // expected_hash is stale, or the idempotency_key was used for another call
	CodeForbidden       Code = "forbidden"        // the caller lacks the capability (or the verified email a write records)
	CodeTooLarge        Code = "too_large"        // an argument, a note or a message exceeds a size limit
	CodeInternal        Code = "internal"         // the shard or the gateway failed; details are in its log
	CodeUnknownTool     Code = "unknown_tool"     // no tool of that name
	CodeUnknownWing     Code = "unknown_wing"     // no wing of that name that the caller can reach
	CodeUnavailable     Code = "unavailable"      // the wing's shard cannot be reached, is draining, or rejects fresh tokens
	CodeTimeout         Code = "timeout"          // the wing did not answer in time
	CodeRateLimited     Code = "rate_limited"     // the caller exceeded the gateway's rate limit
	CodeCanceled        Code = "canceled"         // the client went away
	CodeOutcomeUnknown  Code = "outcome_unknown"  // a write's connection was lost in flight: it may or may not have happened
)

// Source says who answers with a code: a set of FromShard and FromGateway.
type Source uint8

// The sources of codes.
const (
	FromShard   Source = 1 << iota // a shard's tool (through the gateway or over stdio)
	FromGateway                    // the gateway, before or instead of a shard's answer
)

// CodeInfo documents one code.
type CodeInfo struct {
	Code    Code
	From    Source // FromShard, FromGateway or both
	Meaning string // one line, markdown
}

// Codes returns every code a client can receive, in a fixed order, with
// its meaning. The slice is a fresh copy on every call.
func Codes() []CodeInfo {
	return []CodeInfo{
		{CodeInvalidArgument, FromShard | FromGateway, "an argument is missing, malformed or unknown (the message names it), `wing` is not the shard's wing, or the gateway can derive no wing from the arguments (`wing`, a note `id`, a `path`)"},
		{CodeNotFound, FromShard, "the note or inbox note does not exist (an archived note: the message says who archived it, when and why; `brain_restore` brings it back), or the version is not in the wing's history"},
		{CodeAlreadyExists, FromShard, "a create, promote, move or restore would overwrite a note: nothing was written"},
		{CodeMoved, FromShard, "the note was moved (`brain_move`); the message names its id now, who moved it and when: read it there"},
		{CodeConflict, FromShard, "`expected_hash` is not the note's current hash (the message gives the current hash), or the `idempotency_key` was already used for another call (another tool or other arguments; the message says when): nothing was written"},
		{CodeForbidden, FromShard | FromGateway, "the caller lacks the capability the tool needs, has no verified email (writes), or named another wing's note; from the gateway, a cross-wing `brain_query` by someone who can read no wing"},
		{CodeTooLarge, FromShard | FromGateway, "an argument, a note or the request exceeds a size limit (the message gives it)"},
		{CodeInternal, FromShard | FromGateway, "the shard or the gateway failed (details are in its log, not in the message); retrying may help — with the same `idempotency_key`, a retry of a write is safe"},
		{CodeUnknownTool, FromShard | FromGateway, "no tool of that name; from the gateway, the wing's shard no longer has it (list the tools again)"},
		{CodeUnknownWing, FromGateway, "there is no wing of that name **that you can reach**: not configured, no capability there, or unreachable while you hold no grant — one answer, so it discloses nothing; the message lists the wings you can reach"},
		{CodeUnavailable, FromGateway, "a wing you hold a capability in cannot be reached, is draining, or keeps rejecting fresh tokens; retry shortly"},
		{CodeTimeout, FromGateway, "the wing did not answer within the gateway's call timeout (`shards.call_timeout`, `limits.fanout_timeout`)"},
		{CodeRateLimited, FromGateway, "you exceeded the gateway's rate limit (`limits.calls_per_second`); retry after a pause"},
		{CodeCanceled, FromGateway, "the client cancelled the call or went away"},
		{CodeOutcomeUnknown, FromGateway, "a write whose answer was lost twice (the gateway sent it once more under the same key after the connection died, and that did not settle it): it may or may not have been applied. The message quotes the key it was sent with (yours, or a `gw-…` key the gateway made up): retry with the same arguments and that `idempotency_key`, and it is applied at most once"},
	}
}
