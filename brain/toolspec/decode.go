package toolspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"github.com/brainstem/brainstem/brain"
)

// Decode decodes a call's JSON arguments into dst, a pointer to a struct
// whose fields carry the arguments' names as `json` tags (embedded structs
// count as their fields), and validates them, in one walk of the JSON:
//
//   - the arguments are one JSON object (empty or null arguments are {});
//   - every key is exactly the name of an argument: encoding/json would
//     match "LIMIT" or "ſlug" (long s) to a field, Decode refuses them as
//     unknown arguments, at any depth;
//   - every value has its argument's type (an integer decodes into an int,
//     or into an *int left nil when absent);
//   - a call in the predecessor's shape (Spec.Legacy) is decoded and
//     checked by that shape's declaration and mapped onto dst, which is
//     then checked as any call;
//   - then, in declaration order: required arguments are present (a string
//     not blank, an array not empty), strings within MaxBytes, on one line
//     when Line, in Enum, and passing Check; integers within Min and Max;
//     arrays within Max items, each item checked as its own argument.
//
// An absent integer takes its Default. A refusal is a *brain.Error with
// invalid_argument (too_large for a limit) whose message names the
// argument. dst is left partly filled on error. Decode is Unmarshal then
// Check, for a caller with a check of its own between the two.
func (s *Spec) Decode(args []byte, dst any) error {
	if err := s.Unmarshal(args, dst); err != nil {
		return err
	}
	return s.Check(dst)
}

// Check validates the values Unmarshal decoded into dst (see Decode).
func (s *Spec) Check(dst any) error {
	v := reflect.ValueOf(dst).Elem()
	return s.planFor(v.Type()).check(v, "")
}

// Unmarshal is the first half of Decode: the walk of the JSON, its names
// and its types, without the checks of the values.
func (s *Spec) Unmarshal(args []byte, dst any) error {
	s.decodes.Add(1)
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("toolspec: Decode(%T): want a pointer to a struct", dst)) // a programming error
	}
	p := s.planFor(v.Elem().Type())
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		return invalid("the arguments must be a JSON object")
	}
	switch legacy, err := s.isLegacy(trimmed); {
	case err != nil:
		return err
	case legacy:
		return s.unmarshalLegacy(trimmed, dst)
	}
	return p.decodeAll(trimmed, v.Elem())
}

// decodeAll decodes args, one JSON object and nothing after it, into v.
func (p *plan) decodeAll(args []byte, v reflect.Value) error {
	dec := json.NewDecoder(bytes.NewReader(args))
	if err := p.decodeObject(dec, v, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("the arguments must be one JSON object, with nothing after it")
	}
	return nil
}

// plan is how the arguments of one level map onto a struct type.
type plan struct {
	args   []Arg
	fields []fieldPlan // one per argument, in declaration order
}

type fieldPlan struct {
	index []int // of the struct field (through embedded structs)
	elem  *plan // an object's properties, or an array's object items
}

// planFor returns the plan of the spec's arguments onto t, built once.
func (s *Spec) planFor(t reflect.Type) *plan { return s.cachedPlan(t, s.Args, t, s.Name) }

// cachedPlan returns the plan of args onto t, built once and kept under
// key; where names the declaration in the panic of a programming error.
func (s *Spec) cachedPlan(key any, args []Arg, t reflect.Type, where string) *plan {
	if p, ok := s.plans.Load(key); ok {
		return p.(*plan)
	}
	np, err := newPlan(args, t)
	if err != nil {
		panic(fmt.Sprintf("toolspec: %s: %v", where, err)) // declarations and types disagree: a programming error
	}
	p, _ := s.plans.LoadOrStore(key, np)
	return p.(*plan)
}

func newPlan(args []Arg, t reflect.Type) (*plan, error) {
	p := &plan{args: args, fields: make([]fieldPlan, len(args))}
	for i, a := range args {
		f, ok := fieldByTag(t, a.Name)
		if !ok {
			return nil, fmt.Errorf("%s has no field tagged json:%q", t, a.Name)
		}
		fp := fieldPlan{index: f.Index}
		ft := f.Type
		var err error
		switch {
		case a.Type == Object && a.Props != nil:
			fp.elem, err = newPlan(a.Props, ft)
		case a.Type == Array && a.Items.Props != nil:
			fp.elem, err = newPlan(a.Items.Props, ft.Elem())
		default:
			err = checkKind(a, ft)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Name, err)
		}
		p.fields[i] = fp
	}
	return p, nil
}

func checkKind(a Arg, t reflect.Type) error {
	if a.Type == Integer && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Int && a.Default == nil {
		return nil // an optional integer (without limits) whose absence the tool tells from 0: nil when absent or null
	}
	want := map[Type]reflect.Kind{String: reflect.String, Integer: reflect.Int, Boolean: reflect.Bool, Array: reflect.Slice, Object: reflect.Slice}[a.Type]
	if t.Kind() != want || (a.Type == Object && t != reflect.TypeFor[json.RawMessage]()) {
		return fmt.Errorf("field type %s does not hold a %s", t, a.Type)
	}
	return nil
}

