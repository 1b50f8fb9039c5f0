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
	if err := checkLen("email", len(m.Email), brain.MaxEmailBytes); err != nil {
		return b, err
	}
	if err := checkCount("groups", len(m.Groups), MaxGroups); err != nil {
		return b, err
	}
	b = codec.AppendString(b, m.Email)
	b = codec.AppendUvarint(b, uint64(len(m.Groups)))
	for _, g := range m.Groups {
		if err := checkLen("group", len(g), MaxGroupBytes); err != nil {
			return b, err
		}
		b = codec.AppendString(b, g)
	}
	return codec.AppendTime(b, m.NotAfter), nil
}

func decodeMintRequest(p []byte) (reqHeader, *MintRequest, error) {
	d := codec.NewDecoder(p)
	h := readReqHeader(d)
	m := &MintRequest{RequestID: h.RequestID}
	m.Email = d.String("email", brain.MaxEmailBytes)
	if n := d.Count("groups", MaxGroups); n > 0 {
		m.Groups = make([]string, 0, n)
		for range n {
			m.Groups = append(m.Groups, d.String("group", MaxGroupBytes))
		}
	}
	m.NotAfter = d.Time("not after")
	return h, m, decoded(d.Err())
}

func (*MintResponse) msgType() MsgType { return MsgMintResponse }

func (v *MintResponse) appendBody(b []byte) ([]byte, error) {
	if err := checkLen("token", len(v.Token), MaxTokenBytes); err != nil {
		return b, err
	}
	if err := checkCount("caps", len(v.Caps), MaxCaps); err != nil {
		return b, err
	}
	b = codec.AppendString(b, v.Token)
	b = codec.AppendUvarint(b, uint64(len(v.Caps)))
	for _, c := range v.Caps {
		if err := checkLen("cap", len(c), MaxCapBytes); err != nil {
			return b, err
		}
		b = codec.AppendString(b, c)
	}
	return codec.AppendTime(b, v.Expiry), nil
}

func decodeMintResponse(p []byte) (*MintResponse, error) {
	d := codec.NewDecoder(p)
	v := &MintResponse{Token: d.String("token", MaxTokenBytes)}
	if n := d.Count("caps", MaxCaps); n > 0 {
		v.Caps = make([]string, 0, n)
		for range n {
			v.Caps = append(v.Caps, d.String("cap", MaxCapBytes))
		}
	}
	v.Expiry = d.Time("expiry")
	return v, decoded(d.Err())
}
