package frontmatter

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// encodeNode renders n with yaml.v3 and returns it without the final line
// ending. A block scalar ("|", ">") is never one line, even when yaml.v3
// writes its header alone.
func encodeNode(n *yaml.Node) (string, error) {
	b, err := yaml.Marshal(n)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidYAML, err)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// oneLine reports whether s is a single line free of every character YAML
// or this package treats as a line break.
func oneLine(s string) bool {
	return !strings.ContainsAny(s, "\n\r\u0085\u2028\u2029")
}

// scalarText renders a string value for "key: <text>": plain when YAML
// reads it back as the same string (or, for RFC 3339 timestamps, as the
// timestamp written the same way, so new notes look like hand-written
// ones), otherwise quoted by yaml.v3, and double-quoted with escapes whenever
// the quoted form would span several lines.
func scalarText(v string) (string, error) {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
	out, err := encodeNode(n)
	if err != nil {
		return "", err
	}
	if oneLine(out) && !strings.HasPrefix(out, "|") && !strings.HasPrefix(out, ">") {
		if out != v && isPlainTimestamp(v) {
			return v, nil
		}
		return out, nil
	}
	n.Style = yaml.DoubleQuotedStyle
	out, err = encodeNode(n)
	if err != nil {
		return "", err
	}
	if !oneLine(out) {
		return "", fmt.Errorf("%w: cannot write %q on one line", ErrInvalidYAML, v)
	}
	return out, nil
}

// isPlainTimestamp reports whether v, written plain, is read by YAML as a
// timestamp scalar whose text is exactly v.
func isPlainTimestamp(v string) bool {
	if v == "" || !oneLine(v) || len(v) > 64 {
		return false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("k: "+v+"\n"), &doc); err != nil || len(doc.Content) != 1 {
		return false
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode || len(m.Content) != 2 {
		return false
	}
	s := m.Content[1]
	return s.Kind == yaml.ScalarNode && s.Style == 0 && s.ShortTag() == "!!timestamp" && s.Value == v &&
		s.LineComment == "" && m.Content[0].LineComment == ""
}

// listText renders a flow list "[a, b]" of strings.
func listText(vals []string) (string, error) {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
	for _, v := range vals {
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v})
	}
	out, err := encodeNode(seq)
	if err != nil {
		return "", err
	}
	if oneLine(out) {
		return out, nil
	}
	for _, it := range seq.Content {
		it.Style = yaml.DoubleQuotedStyle
	}
	out, err = encodeNode(seq)
	if err != nil {
		return "", err
	}
	if !oneLine(out) {
		return "", fmt.Errorf("%w: cannot write the list on one line", ErrInvalidYAML)
	}
	return out, nil
}

// keyText renders a key for "<key>: value"; it must be one line usable as
// an implicit key.
func keyText(k *yaml.Node) (string, error) {
	out, err := encodeNode(k)
	if err != nil {
		return "", err
	}
	if !oneLine(out) || strings.HasPrefix(out, "?") || strings.HasPrefix(out, "|") || strings.HasPrefix(out, ">") {
		k.Style = yaml.DoubleQuotedStyle
		if out, err = encodeNode(k); err != nil {
			return "", err
		}
	}
	if !oneLine(out) || len(out) > 1000 {
		return "", fmt.Errorf("%w: key %q cannot be written on one line", ErrInvalidKey, k.Value)
	}
	return out, nil
}
