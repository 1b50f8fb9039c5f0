package proto

import (
	"encoding/json"

	"github.com/brainstem/brainstem/internal/codec"
)

// ListToolsResponse carries the shard's tool descriptors: a JSON array of MCP
// tool objects ({"name","description","inputSchema"}), passed on unparsed;
// and its prompt descriptors, a JSON array of MCP prompt objects
// ({"name","description","arguments"}), nil when it declares none.
type ListToolsResponse struct {
	Tools   json.RawMessage
	Prompts json.RawMessage
}

// PromptCall prefixes the Tool of a CallRequest that asks for a prompt
// (prompts/get) rather than a tool: "prompt:<name>", its Args the
// prompt's arguments (a JSON object of strings), the answer's Result the
// GetPromptResult (or a tool error, as a call's). A prompt needs no
// message of its own: it is authorized, limited and answered like a call.
const PromptCall = "prompt:"

func (*ListToolsResponse) msgType() MsgType { return MsgListToolsResponse }

// List tools payload: the tools, then the prompts (empty for none). A
// gateway that predates prompts ignores them; a shard that predates them
// sends the tools only, which decodes as no prompts.
func (v *ListToolsResponse) appendBody(b []byte) ([]byte, error) {
	b = codec.AppendBytes(b, v.Tools)
	return codec.AppendBytes(b, v.Prompts), nil
}

func decodeListToolsResponse(p []byte) (*ListToolsResponse, error) {
	d := codec.NewDecoder(p)
	v := &ListToolsResponse{Tools: d.Bytes("tools", len(p))}
	if d.Err() == nil && d.Len() > 0 {
		if v.Prompts = d.Bytes("prompts", len(p)); len(v.Prompts) == 0 {
			v.Prompts = nil
		}
	}
	return v, decoded(d.Err())
}
