package history

import (
	"strconv"
	"strings"
)

// The trailers of a commit made by the engine, in the order they are
// written. Each is written only when its value is non-empty.
const (
	trailerWing      = "Brainstem-Wing"
	trailerAction    = "Brainstem-Action"
	trailerTool      = "Brainstem-Tool"
	trailerReason    = "Brainstem-Reason"
	trailerKey       = "Brainstem-Key"
	trailerMovedFrom = "Brainstem-Moved-From"
	trailerSeq       = "Brainstem-Seq"
	trailerPrefix    = "Brainstem-"
)

// Actions the engine itself records.
const (
	ActionInitial = "initial" // the first commit of a brain's history
	ActionOutside = "outside" // a change made behind the shard's back, or by a person's commit
	ActionPurge   = "purge"   // the audit commit of a purge
)

// meta is what a commit message says: the subject line, the reason
// paragraph and the Brainstem trailers.
type meta struct {
	Subject   string
	Reason    string // the body paragraph; the trailer holds it on one line
	Wing      string
	Action    string
	Tool      string
	Key       string
	MovedFrom []string
	Seq       uint64
	ours      bool // the message had Brainstem trailers
}

// oneLine makes s safe for a subject or a trailer value: line breaks and
// other control characters become spaces, and the ends are trimmed.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return strings.TrimSpace(s)
	}
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s))
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// paragraph makes s safe for the reason paragraph: line endings are
// normalised, blank lines (which would end the paragraph) are dropped and
// control characters other than the newline become spaces.
func paragraph(s string) string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if l = oneLine(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// message renders m as a commit message: the subject, a blank line, the
// reason (if any) and a blank line, then the trailers.
func (m meta) message() string {
	var b strings.Builder
	b.WriteString(oneLine(m.Subject))
	b.WriteString("\n\n")
	if r := paragraph(m.Reason); r != "" {
		b.WriteString(r)
		b.WriteString("\n\n")
	}
	put := func(k, v string) {
		if v = oneLine(v); v != "" {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	put(trailerWing, m.Wing)
	put(trailerAction, m.Action)
	put(trailerTool, m.Tool)
	put(trailerReason, m.Reason)
	put(trailerKey, m.Key)
	for _, f := range m.MovedFrom {
		put(trailerMovedFrom, f)
	}
	if m.Seq > 0 {
		put(trailerSeq, strconv.FormatUint(m.Seq, 10))
	}
	return b.String()
}

// parseMessage reads a commit message. The trailers are the lines of the
// last paragraph when every line of it is a "Token: value" trailer and
// the paragraph is not the subject; only Brainstem trailers are kept. A
// message without them (a person's commit) yields the subject alone, with
// ours false.
func parseMessage(msg string) meta {
	msg = strings.ReplaceAll(msg, "\r\n", "\n")
	lines := strings.Split(strings.TrimRight(msg, "\n"), "\n")
	m := meta{Subject: oneLine(lines[0])}
	last := len(lines)
	start := last
	for start > 0 && strings.TrimSpace(lines[start-1]) != "" {
		start--
	}
	if start == 0 || start == last {
		return m // the last paragraph is the subject's, or there is none
	}
	for _, l := range lines[start:] {
		if _, _, ok := trailerLine(l); !ok {
			return m
		}
	}
	for _, l := range lines[start:] {
		k, v, _ := trailerLine(l)
		if !strings.HasPrefix(k, trailerPrefix) {
			continue
		}
		m.ours = true
		switch k {
		case trailerWing:
			m.Wing = v
		case trailerAction:
			m.Action = v
		case trailerTool:
			m.Tool = v
		case trailerReason:
			m.Reason = v
		case trailerKey:
			m.Key = v
		case trailerMovedFrom:
			m.MovedFrom = append(m.MovedFrom, v)
		case trailerSeq:
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				m.Seq = n
			}
		}
	}
	return m
}

// trailerLine splits "Token: value", where the token is letters, digits
// and dashes.
func trailerLine(l string) (key, value string, ok bool) {
	k, v, found := strings.Cut(l, ": ")
	if !found || k == "" {
		return "", "", false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return "", "", false
		}
	}
	return k, oneLine(v), true
}

// maxSubject bounds the subject of a person's commit kept as its reason.
const maxSubject = 200

// subject is the reason of a commit without Brainstem trailers (a
// person's, pulled from a remote): its message's first line, bounded, so
// that brain_history shows why they changed the note. Commits of the
// engine keep their own reason.
func subject(m meta, msg string) string {
	if m.ours {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	line = strings.TrimSpace(line)
	if len(line) > maxSubject {
		line = strings.ToValidUTF8(line[:maxSubject], "")
	}
	return line
}
