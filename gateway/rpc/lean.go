package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/brainstem/brainstem/internal/jsontext"
)

// The lean path for tool calls.
//
// mcp-go's Streamable HTTP handler is general: for every POST it parses the
// body five times, builds an ephemeral session, starts a goroutine to forward
// server-to-client notifications and reflects over the result, about 130 µs
// of CPU around a call the gateway itself answers in about 20. A tools/call
// under the stateless revision 2026-07-28 needs none of that: there is no
// session to find or touch, the server sends nothing but the answer, and the
// answer is one JSON object.
//
// LeanServer serves exactly that request, and the same call on a session
// of an older revision that mcp-go served recently (sessions.go), and
// nothing else. It checks it with mcp-go's own exported validators, looks
// the tool up in mcp-go's own registry, calls the same handler and stamps
// the result the way mcp-go does for that revision. Whenever a request is
// anything else (a header mismatch, an unknown tool, a body mcp-go would
// refuse, a session mcp-go has not seen lately) Check declines it having
// written nothing, and mcp-go serves the request, errors included. The
// gateway's fastcall_test.go sends the same requests through both paths
// and requires byte-identical answers.

// LeanServer is the lean path: the checks that a tools/call is one it
// serves exactly as mcp-go would, and the call and its answer.
type LeanServer struct {
	cfg      LeanConfig
	answers  [2]*textAnswers // by era: session (unstamped), stateless (stamped)
	sessions *sessionGate
	bindings bindingMemo
}

// LeanConfig is what the lean path is built over.
type LeanConfig struct {
	Tools  func(name string) *server.ServerTool // mcp-go's registry (MCPServer.GetTool)
	Served func()                               // counts a call the lean path served
	Parsed func()                               // counts a decode of a request's JSON
	Log    *slog.Logger
	Info   mcp.Implementation // the serverInfo mcp-go stamps on 2026-07-28 results
	// SessionIdleTTL is mcp-go's session idle TTL (WithSessionIdleTTL),
	// Sessions how many sessions to remember (sessions.go); Now the clock.
	SessionIdleTTL time.Duration
	Sessions       int
	Now            func() time.Time
}

// NewLeanServer builds the lean path over mcp-go's tool registry.
func NewLeanServer(c LeanConfig) (*LeanServer, error) {
	s := &LeanServer{cfg: c}
	var err error
	for era := range s.answers {
		if s.answers[era], err = newTextAnswers(c.Info, era == eraStateless); err != nil {
			return nil, err
		}
	}
	if s.sessions, err = newSessionGate(c.SessionIdleTTL, c.Sessions, c.Now); err != nil {
		return nil, err
	}
	return s, nil
}

// The two eras of a call the lean path serves.
const (
	eraSession   = 0 // 2025-06-18 and before, on an Mcp-Session-Id
	eraStateless = 1 // 2026-07-28
)

// LeanCall is a tools/call the lean path serves: its tool, params and
// JSON-RPC id, and the scan of its arguments (Args), which the tool
// handler reads instead of scanning again.
type LeanCall struct {
	tool   *server.ServerTool
	params CallParams
	id     any
	era    int
	Args   Args
}

// Serve answers c (a tools/call Check accepted) without mcp-go's
// transport: it calls the tool's handler with ctx and writes its answer.
func (s *LeanServer) Serve(ctx context.Context, w http.ResponseWriter, h http.Header, c LeanCall) {
	s.cfg.Served()
	p, id := c.params, c.id
	req := mcp.CallToolRequest{Params: p.MCPParams(), Header: h}
	req.Method = string(mcp.MethodToolsCall)
	res, err := callRecovering(ctx, c.tool.Handler, req)
	var out mcp.JSONRPCMessage
	switch {
	case err != nil:
		out = mcp.NewJSONRPCError(mcp.NewRequestId(id), mcp.INTERNAL_ERROR, err.Error(), nil)
	case res == nil:
		out = mcp.NewJSONRPCError(mcp.NewRequestId(id), mcp.INTERNAL_ERROR, fmt.Sprintf("tool '%s' handler returned no result", p.Name), nil)
	default:
		if text, structured, ok := leanText(res); ok {
			if b, err := s.answers[c.era].encode(id, text, res.IsError, structured); err == nil {
				writeAnswer(w, s.cfg.Log, b)
				return
			}
		}
		if c.era == eraStateless {
			stampModern(res, s.cfg.Info)
		}
		out = mcp.NewJSONRPCResultResponse(mcp.NewRequestId(id), res)
	}
	// As mcp-go does: a result that cannot be encoded is logged and
	// answered 200 with an empty body (json.Encoder writes nothing then).
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(out); err != nil {
		s.cfg.Log.Error("cannot encode a tool call's answer", "tool", p.Name, "err", err)
	}
	writeAnswer(w, s.cfg.Log, buf.Bytes())
}

