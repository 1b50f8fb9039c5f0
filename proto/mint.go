package proto

import (
	"time"

	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/internal/codec"
)

// MintRequest asks a shard for a token for a verified identity. Only gateways
// (proven by their mTLS client certificate) may send it.
type MintRequest struct {
	RequestID string
	Email     string
	Groups    []string
	NotAfter  time.Time // the SSO token's expiry; the shard token never outlives it
}

// MintResponse is a minted shard token. A caller the wing policy does not
// admit at all gets an *Error with CodeForbidden instead.
type MintResponse struct {
	Token  string
	Caps   []string // "read", "write", "curate"
	Expiry time.Time
}

func (m *MintRequest) appendBody(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.String("email", m.Email, brain.MaxEmailBytes)
	e.Strings("groups", "group", m.Groups, MaxGroups, MaxGroupBytes)
	e.b = codec.AppendTime(e.b, m.NotAfter)
	return e.done()
}

func decodeMintRequest(p []byte) (reqHeader, *MintRequest, error) {
	d := codec.NewDecoder(p)
	h := readReqHeader(d)
	m := &MintRequest{RequestID: h.RequestID, Email: d.String("email", brain.MaxEmailBytes),
		Groups: readStrings(d, "groups", "group", MaxGroups, MaxGroupBytes), NotAfter: d.Time("not after")}
	return h, m, decoded(d.Err())
}

func (*MintResponse) msgType() MsgType { return MsgMintResponse }

func (v *MintResponse) appendBody(b []byte) ([]byte, error) {
	e := encoder{b: b}
	e.String("token", v.Token, MaxTokenBytes)
	e.Strings("caps", "cap", v.Caps, MaxCaps, MaxCapBytes)
	e.b = codec.AppendTime(e.b, v.Expiry)
	return e.done()
}

func decodeMintResponse(p []byte) (*MintResponse, error) {
	d := codec.NewDecoder(p)
	v := &MintResponse{Token: d.String("token", MaxTokenBytes),
		Caps: readStrings(d, "caps", "cap", MaxCaps, MaxCapBytes), Expiry: d.Time("expiry")}
	return v, decoded(d.Err())
}
