package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// prop is one argument of a tool: it renders to a JSON Schema property (in
// a fixed key order) and to a row of the argument table in docs/tools.md.
type prop struct {
	name     string
	typ      string // "string", "integer", "boolean", "object", "array"
	desc     string
	required bool
	enum     []string
	min, max *int // minimum/maximum (integer), minLength/maxLength (string), minItems/maxItems (array)
	def      any
	pattern  string
	items    *prop  // array items
	props    []prop // object properties (nil: any object)
}

func ip(n int) *int { return &n }

// schema returns the JSON Schema of an object with props: properties in
// order, the required ones listed, no other property allowed.
func schema(props []prop) json.RawMessage {
	var b bytes.Buffer
	writeObject(&b, props, true)
	return b.Bytes()
}

func writeObject(b *bytes.Buffer, props []prop, strict bool) {
	b.WriteString(`{"type":"object","properties":{`)
	var req []string
	for i, p := range props {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, p.name)
		b.WriteByte(':')
		writeProp(b, p)
		if p.required {
			req = append(req, p.name)
		}
	}
	b.WriteByte('}')
	if len(req) > 0 {
		b.WriteString(`,"required":`)
		writeJSON(b, req)
	}
	if strict {
		b.WriteString(`,"additionalProperties":false`)
	}
	b.WriteByte('}')
}

func writeProp(b *bytes.Buffer, p prop) {
	if p.typ == "object" && p.props != nil {
		// Nested object with known properties: same shape as the top level.
		var inner bytes.Buffer
		writeObject(&inner, p.props, true)
		s := inner.Bytes()
		b.Write(s[:len(s)-1])
		b.WriteString(`,"description":`)
		writeString(b, p.desc)
		b.WriteByte('}')
		return
	}
	b.WriteString(`{"type":`)
	writeString(b, p.typ)
	if p.desc != "" {
		b.WriteString(`,"description":`)
		writeString(b, p.desc)
	}
	if len(p.enum) > 0 {
		b.WriteString(`,"enum":`)
		writeJSON(b, p.enum)
	}
	lo, hi := "minimum", "maximum"
	switch p.typ {
	case "string":
		lo, hi = "minLength", "maxLength"
	case "array":
		lo, hi = "minItems", "maxItems"
	}
	if p.min != nil {
		fmt.Fprintf(b, `,%q:%d`, lo, *p.min)
	}
	if p.max != nil {
		fmt.Fprintf(b, `,%q:%d`, hi, *p.max)
	}
	if p.pattern != "" {
		b.WriteString(`,"pattern":`)
		writeString(b, p.pattern)
	}
	if p.def != nil {
		b.WriteString(`,"default":`)
		writeJSON(b, p.def)
	}
	if p.items != nil {
		b.WriteString(`,"items":`)
		writeProp(b, *p.items)
	}
	b.WriteByte('}')
}

func writeString(b *bytes.Buffer, s string) { writeJSON(b, s) }

func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("tools: schema value %v: %v", v, err)) // constant input: a programming error
	}
	b.Truncate(b.Len() - 1) // Encode's newline
}

// ArgsTable renders the markdown argument table of a tool, as docs/tools.md
// shows it. Nested object properties appear as rows "parent[].child".
func argsTable(props []prop) string {
	var b strings.Builder
	b.WriteString("| argument | type | required | description |\n|---|---|---|---|\n")
	var rows func(prefix string, ps []prop)
	rows = func(prefix string, ps []prop) {
		for _, p := range ps {
			req := "no"
			if p.required {
				req = "yes"
			}
			fmt.Fprintf(&b, "| `%s%s` | %s | %s | %s |\n", prefix, p.name, typeName(p), req, strings.ReplaceAll(describe(p), "|", `\|`))
			if p.items != nil && p.items.props != nil {
				rows(prefix+p.name+"[].", p.items.props)
			}
		}
	}
	rows("", props)
	return b.String()
}

func typeName(p prop) string {
	if p.typ == "array" && p.items != nil {
		return p.items.typ + "[]"
	}
	return p.typ
}

// describe is the description plus the schema's constraints in words.
func describe(p prop) string {
	var extra []string
	if len(p.enum) > 0 {
		extra = append(extra, "one of "+strings.Join(p.enum, ", "))
	}
	switch {
	case p.typ == "integer" && p.min != nil && p.max != nil:
		extra = append(extra, fmt.Sprintf("%d..%d", *p.min, *p.max))
	case p.typ == "array" && p.max != nil:
		extra = append(extra, fmt.Sprintf("at most %d items", *p.max))
	}
	if p.def != nil {
		extra = append(extra, fmt.Sprintf("default %v", p.def))
	}
	if len(extra) == 0 {
		return p.desc
	}
	return p.desc + " (" + strings.Join(extra, "; ") + ")"
}