// Check reports whether a tools/call (its headers h, envelope msg and,
// when its body was plain, its one walk lean) is a call the lean path
// serves exactly as mcp-go would, checked with mcp-go's own validators,
// and returns it.
func (s *LeanServer) Check(h http.Header, msg *Message, lean *Lean) (c LeanCall, ok bool) {
	version := h.Get(mcp.HeaderProtocolVersion)
	if mcp.IsModernProtocol(version) {
		c.era = eraStateless
	} else if sid := h.Get(server.HeaderKeySessionID); sid == "" || !s.sessions.open(sid) {
		return c, false
	}
	if h.Get(mcp.HeaderLastEventID) != "" ||
		msg.JSONRPC != mcp.JSONRPC_VERSION || msg.Method != string(mcp.MethodToolsCall) ||
		msg.Result != nil || msg.Error != nil || !isJSONMediaType(h.Get("Content-Type")) {
		return c, false
	}
	if c.id, ok = requestIDValue(msg.ID); !ok {
		return c, false
	}
	p := &c.params
	args, fit, ok := s.leanParams(msg, lean, p)
	if !ok || !fit || args.Shape() == ShapeInvalid || !s.eraMatches(c.era, h, p, version) {
		return c, false
	}
	st := s.cfg.Tools(p.Name)
	if st == nil || st.Handler == nil || st.Tool.Execution != nil {
		return c, false
	}
	if c.era == eraStateless && s.bindings.has(&st.Tool) && mcp.ValidateParamHeadersLookup(firstHeader(h), &st.Tool, json.RawMessage(msg.Params)) != nil {
		return c, false
	}
	c.tool, c.Args = st, args
	return c, true
}

// eraMatches reports whether a call's params and headers are those of its
// era as mcp-go tells them apart (detectRequestEra): 2026-07-28 carries its
// version (equal to the header's) and the client's capabilities in _meta on
// every request, with the standard headers; a session-era call carries no
// protocol version in _meta (one that names 2026-07-28 would make mcp-go
// treat the call as stateless, so any is left to mcp-go). The standard
// headers are checked as mcp.ValidateStandardHeaders does for a modern
// tools/call, on the tool name already decoded (mcp-go's decodes params once
// more for it): Mcp-Method is tools/call and Mcp-Name, decoded from its
// header encoding, is the name.
func (s *LeanServer) eraMatches(era int, h http.Header, p *CallParams, version string) bool {
	if era == eraStateless {
		hn := h.Get(mcp.HeaderName)
		decoded, ok := mcp.DecodeHeaderValue(hn)
		return p.Modern(version) && h.Get(mcp.HeaderMethod) == string(mcp.MethodToolsCall) && hn != "" && ok && decoded == p.Name
	}
	ver, _ := p.metaFields()
	return ver == nil
}