// fieldByTag finds the field whose json tag names name, looking into
// embedded structs as encoding/json does.
func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	return t.FieldByNameFunc(func(n string) bool {
		f, _ := t.FieldByName(n)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		return tag == name
	})
}

// decodeObject decodes one JSON object of the plan's arguments into v.
func (p *plan) decodeObject(dec *json.Decoder, v reflect.Value, where string) error {
	if err := expectDelim(dec, '{', where); err != nil {
		return err
	}
	p.defaults(v)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxErr(err)
		}
		key, _ := tok.(string)
		i := slices.IndexFunc(p.args, func(a Arg) bool { return a.Name == key })
		if i < 0 {
			return p.unknown(key, where)
		}
		if err := p.decodeValue(dec, v, i, where); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing brace
	return syntaxErr(err)
}

// defaults sets every integer argument with a Default, before the object's
// keys are decoded over them: an absent (or null) integer keeps it.
func (p *plan) defaults(v reflect.Value) {
	for i := range p.args {
		if a := &p.args[i]; a.Type == Integer && a.Default != nil {
			v.FieldByIndex(p.fields[i].index).SetInt(int64(defaultInt(a)))
		}
	}
}

func (p *plan) unknown(key, where string) error {
	if where == "" {
		return invalid("unknown argument %q; this tool accepts: %s (names are case-sensitive)", key, ArgNames(p.args))
	}
	return invalid("unknown argument %q in %s; it accepts: %s (names are case-sensitive)", key, strings.TrimSuffix(where, "."), ArgNames(p.args))
}

// decodeValue decodes the value of argument i into its field of v.
func (p *plan) decodeValue(dec *json.Decoder, v reflect.Value, i int, where string) error {
	a, fp := &p.args[i], p.fields[i]
	field := v.FieldByIndex(fp.index)
	name := where + a.Name
	switch {
	case fp.elem != nil && a.Type == Object:
		return fp.elem.decodeObject(dec, field, name+".")
	case fp.elem != nil:
		return fp.elem.decodeArray(dec, field, name)
	case a.Type == Integer:
		var n *int
		if err := dec.Decode(&n); err != nil {
			return typeErr(name, err)
		}
		switch {
		case field.Kind() == reflect.Pointer:
			field.Set(reflect.ValueOf(n))
		case n != nil:
			field.SetInt(int64(*n))
		}
		return nil
	}
	if err := dec.Decode(field.Addr().Interface()); err != nil {
		return typeErr(name, err)
	}
	return nil
}

// decodeArray decodes a JSON array of objects (or null) into the slice
// field, each element decoded with the plan.
func (p *plan) decodeArray(dec *json.Decoder, field reflect.Value, name string) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxErr(err)
	}
	if tok == nil {
		return nil // null: absent
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return invalid("argument %q must be an array, not %s", name, tokenKind(tok))
	}
	field.SetLen(0)
	for j := 0; dec.More(); j++ {
		field.Set(reflect.Append(field, reflect.New(field.Type().Elem()).Elem()))
		if err := p.decodeObject(dec, field.Index(j), fmt.Sprintf("%s[%d].", name, j)); err != nil {
			return err
		}
	}
	_, err = dec.Token() // the closing bracket
	return syntaxErr(err)
}

func defaultInt(a *Arg) int {
	switch d := a.Default.(type) {
	case int:
		return d
	case float64:
		return int(d)
	}
	return 0
}

func expectDelim(dec *json.Decoder, want json.Delim, where string) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return invalid("argument %q must be an object, not %s", strings.TrimSuffix(where, "."), tokenKind(tok))
	}
	return nil
}

func tokenKind(tok json.Token) string {
	switch tok := tok.(type) {
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	case json.Delim:
		if tok == '[' {
			return "array"
		}
		return "object"
	}
	return "value"
}

// WrongType is the refusal of an argument whose JSON value (a "number", a
// "string", an "object"… as encoding/json names them) is not of its type:
// the shard's and, for a routing argument, the gateway's, word for word.
func WrongType(name string, want Type, got string) error {
	article := map[Type]string{String: "a string", Integer: "an integer", Boolean: "a boolean", Array: "an array", Object: "an object"}[want]
	return invalid("argument %q must be %s, not %s", name, article, got)
}

// typeErr maps a failure to decode one value.
func typeErr(name string, err error) error {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return invalid("argument %q must be %s, not %s", name, jsonType(te.Type), te.Value)
	}
	return syntaxErr(err)
}

