package proto

import "github.com/brainstem/brainstem/internal/codec"

// CallRequest asks a shard to run one tool for the holder of Token.
type CallRequest struct {
	RequestID string
	Token     string // a shard token minted by this shard; never an SSO token
	Tool      string
	Args      []byte // the tool arguments exactly as the client sent them (JSON object)
	// IdempotencyKey, when set, makes a write tool run at most once per
	// (wing, caller, key): a shard that already answered a call with this
	// key and the same arguments answers the first result again, and with
	// other arguments a conflict (docs/tools.md). The gateway sets it on
	// every write and curate call, so its own retries never apply a write
	// twice. At most MaxIdempotencyKeyBytes; the shard checks the charset.
	IdempotencyKey string
}

// CallResponse is a tool's result, exactly as the shard produced it.
type CallResponse struct {
	Result  []byte // the text content the agent receives, unchanged
	IsError bool   // the result is a tool error ({"error":{"code","message"}})
}

// Call payload: token, tool, args, a reserved byte (0: the statistics a
// call carried before search had messages of its own; a peer that sends
// 1 and statistics has them skipped), then the idempotency key when set.
func (c *CallRequest) appendBody(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.String("token", c.Token, MaxTokenBytes)
	e.String("tool name", c.Tool, MaxToolNameBytes)
	e.b = codec.AppendBool(codec.AppendBytes(e.b, c.Args), false)
	if c.IdempotencyKey != "" {
		e.String("idempotency key", c.IdempotencyKey, MaxIdempotencyKeyBytes)
	}
	return e.done()
}

// decodeCallRequest decodes a Call payload. Args aliases p.
func decodeCallRequest(p []byte) (reqHeader, *CallRequest, error) {
	d := codec.NewDecoder(p)
	h := readReqHeader(d)
	c := &CallRequest{RequestID: h.RequestID, Token: d.String("token", MaxTokenBytes),
		Tool: d.String("tool name", MaxToolNameBytes), Args: d.Bytes("args", len(p))}
	if d.Bool("reserved") {
		readStats(d)
	}
	if d.Err() == nil && d.Len() > 0 { // optional: absent without a key
		c.IdempotencyKey = d.String("idempotency key", MaxIdempotencyKeyBytes)
	}
	return h, c, decoded(d.Err())
}

func (*CallResponse) msgType() MsgType { return MsgCallResponse }

func (v *CallResponse) appendBody(b []byte) ([]byte, error) {
	b = codec.AppendBool(b, v.IsError)
	return codec.AppendBytes(b, v.Result), nil
}

func decodeCallResponse(p []byte) (*CallResponse, error) {
	d := codec.NewDecoder(p)
	v := &CallResponse{IsError: d.Bool("is error"), Result: d.Bytes("result", len(p))}
	return v, decoded(d.Err())
}
