package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/shard/idempotency"
	"github.com/brainstem/brainstem/shard/index"
	"github.com/brainstem/brainstem/shard/store"
)

// Caller is who makes a call, as the transport established it.
type Caller struct {
	Email string     // canonical verified email, recorded as the author of writes
	Caps  brain.Caps // capabilities in this wing (brain.Caps.Has counts what they imply)
	// IdempotencyKey is the key the transport carried beside the arguments
	// (proto CallRequest.IdempotencyKey), honoured like the
	// idempotency_key argument by the write tools; "" for none.
	IdempotencyKey string
}

// Tool describes one tool.
type Tool struct {
	Name, Description string
	Schema            json.RawMessage // JSON Schema of the arguments
	Needs             brain.Caps      // capability a caller must hold
}

// Options configures New.
type Options struct {
	Logger *slog.Logger // internal errors are logged here; nil discards
	Limits Limits       // zero fields take DefaultLimits
	// Journal remembers the write tools' idempotency keys. Without one, a
	// call that carries a key is refused (internal) rather than run
	// without the guarantee.
	Journal *idempotency.Journal
}

// Set is the brain tools of one wing. It is safe for concurrent use.
type Set struct {
	st      *store.Store
	journal *idempotency.Journal
	log     *slog.Logger
	lim     Limits
	specs   []*spec
	byName  map[string]*spec
	desc    json.RawMessage

	testStage func(stage string) // crash tests: called at each stage of a keyed write
}

// spec is one tool: its descriptor parts and its handler.
type spec struct {
	name, title, desc                 string
	props                             []prop
	needs                             brain.Caps
	readOnly, destructive, idempotent bool
	run                               func(ctx context.Context, c Caller, args []byte, stats *index.Stats) (any, error)
	schema                            json.RawMessage
}

