package toolspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Legacy is the predecessor's shape of a tool's call: how the callers of
// the earlier single-user brain server call the tool (issue 35;
// docs/decisions.md, "The predecessor's call shapes"). It is the one place
// the predecessor's argument names are known: Decode reads a call in
// either shape and hands the tool its own arguments, and docs/tools.md
// shows the shape from this declaration.
//
// Which shape a call is in is read from its top-level names, by the
// declarations alone:
//
//   - a name only the legacy shape declares marks it, a name only the
//     tool's own arguments declare marks Brainstem's; a call with both is
//     refused (invalid_argument), naming them;
//   - a name neither declares makes the call Brainstem's (its refusal then
//     lists Brainstem's arguments);
//   - a call of shared names only is in the legacy shape when the legacy
//     shape has no name of its own (brain_query's {query, limit}: the
//     predecessor's callers cannot be told apart otherwise), else in
//     Brainstem's.
type Legacy struct {
	// Args are the predecessor's arguments, declared like Spec.Args. An
	// argument named like one of the tool's is shared by both shapes (it
	// marks neither); it may differ here in its default, as the
	// predecessor's did. Args nil declares that the predecessor's call is
	// the tool's own (Doc then says what differs, e.g. in the answer).
	Args []Arg
	// Doc says, for docs/tools.md, how a legacy call maps onto the tool
	// and what its answer adds for the predecessor's callers.
	Doc string

	newArgs func() any                  // a new value of the legacy arguments' struct
	canon   func(legacy, dst any) error // legacy → the tool's arguments
}

// LegacyShape declares a legacy shape whose arguments decode into an L (a
// struct whose fields carry the legacy names as json tags). canon maps the
// decoded and checked legacy arguments onto the tool's own: the A that
// Decode is given, or the A it embeds. Its error is returned as it is (a
// refusal is a *brain.Error). Decode then checks the tool's arguments as
// for any call.
func LegacyShape[L, A any](args []Arg, doc string, canon func(l *L, a *A) error) *Legacy {
	return &Legacy{Args: args, Doc: doc,
		newArgs: func() any { return new(L) },
		canon: func(l, dst any) error {
			a, ok := embedded(reflect.ValueOf(dst), reflect.TypeFor[A]())
			if !ok {
				panic(fmt.Sprintf("toolspec: legacy arguments map onto %T, which %T is not and does not embed", new(A), dst)) // a programming error
			}
			return canon(l.(*L), a.Interface().(*A))
		}}
}

// embedded returns a pointer to the t that p (a pointer to a struct) is or
// embeds.
func embedded(p reflect.Value, t reflect.Type) (reflect.Value, bool) {
	if p.Type().Elem() == t {
		return p, true
	}
	if p.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	for i := range p.Elem().NumField() {
		if f := p.Elem().Type().Field(i); f.Anonymous && f.Type.Kind() == reflect.Struct {
			if v, ok := embedded(p.Elem().Field(i).Addr(), t); ok {
				return v, true
			}
		}
	}
	return reflect.Value{}, false
}

// ownNames reports whether the legacy shape declares a name the tool does
// not.
func (l *Legacy) ownNames(ours []Arg) bool {
	return slices.ContainsFunc(l.Args, func(a Arg) bool { return !hasArg(ours, a.Name) })
}

func hasArg(args []Arg, name string) bool {
	return slices.ContainsFunc(args, func(a Arg) bool { return a.Name == name })
}

// validate checks the legacy declaration: its arguments, the types of the
// names both shapes share, and that its struct holds them.
func (l *Legacy) validate(s *Spec) error {
	where := s.Name + " (legacy shape)"
	if l.Doc == "" {
		return fmt.Errorf("toolspec: %s needs a Doc", where)
	}
	if l.Args == nil {
		return nil
	}
	if l.newArgs == nil {
		return fmt.Errorf("toolspec: %s: declare it with LegacyShape", where)
	}
	if err := validateArgs(where, l.Args); err != nil {
		return err
	}
	for _, a := range l.Args {
		for _, o := range s.Args {
			if o.Name == a.Name && o.Type != a.Type {
				return fmt.Errorf("toolspec: %s: %s is a %s here and a %s in the tool's own shape", where, a.Name, a.Type, o.Type)
			}
		}
	}
	_, err := newPlan(l.Args, reflect.TypeOf(l.newArgs()).Elem())
	return err
}

