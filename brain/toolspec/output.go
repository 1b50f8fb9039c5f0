package toolspec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"reflect"
	"strings"
)

// OutputSchema returns the JSON Schema of the tool's successful answer,
// derived from the Go type of Spec.Result the way encoding/json encodes it:
// an object per struct (its fields in declaration order, embedded structs'
// fields inline, the fields without omitempty required), arrays for slices
// and objects for maps (never null: a type union such as ["array","null"]
// is not portable across MCP clients, so the tools answer [] and {}, not
// the null of a nil slice or map; TestStructuredResultsWhenEmpty holds the
// empty answers to it), and no
// constraint for a value that encodes itself (json.Marshaler,
// json.RawMessage) or an interface. Other properties are allowed, so an
// answer may gain fields (the gateway adds some, Spec.CrossLinks) without
// breaking a client that validates. nil when the spec declares no Result.
func (s *Spec) OutputSchema() json.RawMessage {
	if s.Result == nil {
		return nil
	}
	return SchemaOf(s.Result)
}

// SchemaOf is the JSON Schema of the encoding of v's type, as
// OutputSchema derives it.
func SchemaOf(v any) json.RawMessage {
	var b bytes.Buffer
	writeType(&b, reflect.TypeOf(v), map[reflect.Type]bool{})
	return b.Bytes()
}

var (
	marshalerType = reflect.TypeFor[json.Marshaler]()
	rawType       = reflect.TypeFor[json.RawMessage]()
)

func writeType(b *bytes.Buffer, t reflect.Type, seen map[reflect.Type]bool) {
	if t == rawType || t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		b.WriteString(`{}`)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		writeType(b, t.Elem(), seen)
	case reflect.String:
		b.WriteString(`{"type":"string"}`)
	case reflect.Bool:
		b.WriteString(`{"type":"boolean"}`)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(`{"type":"integer"}`)
	case reflect.Float32, reflect.Float64:
		b.WriteString(`{"type":"number"}`)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			b.WriteString(`{"type":"string"}`) // base64, as encoding/json writes bytes
			return
		}
		b.WriteString(`{"type":"array","items":`)
		writeType(b, t.Elem(), seen)
		b.WriteByte('}')
	case reflect.Map:
		b.WriteString(`{"type":"object","additionalProperties":`)
		writeType(b, t.Elem(), seen)
		b.WriteByte('}')
	case reflect.Struct:
		if seen[t] { // a recursive type: no constraint below the first level
			b.WriteString(`{}`)
			return
		}
		seen[t] = true
		defer delete(seen, t)
		b.WriteString(`{"type":"object","properties":{`)
		var req []string
		first := true
		writeFields(b, t, seen, &req, &first)
		b.WriteByte('}')
		if len(req) > 0 {
			b.WriteString(`,"required":`)
			writeJSON(b, req)
		}
		b.WriteByte('}')
	default:
		b.WriteString(`{}`)
	}
}

func writeFields(b *bytes.Buffer, t reflect.Type, seen map[reflect.Type]bool, req *[]string, first *bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			writeFields(b, f.Type, seen, req, first)
			continue
		}
		if !f.IsExported() {
			continue
		}
		name = cmp.Or(name, f.Name)
		if !*first {
			b.WriteByte(',')
		}
		*first = false
		writeJSON(b, name)
		b.WriteByte(':')
		writeType(b, f.Type, seen)
		if !strings.Contains(","+opts+",", ",omitempty,") && !strings.Contains(","+opts+",", ",omitzero,") {
			*req = append(*req, name)
		}
	}
}
