package tools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/brainstem/brainstem/auth"
	"github.com/brainstem/brainstem/brain"
	"github.com/brainstem/brainstem/brain/toolspec"
	"github.com/brainstem/brainstem/shard/idempotency"
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

// Tool is one tool of a Set: its spec, the single declaration every part
// of Brainstem derives the tool from (toolspec), and its handler. Make one
// with Define.
type Tool struct {
	Spec *toolspec.Spec
	call func(ctx context.Context, s *Set, c Caller, args []byte) (any, error)
	// off: the tool is disabled by configuration (brain_purge while
	// purging is off). It is left out of the descriptors, so tools/list
	// does not offer it, and a call is answered by the tool itself (its
	// refusal says how an operator enables it).
	off bool
}

func onlyIf(enabled bool, t Tool) Tool {
	t.off = !enabled
	return t
}

// Define returns the tool of spec whose handler is run: Set.Call decodes
// and validates a call's arguments into an A with spec.Decode (one pass),
// checks the optional wing argument (WingArg) against the set's wing, and
// hands run the result. A's fields carry the arguments' names as json tags.
func Define[A any](spec *toolspec.Spec, run func(ctx context.Context, c Caller, args *A) (any, error)) Tool {
	return Tool{Spec: spec, call: func(ctx context.Context, s *Set, c Caller, raw []byte) (any, error) {
		a, err := decodeArgs[A](s, spec, raw)
		if err != nil {
			return nil, err
		}
		return run(ctx, c, a)
	}}
}

// decodeArgs is the prologue every tool shares: decode and validate the
// arguments with the spec, then check the wing argument.
func decodeArgs[A any](s *Set, spec *toolspec.Spec, raw []byte) (*A, error) {
	a := new(A)
	if err := spec.Unmarshal(raw, a); err != nil {
		return nil, err
	}
	if w, ok := any(a).(wingNamer); ok {
		if err := s.checkWing(w.wingName()); err != nil {
			return nil, err
		}
	}
	return a, spec.Check(a)
}

// wingNamer is the arguments of a tool with a wing argument.
type wingNamer interface{ wingName() string }

// WingArg is the optional wing argument of every tool (embed it in the
// arguments' struct): through the gateway it picks the shard; here it must
// be the set's wing when given.
type WingArg struct {
	Wing string `json:"wing"`
}

func (w *WingArg) wingName() string { return w.Wing }

// KeyArg is the idempotency_key argument of every write tool (embed it).
type KeyArg struct {
	IdempotencyKey string `json:"idempotency_key"`
}

// Options configures New.
type Options struct {
	Logger *slog.Logger // internal errors are logged here; nil discards
	Limits Limits       // zero fields take DefaultLimits
	// Journal remembers the write tools' idempotency keys. Without one, a
	// call that carries a key is refused (internal) rather than run
	// without the guarantee.
	Journal *idempotency.Journal
	// Extra tools are served after the brain tools, exactly like them.
	Extra []Tool
}

// Set is the brain tools of one wing. It is safe for concurrent use.
type Set struct {
	st      *store.Store
	journal *idempotency.Journal
	log     *slog.Logger
	lim     Limits
	tools   []Tool
	byName  map[string]*Tool
	desc    json.RawMessage

	prompts      []*toolspec.Prompt
	promptByName map[string]*toolspec.Prompt
	promptDesc   json.RawMessage

	testStage func(stage string) // crash tests: called at each stage of a keyed write
}

// New returns the tool set over st: the brain tools, then opt.Extra.
func New(st *store.Store, opt Options) *Set {
	s := &Set{st: st, journal: opt.Journal, log: opt.Logger, lim: opt.Limits.withDefaults(), byName: map[string]*Tool{}}
	s.log = cmp.Or(s.log, slog.New(slog.DiscardHandler))
	s.tools = append(s.define(), opt.Extra...)
	var descs []json.RawMessage
	for i := range s.tools {
		t := &s.tools[i]
		if err := t.Spec.Validate(); err != nil {
			panic(err.Error()) // declarations are constants: a programming error
		}
		if _, dup := s.byName[t.Spec.Name]; dup {
			panic("tools: tool " + t.Spec.Name + " defined twice")
		}
		s.byName[t.Spec.Name] = t
		if !t.off {
			descs = append(descs, t.Spec.Descriptor())
		}
	}
	b, err := brain.Marshal(descs)
	if err != nil {
		panic("tools: descriptors: " + err.Error())
	}
	s.desc = b
	s.setPrompts(s.definePrompts())
	return s
}