// legacyKey caches the plan of the legacy arguments' struct.
type legacyKey struct{ t reflect.Type }

// isLegacy reads the shape of a call whose arguments are one JSON object
// (see Legacy). A name neither shape declares marks none, and the call is
// Brainstem's unless another name marks it; where the JSON cannot be read,
// the names before decide, and the decode of that shape refuses it.
func (s *Spec) isLegacy(args []byte) (bool, error) {
	l := s.Legacy
	if l == nil || l.Args == nil {
		return false, nil
	}
	old, ours, unknown := scanNames(args, s.Args, l.Args)
	switch {
	case len(old) > 0 && len(ours) > 0:
		return false, invalid("the arguments mix two shapes of %s: %s of the predecessor's (%s) and %s of Brainstem's (%s); call with one of them (docs/tools.md shows both)",
			s.Name, quoted(old), ArgNames(l.Args), quoted(ours), ArgNames(s.Args))
	case len(old) > 0:
		return true, nil
	case len(ours) > 0, unknown:
		return false, nil
	}
	return !l.ownNames(s.Args), nil
}

// scanNames walks the top-level names of a JSON object, up to the end or
// the first thing it cannot read: those only the legacy shape declares
// (old), those only the tool's own (ours), and whether one is neither's.
// The items of an array of objects both shapes declare count too, named
// "<array>[].<name>".
func scanNames(args []byte, own, legacy []Arg) (old, ours []string, unknown bool) {
	dec := json.NewDecoder(bytes.NewReader(args))
	if _, err := dec.Token(); err != nil {
		return nil, nil, false
	}
	mark := func(o, l []Arg, prefix, key string) {
		inOurs, inOld := hasArg(o, key), hasArg(l, key)
		switch {
		case !inOurs && !inOld:
			unknown = true
		case inOld && !inOurs && !slices.Contains(old, prefix+key):
			old = append(old, prefix+key)
		case inOurs && !inOld && !slices.Contains(ours, prefix+key):
			ours = append(ours, prefix+key)
		}
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := tok.(string)
		mark(own, legacy, "", key)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		o, l := itemProps(own, key), itemProps(legacy, key)
		if o == nil || l == nil {
			continue
		}
		var items []map[string]json.RawMessage
		_ = json.Unmarshal(v, &items) // not an array of objects: the decode refuses it
		for _, it := range items {
			for _, k := range slices.Sorted(maps.Keys(it)) { // sorted: the same message every time
				mark(o, l, key+"[].", k)
			}
		}
	}
	return old, ours, unknown
}

// itemProps are the properties of the items of args' array of objects
// named name, nil if there is none.
func itemProps(args []Arg, name string) []Arg {
	for _, a := range args {
		if a.Name == name && a.Type == Array && a.Items != nil {
			return a.Items.Props
		}
	}
	return nil
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// unmarshalLegacy decodes and checks a legacy call's arguments (one JSON
// object) and maps them onto dst.
func (s *Spec) unmarshalLegacy(args []byte, dst any) error {
	l := s.Legacy.newArgs()
	v := reflect.ValueOf(l).Elem()
	lp := s.cachedPlan(legacyKey{v.Type()}, s.Legacy.Args, v.Type(), s.Name+" (legacy shape)")
	if err := lp.decodeAll(args, v); err != nil {
		return err
	}
	if err := lp.check(v, ""); err != nil {
		return err
	}
	return s.Legacy.canon(l, dst)
}

// LegacyTable renders the markdown argument table of the legacy shape, as
// docs/tools.md shows it ("" when the tool declares none, or when the
// predecessor's call is the tool's own).
func (s *Spec) LegacyTable() string {
	if s.Legacy == nil || s.Legacy.Args == nil {
		return ""
	}
	return (&Spec{Args: s.Legacy.Args}).ArgsTable()
}