// New returns the tool set over st.
func New(st *store.Store, opt Options) *Set {
	s := &Set{st: st, journal: opt.Journal, log: opt.Logger, lim: opt.Limits.withDefaults(), byName: map[string]*spec{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.specs = s.define()
	for _, sp := range s.specs {
		sp.schema = schema(sp.props)
		s.byName[sp.name] = sp
	}
	s.desc = s.descriptors()
	return s
}

// Wing returns the wing the set serves.
func (s *Set) Wing() string { return s.st.Wing() }

// Limits returns the limits in force (defaults filled in).
func (s *Set) Limits() Limits { return s.lim }

// descriptor is one entry of Descriptors, in field order.
type descriptor struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	InputSchema json.RawMessage   `json:"inputSchema"`
	Annotations annotations       `json:"annotations"`
	Meta        map[string]string `json:"_meta"` // brain.CapabilityMetaKey: the capability the tool needs
}

type annotations struct {
	Title           string `json:"title"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

func (s *Set) descriptors() json.RawMessage {
	out := make([]descriptor, len(s.specs))
	for i, sp := range s.specs {
		out[i] = descriptor{
			Name: sp.name, Description: sp.desc, InputSchema: sp.schema,
			Annotations: annotations{Title: sp.title, ReadOnlyHint: sp.readOnly, DestructiveHint: sp.destructive, IdempotentHint: sp.idempotent},
			Meta:        map[string]string{brain.CapabilityMetaKey: sp.needs.Strongest()},
		}
	}
	b, err := brain.Marshal(out)
	if err != nil {
		panic("tools: descriptors: " + err.Error()) // built from constants: a programming error
	}
	return b
}

// Descriptors returns the JSON array tools/list shows, in a fixed order:
// per tool {"name","description","inputSchema","annotations":{"title",
// "readOnlyHint","destructiveHint","idempotentHint","openWorldHint"},
// "_meta":{"brainstem/capability":"read|write|curate"}}. The caller must
// not modify the returned bytes.
func (s *Set) Descriptors() json.RawMessage { return s.desc }

// Tools returns the tools in descriptor order.
func (s *Set) Tools() []Tool {
	out := make([]Tool, len(s.specs))
	for i, sp := range s.specs {
		out[i] = Tool{Name: sp.name, Description: sp.desc, Schema: sp.schema, Needs: sp.needs}
	}
	return out
}

// Needs returns the capability the named tool requires.
func (s *Set) Needs(name string) (brain.Caps, bool) {
	sp, ok := s.byName[name]
	if !ok {
		return 0, false
	}
	return sp.needs, true
}

// QueryStats returns this wing's BM25 statistics for a query, for the
// gateway to sum across wings and send back with brain_query.
func (s *Set) QueryStats(q string) index.Stats { return s.st.Stats(q) }

// Call runs the named tool for c with the raw JSON arguments args. stats,
// when non-nil, are the global BM25 statistics brain_query scores with.
// The result is compact JSON; isError marks an error result
// {"error":{"code","message"}}.
func (s *Set) Call(ctx context.Context, c Caller, name string, args []byte, stats *index.Stats) (result []byte, isError bool) {
	return s.CallWith(ctx, c, name, args, CallOptions{Stats: stats})
}

// CallOptions are what the transport adds to a call besides its arguments.
type CallOptions struct {
	// Stats are the global BM25 statistics brain_query scores with.
	Stats *index.Stats
	// Rank and Fetch are the two steps of a cross-wing brain_query (see
	// docs/protocol.md): Rank answers {"ranked":[{"id","score"}],"total"}
	// without reading any note; Fetch answers {"hits":[...]} for these ids
	// only, each hit exactly as brain_query renders it. Other tools ignore
	// them.
	Rank  bool
	Fetch []string
}

// CallWith is Call with the transport's options.
func (s *Set) CallWith(ctx context.Context, c Caller, name string, args []byte, opt CallOptions) (result []byte, isError bool) {
	stats := opt.Stats
	sp, ok := s.byName[name]
	if !ok {
		return brain.EncodeError(brain.CodeUnknownTool, fmt.Sprintf("there is no tool %q in wing %q; the tools are: %s", name, s.Wing(), strings.Join(s.names(), ", "))), true
	}
	if !c.Caps.Has(sp.needs) {
		return brain.EncodeError(brain.CodeForbidden, fmt.Sprintf("%s needs the %s capability in wing %q; you have: %s; ask a curator of the wing to grant it", name, sp.needs.Strongest(), s.Wing(), c.Caps)), true
	}
	if sp.needs.Has(brain.CapWrite) {
		// Every write records its author: only a canonical address
		// (auth.CanonicalEmail) may be one, whatever built the Caller.
		if e, err := auth.CanonicalEmail(c.Email); err != nil || e != c.Email {
			return brain.EncodeError(brain.CodeForbidden, name+" records its author, but the caller has no verified, canonical email"), true
		}
	}
	if len(args) > s.lim.MaxArgsBytes {
		return brain.EncodeError(brain.CodeTooLarge, fmt.Sprintf("the arguments are %d bytes, over the %d-byte limit", len(args), s.lim.MaxArgsBytes)), true
	}
	if err := ctx.Err(); err != nil {
		return brain.EncodeError(brain.CodeInternal, "the call was cancelled or timed out before it ran: "+err.Error()), true
	}
	run := sp.run
	if name == brain.QueryTool && (opt.Rank || len(opt.Fetch) > 0) {
		run = func(ctx context.Context, _ Caller, args []byte, stats *index.Stats) (any, error) {
			if len(opt.Fetch) > 0 {
				return s.queryFetch(ctx, args, stats, opt.Fetch)
			}
			return s.queryRank(ctx, args, stats)
		}
	}
	v, err := s.run(ctx, sp.name, run, c, args, stats)
	if err != nil {
		return s.errorOf(name, err), true
	}
	if r, ok := v.(rawResult); ok {
		return r.b, r.isErr
	}
	b, err := brain.Marshal(v)
	if err != nil {
		s.log.Error("tools: encode result", "tool", name, "err", err)
		return brain.EncodeError(brain.CodeInternal, "the shard could not encode the result; the failure is logged on the shard"), true
	}
	return b, false
}

func (s *Set) run(ctx context.Context, name string, run func(context.Context, Caller, []byte, *index.Stats) (any, error), c Caller, args []byte, stats *index.Stats) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("tools: panic in tool", "tool", name, "panic", r, "stack", string(debug.Stack()))
			v, err = nil, errors.New("tools: panic in tool")
		}
	}()
	return run(ctx, c, args, stats)
}

func (s *Set) names() []string {
	out := make([]string, len(s.specs))
	for i, sp := range s.specs {
		out[i] = sp.name
	}
	return out
}

// invalid is a refusal of the arguments: invalid_argument with the
// formatted message, which must be safe to show.
func invalid(format string, args ...any) error {
	return brain.Errorf(brain.CodeInvalidArgument, format, args...)
}

// tooLarge is a refusal of an argument over a limit: too_large.
func tooLarge(format string, args ...any) error {
	return brain.Errorf(brain.CodeTooLarge, format, args...)
}

// hint completes a refusal that wraps sentinel with what the agent can do
// next ("<message>; <hint>"). Hints name tools, which only this package
// knows: the store's messages name none. Any other error is returned as
// it is.
func hint(err, sentinel error, format string, args ...any) error {
	e, ok := brain.As(err)
	if !ok || !errors.Is(err, sentinel) {
		return err
	}
	return brain.Wrap(err, e.Code, "%s; %s", e.Message, fmt.Sprintf(format, args...))
}

// errorOf turns an error into an error result.
func (s *Set) errorOf(tool string, err error) []byte {
	code, msg := s.classify(tool, err)
	return brain.EncodeError(code, msg)
}

// classify maps an error to its code and message: a *brain.Error (a
// refusal built where it was found: here, in the store or by the naming
// rules) is shown as it is; anything else is internal and logged here.
func (s *Set) classify(tool string, err error) (brain.Code, string) {
	if e, ok := brain.As(err); ok {
		return e.Code, e.Message
	}
	switch {
	case errors.Is(err, idempotency.ErrClosed):
		return brain.CodeInternal, "the shard is shutting down; retry in a moment"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return brain.CodeInternal, "the call was cancelled or timed out: " + err.Error()
	}
	s.log.Error("tools: internal error", "tool", tool, "err", err)
	return brain.CodeInternal, "the shard failed to run " + tool + "; the error is logged on the shard, retrying may help"
}

// decode decodes args strictly into v: unknown fields (names are exact: a
// key equal to a known one only under case folding is unknown too),
// trailing data and type mismatches are invalid_argument errors naming the
// argument.
func decode(args []byte, v any, known []prop) error {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		return invalid("the arguments must be a JSON object")
	}
	if err := exactNames(trimmed, known, ""); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			field := te.Field
			if field == "" {
				field = "arguments"
			}
			return invalid("argument %q must be %s, not %s", field, jsonType(te.Type.Kind().String()), te.Value)
		case errors.As(err, &se):
			return invalid("the arguments are not valid JSON: %v (at byte %d)", err, se.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return invalid("the arguments are not valid JSON: they end too early")
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.TrimPrefix(err.Error(), "json: unknown field ")
			return invalid("unknown argument %s; this tool accepts: %s", name, propNames(known))
		default:
			return invalid("the arguments cannot be decoded: %v", err)
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("the arguments must be one JSON object, with nothing after it")
	}
	return nil
}

// exactNames refuses any key of the JSON object obj that is not exactly the
// name of one of props. encoding/json matches struct fields to keys
// case-insensitively (with Unicode folding: "LIMIT", or "\u017flug" for
// slug), which would let an argument in through a spelling the schema does
// not have. Objects inside array and object arguments with known properties
// are checked too; where names the enclosing argument ("pages[2]"). Input
// that is not a JSON object is left to the typed decode to report.
func exactNames(obj []byte, props []prop, where string) error {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	var unknown []string
	for k, v := range m {
		i := slices.IndexFunc(props, func(p prop) bool { return p.name == k })
		if i < 0 {
			unknown = append(unknown, k)
			continue
		}
		p := props[i]
		switch {
		case p.typ == "array" && p.items != nil && p.items.props != nil:
			var items []json.RawMessage
			if json.Unmarshal(v, &items) != nil {
				continue
			}
			for j, it := range items {
				if err := exactNames(it, p.items.props, fmt.Sprintf("%s%s[%d]", dotted(where), k, j)); err != nil {
					return err
				}
			}
		case p.typ == "object" && p.props != nil:
			if err := exactNames(v, p.props, dotted(where)+k); err != nil {
				return err
			}
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	if where == "" {
		return invalid("unknown argument %q; this tool accepts: %s (names are case-sensitive)", unknown[0], propNames(props))
	}
	return invalid("unknown argument %q in %s; it accepts: %s (names are case-sensitive)", unknown[0], where, propNames(props))
}

func dotted(where string) string {
	if where == "" {
		return ""
	}
	return where + "."
}

func propNames(ps []prop) string {
	n := make([]string, len(ps))
	for i, p := range ps {
		n[i] = p.name
	}
	return strings.Join(n, ", ")
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "int", "int64", "int32":
		return "an integer"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "struct", "map":
		return "an object"
	case "float64":
		return "a number"
	}
	return "a " + kind
}