// setPrompts validates the prompts and builds their descriptors.
func (s *Set) setPrompts(prompts []*toolspec.Prompt) {
	s.prompts, s.promptByName = prompts, map[string]*toolspec.Prompt{}
	descs := make([]json.RawMessage, len(prompts))
	for i, p := range prompts {
		if err := p.Validate(); err != nil {
			panic(err.Error()) // declarations are constants: a programming error
		}
		if _, dup := s.promptByName[p.Name]; dup {
			panic("tools: prompt " + p.Name + " defined twice")
		}
		s.promptByName[p.Name] = p
		descs[i] = p.Descriptor()
	}
	b, err := brain.Marshal(descs)
	if err != nil {
		panic("tools: prompt descriptors: " + err.Error())
	}
	s.promptDesc = b
}

// Wing returns the wing the set serves.
func (s *Set) Wing() string { return s.st.Wing() }

// Limits returns the limits in force (defaults filled in).
func (s *Set) Limits() Limits { return s.lim }

// Descriptors returns the JSON array tools/list shows, in a fixed order:
// per tool {"name","description","inputSchema","annotations":{"title",
// "readOnlyHint","destructiveHint","idempotentHint","openWorldHint"},
// "_meta":{"brainstem/capability":"read|write|curate"}}. A tool disabled
// by configuration is left out. The caller must not modify the returned
// bytes.
func (s *Set) Descriptors() json.RawMessage { return s.desc }

// Specs returns the specs of the tools Descriptors lists, in its order.
func (s *Set) Specs() []*toolspec.Spec {
	var out []*toolspec.Spec
	for i := range s.tools {
		if !s.tools[i].off {
			out = append(out, s.tools[i].Spec)
		}
	}
	return out
}

// Lookup returns the named tool; t.Spec.Capability() is what it requires.
func (s *Set) Lookup(name string) (t *Tool, ok bool) {
	t, ok = s.byName[name]
	return t, ok
}

// Call runs the named tool for c with the raw JSON arguments args: it
// looks the tool up and checks c's capabilities once, then Run. The
// result is compact JSON; isError marks an error result
// {"error":{"code","message"}}.
func (s *Set) Call(ctx context.Context, c Caller, name string, args []byte) (result []byte, isError bool) {
	t, ok := s.byName[name]
	if !ok {
		return brain.EncodeError(brain.CodeUnknownTool, fmt.Sprintf("there is no tool %q in wing %q; the tools are: %s", name, s.Wing(), strings.Join(s.names(), ", "))), true
	}
	return s.Run(ctx, c, t, c.Caps.Has(t.Spec.Capability()), args)
}

// Run runs tool t (from Lookup) for c, as Call does. granted is the
// outcome of the call's one capability check (c.Caps has what t needs),
// made by whoever looked the tool up: a call not granted is answered the
// forbidden error.
func (s *Set) Run(ctx context.Context, c Caller, t *Tool, granted bool, args []byte) (result []byte, isError bool) {
	name := t.Spec.Name
	if !granted {
		return brain.EncodeError(brain.CodeForbidden, fmt.Sprintf("%s needs the %s capability in wing %q; you have: %s; ask a curator of the wing to grant it", name, t.Spec.Capability().Strongest(), s.Wing(), c.Caps)), true
	}
	if t.Spec.Writes() {
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
	v, err := s.run(ctx, t, c, args)
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

func (s *Set) run(ctx context.Context, t *Tool, c Caller, args []byte) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("tools: panic in tool", "tool", t.Spec.Name, "panic", r, "stack", string(debug.Stack()))
			v, err = nil, errors.New("tools: panic in tool")
		}
	}()
	return t.call(ctx, s, c, args)
}

func (s *Set) names() []string {
	out := make([]string, len(s.tools))
	for i := range s.tools {
		out[i] = s.tools[i].Spec.Name
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
