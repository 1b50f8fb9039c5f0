// Package toolspec is the one declaration of a brain tool: its arguments
// with their types, limits and required flags, the capability it needs,
// the arguments that route it to a wing, and its documentation. Everything
// else about a tool is derived from its Spec, and only from it:
//
//   - the JSON Schema published in tools/list (Schema) and the whole
//     descriptor with its _meta (Descriptor);
//   - the shard's single decode-and-validate pass over a call's arguments
//     (Decode: exact names, types, required arguments, limits, enumerations
//     and each argument's own rule, in one walk of the JSON), of a call in
//     the tool's own shape or in the predecessor's (Legacy: the one place
//     the earlier brain server's argument names are declared);
//   - the gateway's routing, its "does it write" and capability decisions,
//     read back from the descriptor a shard advertises (ParseMeta), so a
//     tool a shard adds reaches agents without a gateway change;
//   - the argument tables of docs/tools.md (ArgsTable, LegacyTable).
//
// The package is part of the contract (brain/): it imports the standard
// library and brain only.
package toolspec

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/brainstem/brainstem/brain"
)

// Type is the JSON type of an argument.
type Type string

// The argument types.
const (
	String  Type = "string"
	Integer Type = "integer"
	Boolean Type = "boolean"
	Object  Type = "object"
	Array   Type = "array"
)

// Route says how the gateway derives the wing of a call from an argument.
type Route string

// The routes.
const (
	RouteWing Route = "wing" // the value is the wing's name
	RouteRef  Route = "ref"  // a note reference: an id wing/hall/slug or a brain path (brain.RefWing)
	RoutePath Route = "path" // a brain path (wiki/<wing>/… or inbox/<wing>/…); an id here does not route
)

// Arg is one argument of a tool.
type Arg struct {
	Name string
	Type Type
	Desc string // for agents: published in the schema and in docs/tools.md
	// Required arguments must be present and not null; a required string
	// must not be blank, and a required array must not be empty.
	Required bool
	// Missing completes the refusal of a missing required argument:
	// "<name> is required: <Missing>". Without it a string says "<name> is
	// required and must not be blank".
	Missing string
	Enum    []string
	// Min and Max are published as minimum/maximum (integer), minLength/
	// maxLength (string) and minItems/maxItems (array). Decode refuses an
	// integer outside them (invalid_argument) and an array with more items
	// than Max (too_large); a string's own limit is MaxBytes.
	Min, Max *int
	// MaxBytes bounds a string in bytes (too_large), which JSON Schema's
	// maxLength (characters) cannot say; Desc should mention it.
	MaxBytes int
	// TooLarge completes the refusal of a value over MaxBytes or an array
	// over Max: "…; <TooLarge>".
	TooLarge string
	// Line refuses a string with a control character (a line break, a tab,
	// NUL): titles, reasons, tags.
	Line    bool
	Default any
	Pattern string // published; enforce it with Check
	// Check is the argument's own rule, run on a present string (or each
	// string of an array) after the others, with the argument's name as the
	// refusal names it ("pages[2].slug"); its error is returned as it is (a
	// *brain.Error). It is not published: say it in Desc.
	Check func(name, value string) error
	// Reported marks an array whose items the tool checks one by one,
	// reporting each bad item instead of refusing the call: Decode checks
	// only the items' names and types, and the tool calls CheckItem.
	Reported bool
	Route    Route // how this argument routes the call ("" for none)
	Items    *Arg  // an array's items
	Props    []Arg // an object's properties; nil with Object: any JSON object (decoded as json.RawMessage)
}

// Int returns a pointer to n, for Min and Max.
func Int(n int) *int { return &n }

// Spec is the declaration of one tool.
type Spec struct {
	Name, Title, Description string
	Needs                    brain.Caps // the capability a caller must hold (read when zero)
	ReadOnly, Destructive    bool       // annotations
	Idempotent               bool
	Args                     []Arg
	// Fanout names how the gateway runs the tool when no argument routes
	// it: "" refuses such a call (invalid_argument), FanoutSearch runs it
	// as a search over every wing the caller can read.
	Fanout string
	// CrossLinks, on a tool that changes where a note lives, has the
	// gateway report the links into the note from the caller's other wings,
	// which the tool's own wing cannot see or rewrite.
	CrossLinks *CrossLinks
	// Result is a value of the type of the tool's successful answer (its
	// zero value will do), a struct: the tool declares the outputSchema
	// derived from it (OutputSchema), and its answers carry their JSON as
	// structuredContent too. nil declares none.
	Result any
	// Legacy, when set, is the predecessor's shape of the call, which
	// Decode accepts beside the tool's own (legacy.go).
	Legacy *Legacy

	plans   sync.Map     // reflect.Type → *plan (decode.go)
	decodes atomic.Int64 // Unmarshal calls (Decodes)
}

// Decodes returns how many calls' arguments the spec has decoded: one per
// call, the shard's one decode of them (a test counts it).
func (s *Spec) Decodes() int64 { return s.decodes.Load() }