// syntaxErr maps a failure of the JSON itself; nil stays nil.
func syntaxErr(err error) error {
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return invalid("the arguments are not valid JSON: %v (at byte %d)", err, se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return invalid("the arguments are not valid JSON: they end too early")
	}
	return invalid("the arguments cannot be decoded: %v", err)
}

func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		if t == reflect.TypeFor[json.RawMessage]() {
			return "an object"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Float64:
		return "a number"
	}
	return "a " + t.Kind().String()
}

// check validates decoded values, in declaration order.
func (p *plan) check(v reflect.Value, where string) error {
	for i := range p.args {
		a, fp := &p.args[i], p.fields[i]
		if err := p.checkField(a, fp, v.FieldByIndex(fp.index), where+a.Name); err != nil {
			return err
		}
	}
	return nil
}

func (p *plan) checkField(a *Arg, fp fieldPlan, f reflect.Value, name string) error {
	switch a.Type {
	case String:
		return checkString(a, name, f.String())
	case Integer:
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				if a.Required {
					return missing(a, name)
				}
				return nil
			}
			f = f.Elem()
		}
		return checkInt(a, name, int(f.Int()))
	case Object:
		raw, _ := f.Interface().(json.RawMessage)
		switch {
		case len(raw) == 0 || string(raw) == "null":
			if a.Required {
				return missing(a, name)
			}
		case raw[0] != '{':
			return invalid("argument %q must be a JSON object, not %s", name, string(raw[:min(len(raw), 20)]))
		}
		return nil
	case Array:
		return p.checkArray(a, fp, f, name)
	}
	return nil
}

func (p *plan) checkArray(a *Arg, fp fieldPlan, f reflect.Value, name string) error {
	n := f.Len()
	if a.Required && n == 0 {
		return missing(a, name)
	}
	if a.Max != nil && n > *a.Max {
		return tooLarge(a, "%s has %d items, the limit is %d", name, n, *a.Max)
	}
	for j := 0; j < n && !a.Reported; j++ {
		item := fmt.Sprintf("%s[%d]", name, j)
		var err error
		if fp.elem != nil {
			err = fp.elem.check(f.Index(j), item+".")
		} else {
			err = p.checkField(a.Items, fieldPlan{}, f.Index(j), item)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// CheckItem checks item i of the Reported array argument arg (a pointer to
// the item as decoded) as Decode checks the items of other arrays: the
// refusal names "arg[i].field".
func (s *Spec) CheckItem(arg string, i int, item any) error {
	for _, a := range s.Args {
		if a.Name != arg || a.Items == nil || a.Items.Props == nil {
			continue
		}
		v := reflect.ValueOf(item).Elem()
		p := s.cachedPlan(itemKey{arg, v.Type()}, a.Items.Props, v.Type(), s.Name+"."+arg)
		return p.check(v, fmt.Sprintf("%s[%d].", arg, i))
	}
	panic(fmt.Sprintf("toolspec: %s has no array of objects %q", s.Name, arg))
}

// itemKey caches the plan of a Reported array's items.
type itemKey struct {
	arg string
	t   reflect.Type
}

func checkString(a *Arg, name, s string) error {
	if strings.TrimSpace(s) == "" {
		if a.Required {
			return missing(a, name)
		}
		if s == "" {
			return nil
		}
	}
	if a.MaxBytes > 0 && len(s) > a.MaxBytes {
		return tooLarge(a, "%s is %d bytes, over the %d-byte limit", name, len(s), a.MaxBytes)
	}
	if a.Line {
		if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
			return invalid("%s must be one line without control characters (found %q at byte %d)", name, s[i:i+1], i)
		}
	}
	if len(a.Enum) > 0 && !slices.Contains(a.Enum, s) {
		return invalid("%s must be one of %s, not %q", name, strings.Join(a.Enum, ", "), s)
	}
	if a.Check != nil {
		return a.Check(name, s)
	}
	return nil
}

func checkInt(a *Arg, name string, n int) error {
	switch {
	case a.Min != nil && a.Max != nil && (n < *a.Min || n > *a.Max):
		return invalid("%s must be between %d and %d, got %d", name, *a.Min, *a.Max, n)
	case a.Min != nil && n < *a.Min:
		return invalid("%s must be at least %d, got %d", name, *a.Min, n)
	case a.Max != nil && n > *a.Max:
		return invalid("%s must be at most %d, got %d", name, *a.Max, n)
	}
	return nil
}

func missing(a *Arg, name string) error {
	switch {
	case a.Missing != "":
		return invalid("%s is required: %s", name, a.Missing)
	case a.Type == String:
		return invalid("%s is required and must not be blank", name)
	}
	return invalid("%s is required", name)
}

func invalid(format string, args ...any) error {
	return brain.Errorf(brain.CodeInvalidArgument, format, args...)
}

func tooLarge(a *Arg, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if a.TooLarge != "" {
		msg += ": " + a.TooLarge
	}
	return brain.Errorf(brain.CodeTooLarge, "%s", msg)
}
