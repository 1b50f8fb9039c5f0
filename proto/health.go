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
	e := encoder{b: b}
	e.String("wing", v.Wing, MaxWingBytes)
	e.b = codec.AppendVarint(codec.AppendBool(e.b, v.Ready), v.Notes)
	e.String("version", v.Version, MaxVersionBytes)
	return e.done()
}

func decodeHealthResponse(p []byte) (*HealthResponse, error) {
	d := codec.NewDecoder(p)
	v := &HealthResponse{Wing: d.String("wing", MaxWingBytes), Ready: d.Bool("ready"), Notes: d.Varint("notes"),
		Version: d.String("version", MaxVersionBytes)}
	return v, decoded(d.Err())
}