// leanParams are the call's params and the scan of its arguments: from the
// body's one walk when it was plain (leanParse), else decoded now as
// mcp-go decodes them. ok is false for params mcp-go would refuse.
func (s *LeanServer) leanParams(msg *Message, lb *Lean, p *CallParams) (args Args, fit, ok bool) {
	if lb != nil {
		p.Name, p.Arguments = lb.Name, lb.ArgsRaw
		switch {
		case lb.MetaShape == ShapeOther || (lb.MetaShape == ShapeObject && !lb.MetaFit):
			return args, false, false // mcp-go refuses a _meta that is not a map
		case lb.MetaShape == ShapeObject:
			p.Meta = MetaRef(lb.Meta)
		}
		p.Walked, p.Version, p.Caps = true, lb.Version, lb.Caps
		return lb.Args, lb.ArgsFit, true
	}
	s.cfg.Parsed()
	if len(msg.Params) == 0 || json.Unmarshal(msg.Params, p) != nil {
		return args, false, false
	}
	s.cfg.Parsed()
	args, fit = ScanArgs(p.Arguments)
	return args, fit, true
}

func writeAnswer(w http.ResponseWriter, log *slog.Logger, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(b); err != nil {
		log.Debug("cannot write a tool call's answer", "err", err)
	}
}

// stampModern adds what mcp-go adds to every 2026-07-28 result; info is
// its serverInfo.
func stampModern(res *mcp.CallToolResult, info mcp.Implementation) {
	if res.GetResultType() == "" {
		res.SetResultType(mcp.ResultTypeComplete)
	}
	if meta := res.EnsureResultMeta(); meta.ServerInfo() == nil {
		meta.SetServerInfo(info)
	}
}

// PlainText returns the text of a result whose only content is one plain
// text (every shard tool's and gateway error's answer) and that carries
// nothing else.
func PlainText(res *mcp.CallToolResult) (string, bool) {
	if len(res.Content) != 1 {
		return "", false
	}
	tc, ok := res.Content[0].(mcp.TextContent)
	if !ok || tc.Type != "text" || tc.Meta != nil || tc.Annotations != nil {
		return "", false
	}
	rest := *res
	rest.Content, rest.IsError = nil, false
	return tc.Text, reflect.DeepEqual(rest, mcp.CallToolResult{})
}

// leanText is PlainText of a result that may also carry its text as
// structuredContent (the gateway's structure), which the lean encoder writes too.
func leanText(res *mcp.CallToolResult) (text string, structured, ok bool) {
	raw := res.RawStructuredContent
	if raw != nil {
		r := *res
		r.RawStructuredContent = nil
		res = &r
	}
	text, ok = PlainText(res)
	if raw != nil && (!ok || string(raw) != text) {
		return "", false, false
	}
	return text, raw != nil, ok
}

// textAnswers writes the JSON-RPC answer of a plain-text result of one era
// (and of one whose structuredContent is its text) byte for byte as
// mcp-go's encoder does, without its detour through a map, a second
// marshal and a compacting pass over the (often large) text. The bytes
// around the text are taken, once, from mcp-go's own encoding of a marker
// result, so they follow mcp-go's key order and stamping.
type textAnswers struct {
	// By variant: a text, an error text, a text with its structuredContent.
	// parts[v] are the bytes before the text, then (for the last) between
	// the text and the structured content, then after.
	parts [3][][]byte
}

const (
	textMarker       = "\x00brainstem:text\x00"
	structuredMarker = "\x00brainstem:structured\x00"
)

func newTextAnswers(info mcp.Implementation, stamped bool) (*textAnswers, error) {
	var t textAnswers
	tm, sm := []byte(`"\u0000brainstem:text\u0000"`), []byte(`"\u0000brainstem:structured\u0000"`) // the markers as encoding/json writes them
	for v := range t.parts {
		res := mcp.NewToolResultText(textMarker)
		res.IsError = v == 1
		if v == 2 {
			res.RawStructuredContent = sm
		}
		if stamped {
			stampModern(res, info)
		}
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(mcp.NewJSONRPCResultResponse(mcp.NewRequestId(0), res)); err != nil {
			return nil, err
		}
		const envelope = `{"jsonrpc":"2.0","id":0,"result":`
		b, ok := bytes.CutPrefix(buf.Bytes(), []byte(envelope))
		if !ok {
			return nil, fmt.Errorf("gateway: unexpected JSON-RPC envelope %q", buf.Bytes())
		}
		head, rest, ok := bytes.Cut(b, tm)
		if !ok || bytes.Contains(rest, tm) {
			return nil, fmt.Errorf("gateway: unexpected result encoding %q", buf.Bytes())
		}
		t.parts[v] = [][]byte{head, rest}
		if v == 2 {
			mid, tail, ok := bytes.Cut(rest, sm)
			if !ok || bytes.Contains(tail, sm) || bytes.Contains(head, sm) {
				return nil, fmt.Errorf("gateway: unexpected structured result encoding %q", buf.Bytes())
			}
			t.parts[v] = [][]byte{head, mid, tail}
		}
	}
	return &t, nil
}

