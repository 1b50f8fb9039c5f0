package proto

import (
	"encoding/json"

	"github.com/brainstem/brainstem/internal/codec"
)

// ListToolsResponse carries the shard's tool descriptors: a JSON array of MCP
// tool objects ({"name","description","inputSchema"}), passed on unparsed.
type ListToolsResponse struct {
	Tools json.RawMessage
}

func (*ListToolsResponse) msgType() MsgType { return MsgListToolsResponse }

func (v *ListToolsResponse) appendBody(b []byte) ([]byte, error) {
	return codec.AppendBytes(b, v.Tools), nil
}

func decodeListToolsResponse(p []byte) (*ListToolsResponse, error) {
	d := codec.NewDecoder(p)
	v := &ListToolsResponse{Tools: d.Bytes("tools", len(p))}
	return v, decoded(d.Err())
}
