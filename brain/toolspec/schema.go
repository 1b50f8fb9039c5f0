package toolspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Schema returns the JSON Schema of the tool's arguments: an object with
// the properties in declaration order (keys in a fixed order), the
// required ones listed, and no other property allowed.
func (s *Spec) Schema() json.RawMessage {
	var b bytes.Buffer
	writeObject(&b, s.Args)
	return b.Bytes()
}

func writeObject(b *bytes.Buffer, args []Arg) {
	b.WriteString(`{"type":"object","properties":{`)
	var req []string
	for i, a := range args {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(b, a.Name)
		b.WriteByte(':')
		writeArg(b, a)
		if a.Required {
			req = append(req, a.Name)
		}
	}
	b.WriteByte('}')
	if len(req) > 0 {
		b.WriteString(`,"required":`)
		writeJSON(b, req)
	}
	b.WriteString(`,"additionalProperties":false}`)
}

func writeArg(b *bytes.Buffer, a Arg) {
	member := func(key string, v any) { b.WriteString(`,"` + key + `":`); writeJSON(b, v) }
	if a.Type == Object && a.Props != nil {
		// A nested object with known properties: the same shape as the top.
		var inner bytes.Buffer
		writeObject(&inner, a.Props)
		s := inner.Bytes()
		b.Write(s[:len(s)-1])
		member("description", a.Desc)
		b.WriteByte('}')
		return
	}
	b.WriteString(`{"type":`)
	writeJSON(b, a.Type)
	if a.Desc != "" {
		member("description", a.Desc)
	}
	if len(a.Enum) > 0 {
		member("enum", a.Enum)
	}
	lo, hi := "minimum", "maximum"
	switch a.Type {
	case String:
		lo, hi = "minLength", "maxLength"
	case Array:
		lo, hi = "minItems", "maxItems"
	}
	if a.Min != nil {
		fmt.Fprintf(b, `,%q:%d`, lo, *a.Min)
	}
	if a.Max != nil {
		fmt.Fprintf(b, `,%q:%d`, hi, *a.Max)
	}
	if a.Pattern != "" {
		member("pattern", a.Pattern)
	}
	if a.Default != nil {
		member("default", a.Default)
	}
	if a.Items != nil {
		b.WriteString(`,"items":`)
		writeArg(b, *a.Items)
	}
	b.WriteByte('}')
}

func writeJSON(b *bytes.Buffer, v any) { b.Write(marshal(v)) }

// ArgsTable renders the markdown argument table of a tool, as docs/tools.md
// shows it. The properties of an array's objects appear as rows
// "parent[].child".
func (s *Spec) ArgsTable() string {
	var b strings.Builder
	b.WriteString("| argument | type | required | description |\n|---|---|---|---|\n")
	var rows func(prefix string, args []Arg)
	rows = func(prefix string, args []Arg) {
		for _, a := range args {
			req, typ := "no", string(a.Type)
			if a.Required {
				req = "yes"
			}
			if a.Type == Array && a.Items != nil {
				typ = string(a.Items.Type) + "[]"
			}
			fmt.Fprintf(&b, "| `%s%s` | %s | %s | %s |\n", prefix, a.Name, typ, req, strings.ReplaceAll(describe(a), "|", `\|`))
			if a.Items != nil && a.Items.Props != nil {
				rows(prefix+a.Name+"[].", a.Items.Props)
			}
		}
	}
	rows("", s.Args)
	return b.String()
}

// describe is the description plus the schema's constraints in words.
func describe(a Arg) string {
	var extra []string
	if len(a.Enum) > 0 {
		extra = append(extra, "one of "+strings.Join(a.Enum, ", "))
	}
	switch {
	case a.Type == Integer && a.Min != nil && a.Max != nil:
		extra = append(extra, fmt.Sprintf("%d..%d", *a.Min, *a.Max))
	case a.Type == Array && a.Max != nil:
		extra = append(extra, fmt.Sprintf("at most %d items", *a.Max))
	}
	if a.Default != nil {
		extra = append(extra, fmt.Sprintf("default %v", a.Default))
	}
	if len(extra) == 0 {
		return a.Desc
	}
	return a.Desc + " (" + strings.Join(extra, "; ") + ")"
}
