package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/brainstem/brainstem/internal/jsontext"
)

// An edit of a JSON document that keeps every byte it does not change: a
// JSON object or array is held as its members (elements) in their order,
// each with the exact bytes around it — the whitespace before its key, the
// key as written, the colon and its spaces, the value's bytes, the
// whitespace after it — so that rendering an unchanged container gives
// back its bytes, and adding or removing a member touches only the bytes
// of that member. A new member copies the layout of its last sibling.

// errNotContainer: the bytes are not the JSON object or array expected.
var errNotContainer = errors.New("hooks: not the JSON object or array expected")

// jsonMember is a member of an object (key set) or an element of an array.
type jsonMember struct {
	lead   string // whitespace before the key (the value, in an array)
	key    string // decoded key
	rawKey string
	mid    string // between the key and the value: whitespace, ':', whitespace
	value  string // the value's bytes
	trail  string // whitespace after the value, before ',' or the closing bracket
}

// jsonContainer is an object or an array.
type jsonContainer struct {
	array   bool
	members []jsonMember
	inner   string // the whitespace inside an empty container
}

// parseContainer splits b, exactly one object or array (valid JSON, no
// whitespace around it), into its members.
func parseContainer(b string) (*jsonContainer, error) {
	if len(b) < 2 || !(b[0] == '{' && b[len(b)-1] == '}' || b[0] == '[' && b[len(b)-1] == ']') {
		return nil, errNotContainer
	}
	c := &jsonContainer{array: b[0] == '['}
	i := 1
	if j := jsontext.SkipSpace(b, i); j == len(b)-1 {
		c.inner = b[i:j]
		return c, nil
	}
	for {
		var m jsonMember
		start := jsontext.SkipSpace(b, i)
		m.lead = b[i:start]
		vs := start
		if !c.array {
			ke := skipValue(b, start)
			m.rawKey = b[start:ke]
			if err := json.Unmarshal([]byte(m.rawKey), &m.key); err != nil {
				return nil, fmt.Errorf("%w: key %s: %w", errNotContainer, m.rawKey, err)
			}
			vs = jsontext.SkipSpace(b, jsontext.SkipSpace(b, ke)+1) // past the colon
			m.mid = b[ke:vs]
		}
		ve := skipValue(b, vs)
		m.value = b[vs:ve]
		te := jsontext.SkipSpace(b, ve)
		m.trail = b[ve:te]
		c.members = append(c.members, m)
		if te >= len(b)-1 {
			return c, nil
		}
		i = te + 1 // past the comma
	}
}

// render is the container's bytes.
func (c *jsonContainer) render() string {
	var b strings.Builder
	open, close := "{", "}"
	if c.array {
		open, close = "[", "]"
	}
	b.WriteString(open)
	for i, m := range c.members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(m.lead + m.rawKey + m.mid + m.value + m.trail)
	}
	if len(c.members) == 0 {
		b.WriteString(c.inner)
	}
	b.WriteString(close)
	return b.String()
}

// find returns the index of the member key, or -1.
func (c *jsonContainer) find(key string) int {
	return slices.IndexFunc(c.members, func(m jsonMember) bool { return m.key == key })
}

// layout is how a document is indented: one unit per level, or compact
// (all on one line).
type layout struct {
	unit    string
	compact bool
}

// detectLayout reads the indentation of a document's top container.
func detectLayout(top *jsonContainer) layout {
	if len(top.members) == 0 {
		return layout{unit: "  "}
	}
	lead := top.members[0].lead
	i := strings.LastIndexByte(lead, '\n')
	if i < 0 {
		return layout{compact: true}
	}
	if unit := lead[i+1:]; unit != "" {
		return layout{unit: unit}
	}
	return layout{unit: "  "}
}

// indentOf is the indentation a lead leaves its line with.
func indentOf(lead string) string { return lead[strings.LastIndexByte(lead, '\n')+1:] }

// add appends a member (key is ignored in an array) whose value render
// renders given the indentation of its line; own is the indentation of the
// container's own line.
func (c *jsonContainer) add(key string, value func(indent string) string, own string, l layout) {
	m := jsonMember{mid: ": "}
	if !c.array {
		m.key, m.rawKey = key, jsonString(key)
	} else {
		m.mid = ""
	}
	if n := len(c.members); n > 0 {
		last := &c.members[n-1]
		m.lead, m.trail = last.lead, last.trail
		if !c.array {
			m.mid = last.mid
		}
		last.trail = ""
	} else if l.compact {
		if !c.array {
			m.mid = ":"
		}
	} else {
		m.lead, m.trail = "\n"+own+l.unit, "\n"+own
	}
	m.value = value(indentOf(m.lead))
	c.members = append(c.members, m)
}

// remove takes out member i; a neighbour takes over the bytes that stood
// between it and the brackets.
func (c *jsonContainer) remove(i int) {
	n := len(c.members)
	switch {
	case i == n-1 && i > 0:
		c.members[i-1].trail = c.members[i].trail
	case i == 0 && n > 1:
		c.members[1].lead = c.members[0].lead
	}
	c.members = append(c.members[:i], c.members[i+1:]...)
	if len(c.members) == 0 {
		c.inner = ""
	}
}

// skipValue returns the end of the value starting at i, in valid JSON.
func skipValue(b string, i int) int {
	switch b[i] {
	case '"':
		return min(jsontext.StringEnd(b, i), len(b))
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipValue(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default:
		j := i
		for j < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[j])) {
			j++
		}
		return j
	}
}

// renderValue renders v (JSON-encodable) for a line indented by indent,
// without HTML escaping.
func renderValue(v any, indent string, l layout) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if !l.compact {
		enc.SetIndent(indent, l.unit)
	}
	if enc.Encode(v) != nil {
		return "null" // the values rendered here are plain structs of strings
	}
	return strings.TrimSuffix(b.String(), "\n")
}
