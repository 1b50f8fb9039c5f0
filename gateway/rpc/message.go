package rpc

import (
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
)

// Message is the JSON-RPC envelope of a POST body, parsed once for the
// edge's body check (edge.Envelope). Its raw parts point into the body,
// which the gateway owns for the whole request.
type Message struct {
	JSONRPC string `json:"jsonrpc"`
	ID      Raw    `json:"id"`
	Method  string `json:"method"`
	Params  Raw    `json:"params"`
	Result  Raw    `json:"result"`
	Error   Raw    `json:"error"`
}

// CallParams are tools/call's params decoded once, as mcp-go's
// CallToolParams.UnmarshalJSON decodes them (the same fields, so the same
// refusals), except for two fields no handler here reads, which are only
// checked: the arguments stay raw bytes in the body (mcp-go also copies
// them twice and decodes them into a map, which fails only on a number
// beyond float64: scanArgs reports those), and so does _meta (metaRef).
type CallParams struct {
	Name      string          `json:"name"`
	Arguments Raw             `json:"arguments"`
	Meta      MetaRef         `json:"_meta"`
	Task      *mcp.TaskParams `json:"task,omitempty"`
	mcp.MultiRoundTripParams

	// Walked: the body's one walk found _meta's two members already
	// (Version and Caps).
	Walked        bool `json:"-"`
	Version, Caps Raw  `json:"-"`
}

// mcpParams are the params as a handler receives them from mcp-go, but for
// Arguments and Meta, which stay nil: the handlers read RawArguments.
func (p *CallParams) MCPParams() mcp.CallToolParams {
	return mcp.CallToolParams{Name: p.Name, Task: p.Task, MultiRoundTripParams: p.MultiRoundTripParams,
		RawArguments: json.RawMessage(p.Arguments)}
}

// MetaRef is params' _meta, kept raw. mcp-go decodes _meta (mcp.Meta) into
// a map, so, like it, UnmarshalJSON refuses anything but an object whose
// numbers fit a float64, and null leaves no _meta; every occurrence of a
// repeated _meta is checked, and the last one is kept, as mcp-go does.
type MetaRef Raw

// UnmarshalJSON implements json.Unmarshaler.
func (m *MetaRef) UnmarshalJSON(b []byte) error {
	switch shape, fit := WalkJSON(b, func([]byte, Raw) {}); {
	case shape == ShapeAbsent:
		*m = nil
	case shape != ShapeObject || !fit:
		return ErrMetaNotMap
	default:
		*m = b
	}
	return nil
}

var ErrMetaNotMap = errors.New("gateway: _meta does not decode into a map")

// modern reports whether params' _meta carries what a 2026-07-28 request carries
// on every request, read as mcp-go reads it (Meta.ProtocolVersion, Meta.
// ClientCapabilities): the protocol version, a string equal to version,
// and the client's capabilities, which decode into mcp.ClientCapabilities.
func (p *CallParams) Modern(version string) bool {
	ver, caps := p.metaFields()
	if v, ok := JSONString(ver); !ok || v != version || caps == nil || string(caps) == "null" {
		return false
	}
	return string(caps) == "{}" || json.Unmarshal(caps, new(mcp.ClientCapabilities)) == nil
}

// metaFields are _meta's protocol version and client capabilities, raw
// (nil where absent).
func (p *CallParams) metaFields() (ver, caps Raw) {
	if p.Walked {
		return p.Version, p.Caps
	}
	WalkJSON(p.Meta, func(name []byte, v Raw) {
		switch string(name) {
		case mcp.MetaKeyProtocolVersion:
			ver = v
		case mcp.MetaKeyClientCapabilities:
			caps = v
		}
	})
	return ver, caps
}
