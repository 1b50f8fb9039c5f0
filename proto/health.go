package proto

import "github.com/brainstem/brainstem/internal/codec"

// HealthResponse reports a shard's state.
type HealthResponse struct {
	Wing    string
	Ready   bool
	Notes   int64
	Version string
}

func (*HealthResponse) msgType() MsgType { return MsgHealthResponse }

func (v *HealthResponse) appendBody(b []byte) ([]byte, error) {
	if err := checkLen("wing", len(v.Wing), MaxWingBytes); err != nil {
		return b, err
	}
	if err := checkLen("version", len(v.Version), MaxVersionBytes); err != nil {
		return b, err
	}
	b = codec.AppendString(b, v.Wing)
	b = codec.AppendBool(b, v.Ready)
	b = codec.AppendVarint(b, v.Notes)
	return codec.AppendString(b, v.Version), nil
}

func decodeHealthResponse(p []byte) (*HealthResponse, error) {
	d := codec.NewDecoder(p)
	v := &HealthResponse{Wing: d.String("wing", MaxWingBytes)}
	v.Ready = d.Bool("ready")
	v.Notes = d.Varint("notes")
	v.Version = d.String("version", MaxVersionBytes)
	return v, decoded(d.Err())
}