// CrossLinks says where a successful answer names the note (From, a string
// field of the answer object), which tool the gateway asks each other wing
// the caller can read with {"wing","id"} (Ask; its answer's "backlinks" are
// that wing's notes linking to the id), and the field of the answer it adds
// them in (Into, a sorted list of ids; Into+"_unchecked" lists the wings
// that could not say).
type CrossLinks struct {
	From string `json:"from"`
	Ask  string `json:"ask"`
	Into string `json:"into"`
}

// FanoutSearch is the Fanout of a tool searched across wings.
const FanoutSearch = "search"

// Capability returns the capability the tool needs (read when unset).
func (s *Spec) Capability() brain.Caps { return cmp.Or(s.Needs, brain.CapRead) }

// Writes reports whether the tool changes the wing: it needs write or
// curate. Such calls carry an idempotency key (brain.IdempotencyKeyArg).
func (s *Spec) Writes() bool { return Writes(s.Capability()) }

// Writes reports whether a tool needing need changes the wing.
func Writes(need brain.Caps) bool { return need&(brain.CapWrite|brain.CapCurate) != 0 }

// Routes returns the arguments that route the tool, in the order the
// gateway tries them: the tool's own, then those only its legacy shape
// has.
func (s *Spec) Routes() []RouteArg {
	var out []RouteArg
	for _, a := range s.Args {
		if a.Route != "" {
			out = append(out, RouteArg{Arg: a.Name, As: a.Route})
		}
	}
	if s.Legacy != nil {
		for _, a := range s.Legacy.Args {
			if a.Route != "" && !hasArg(s.Args, a.Name) {
				out = append(out, RouteArg{Arg: a.Name, As: a.Route})
			}
		}
	}
	return out
}

// RouteArg is one routing argument, as the descriptor's _meta carries it.
type RouteArg struct {
	Arg string `json:"arg"`
	As  Route  `json:"as"`
}

// Validate checks the declaration itself: names unique, types known,
// enumerations and limits on types that have them. A tool set calls it
// once at start; an error is a programming error.
func (s *Spec) Validate() error {
	if s.Name == "" || s.Description == "" {
		return fmt.Errorf("toolspec: a tool needs a name and a description")
	}
	if s.Fanout != "" && s.Fanout != FanoutSearch {
		return fmt.Errorf("toolspec: %s: unknown fanout %q", s.Name, s.Fanout)
	}
	if s.Result != nil {
		if t := reflect.TypeOf(s.Result); t.Kind() != reflect.Struct && (t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct) {
			return fmt.Errorf("toolspec: %s: Result is a %s; an answer is an object, so a struct", s.Name, t)
		}
	}
	if err := validateArgs(s.Name, s.Args); err != nil {
		return err
	}
	if s.Legacy != nil {
		return s.Legacy.validate(s)
	}
	return nil
}

func validateArgs(where string, args []Arg) error {
	seen := map[string]bool{}
	for _, a := range args {
		if a.Name == "" || seen[a.Name] {
			return fmt.Errorf("toolspec: %s: argument %q is unnamed or declared twice", where, a.Name)
		}
		seen[a.Name] = true
		if err := validateArg(where+"."+a.Name, a); err != nil {
			return err
		}
	}
	return nil
}

func validateArg(where string, a Arg) error {
	switch a.Type {
	case String, Integer, Boolean:
	case Array:
		if a.Items == nil {
			return fmt.Errorf("toolspec: %s: an array needs Items", where)
		}
		if a.Items.Type == Array {
			return fmt.Errorf("toolspec: %s: arrays of arrays are not supported", where)
		}
		return validateArg(where+"[]", *a.Items)
	case Object:
		return validateArgs(where, a.Props)
	default:
		return fmt.Errorf("toolspec: %s: unknown type %q", where, a.Type)
	}
	if a.Route != "" && (a.Type != String || (a.Route != RouteWing && a.Route != RouteRef && a.Route != RoutePath)) {
		return fmt.Errorf("toolspec: %s: only a string argument routes, as wing, ref or path", where)
	}
	if a.Type == Integer && (a.Min != nil || a.Max != nil) && a.Default == nil && !a.Required {
		return fmt.Errorf("toolspec: %s: an optional integer with limits needs a Default", where)
	}
	if (a.MaxBytes > 0 || a.Line || a.Check != nil || len(a.Enum) > 0) && a.Type != String {
		return fmt.Errorf("toolspec: %s: MaxBytes, Line, Check and Enum are for strings", where)
	}
	return nil
}

// ArgNames returns the names of args, comma-separated, in order.
func ArgNames(args []Arg) string {
	n := make([]string, len(args))
	for i, a := range args {
		n[i] = a.Name
	}
	return strings.Join(n, ", ")
}

// marshal encodes constant parts of a descriptor.
func marshal(v any) json.RawMessage {
	b, err := brain.Marshal(v)
	if err != nil {
		panic("toolspec: " + err.Error()) // built from declarations: a programming error
	}
	return b
}
