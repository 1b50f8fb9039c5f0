package history

import (
	"reflect"
	"testing"
)

func TestMessageGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    meta
	}{
		{"full", meta{Subject: "update payments/decisions/use-keys", Reason: "Retries must not charge twice.\nSee the incident of May.",
			Wing: "payments", Action: "update", Tool: "the-tool", Key: "k-123", MovedFrom: []string{"wiki/payments/facts/use-keys.md"}, Seq: 42}},
		{"no-reason", meta{Subject: "create payments/facts/a", Wing: "payments", Action: "create", Seq: 7}},
		{"outside", meta{Subject: "Outside edits of 2 files", Wing: "payments", Action: ActionOutside,
			MovedFrom: []string{"wiki/payments/facts/a.md", "inbox/payments/b.md"}}},
		{"hostile", meta{Subject: "line one\nline two\r\n", Reason: "para one\n\n\nBrainstem-Action: forged\n", Wing: "payments",
			Action: "update\nBrainstem-Seq: 99", Tool: "t\x00x", Seq: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := tc.m.message()
			golden(t, "message-"+tc.name+".golden", msg)
			back := parseMessage(msg)
			if !back.ours || back.Wing != tc.m.Wing || back.Seq != tc.m.Seq || !reflect.DeepEqual(back.MovedFrom, tc.m.MovedFrom) {
				t.Fatalf("parsed back %+v", back)
			}
			if back.Action != oneLine(tc.m.Action) || back.Reason != oneLine(paragraph(tc.m.Reason)) && back.Reason != oneLine(tc.m.Reason) {
				t.Fatalf("parsed back action %q reason %q", back.Action, back.Reason)
			}
		})
	}
}

func TestParseMessage(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		want      meta
	}{
		{"a person's commit", "Fix a typo\n\nIn the payments note.\n", meta{Subject: "Fix a typo"}},
		{"subject only", "Brainstem-Wing: payments\n", meta{Subject: "Brainstem-Wing: payments"}},
		{"signed off, no Brainstem trailers", "Edit\n\nSigned-off-by: A <a@b>\n", meta{Subject: "Edit"}},
		{"trailers among others", "Edit\n\nSigned-off-by: A <a@b>\nBrainstem-Wing: pay\nBrainstem-Action: update\n",
			meta{Subject: "Edit", Wing: "pay", Action: "update", ours: true}},
		{"a prose last paragraph is no trailer block", "Edit\n\nBrainstem-Wing: pay\nthis is prose\n", meta{Subject: "Edit"}},
		{"bad seq is ignored", "S\n\nBrainstem-Wing: pay\nBrainstem-Seq: x1\n", meta{Subject: "S", Wing: "pay", ours: true}},
		{"crlf", "S\r\n\r\nBrainstem-Wing: pay\r\nBrainstem-Seq: 5\r\n", meta{Subject: "S", Wing: "pay", Seq: 5, ours: true}},
		{"empty", "", meta{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseMessage(tc.msg); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzTrailers: parsing any message never panics, and the message of
// what it parsed parses back to the same trailers.
func FuzzTrailers(f *testing.F) {
	f.Add("update a\n\nreason\n\nBrainstem-Wing: pay\nBrainstem-Action: update\nBrainstem-Moved-From: wiki/pay/facts/a.md\nBrainstem-Seq: 12\n")
	f.Add("Fix\n\nSigned-off-by: x\n")
	f.Add("\n\n\n")
	f.Add("S\n\nBrainstem-Reason: a: b: c\nBrainstem-Key: \n")
	f.Fuzz(func(t *testing.T, msg string) {
		m := parseMessage(msg)
		if !m.ours || m.Action == "" {
			return
		}
		back := parseMessage(m.message())
		m.Subject, back.Subject = oneLine(m.Subject), oneLine(back.Subject)
		if back.Wing != m.Wing || back.Action != m.Action || back.Tool != m.Tool || back.Key != m.Key ||
			back.Seq != m.Seq || back.Reason != oneLine(m.Reason) || !reflect.DeepEqual(nonEmpty(back.MovedFrom), nonEmpty(m.MovedFrom)) {
			t.Fatalf("round trip changed the trailers:\n%+v\n%+v\n%q", m, back, m.message())
		}
	})
}

func nonEmpty(s []string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