// id is a string or a number (requestIDValue).
func (t *textAnswers) encode(id any, text string, isErr, structured bool) (b []byte, err error) {
	v := 0
	switch {
	case isErr:
		v = 1
	case structured:
		v = 2
	}
	p := t.parts[v]
	n := 2 + len(text) + len(p[0]) + len(p[1]) + 128
	if v == 2 {
		n += len(text) + len(p[2])
	}
	b = make([]byte, 0, n)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	switch id := id.(type) {
	case string:
		b = jsontext.AppendString(b, id, true)
	case float64:
		b = jsontext.AppendFloat(b, id)
	default:
		return nil, fmt.Errorf("gateway: request id of type %T", id)
	}
	b = append(b, `,"result":`...)
	b = append(b, p[0]...)
	b = jsontext.AppendString(b, text, true) // escapes <, > and & as the encoder does
	b = append(b, p[1]...)
	if v == 2 {
		// As the encoder writes a json.RawMessage (compacted, with <, >
		// and & escaped), in one pass over the text.
		if b, err = jsontext.AppendCompact(b, text); err != nil {
			return nil, err
		}
		b = append(b, p[2]...)
	}
	return b, nil
}

// callRecovering calls a tool handler the way mcp-go's recovery middleware
// does: a panic becomes the handler's error.
func callRecovering(ctx context.Context, h func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error), req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("panic recovered in %s tool handler: %v", req.Params.Name, p)
		}
	}()
	return h(ctx, req)
}

// requestIDValue decodes a JSON-RPC id as mcp-go does (into any); only
// strings and numbers are served on the lean path.
func requestIDValue(raw []byte) (any, bool) {
	var id any
	if len(raw) == 0 || json.Unmarshal(raw, &id) != nil {
		return nil, false
	}
	switch id.(type) {
	case string, float64:
		return id, true
	}
	return nil, false
}

func isJSONMediaType(ct string) bool {
	if ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// firstHeader reports a header's first value and whether it was sent at all.
func firstHeader(h http.Header) func(string) (string, bool) {
	return func(name string) (string, bool) {
		if v := h.Values(name); len(v) > 0 {
			return v[0], true
		}
		return "", false
	}
}

// bindingMemo remembers, per input schema, whether a tool mirrors
// arguments in Mcp-Param-* headers (x-mcp-header), which takes a walk over
// the schema to find out. Schemas come from the shards, so there are few;
// the memo is emptied if it ever holds maxBindingMemo of them.
type bindingMemo struct {
	mu sync.Mutex
	m  map[string]bool
}

const maxBindingMemo = 1024

func (b *bindingMemo) has(t *mcp.Tool) bool {
	if len(t.RawInputSchema) == 0 {
		return len(mcp.ExtractParamHeaderBindings(t)) > 0
	}
	key := string(t.RawInputSchema)
	b.mu.Lock()
	v, ok := b.m[key]
	b.mu.Unlock()
	if ok {
		return v
	}
	v = len(mcp.ExtractParamHeaderBindings(t)) > 0
	b.mu.Lock()
	if b.m == nil || len(b.m) >= maxBindingMemo {
		b.m = map[string]bool{}
	}
	b.m[key] = v
	b.mu.Unlock()
	return v
}
