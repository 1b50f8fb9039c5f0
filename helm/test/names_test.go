package helmtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/brain"
)

// checkWingRender renders the default scenario with the given wing names and
// checks that every object name is valid, that each wing gets its own
// distinct StatefulSet, Service and Secret, and that the gateway dials each.
func checkWingRender(t *testing.T, names []string, extra ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("wings:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  - {name: %q, policy: {readers: [\"*\"]}}\n", n)
	}
	r := render(t, []string{defaultValues, valuesFile(t, b.String())}, extra...)
	checkNames(t, r)
	sts := r.all("StatefulSet")
	if len(sts) != len(names) {
		t.Fatalf("%d StatefulSets for %d wings", len(sts), len(names))
	}
	cfg := parseGatewayConfig(t, gatewayYAML(t, r))
	seen := map[string]string{}
	for i, n := range names {
		if cfg.Wings[i].Name != n {
			t.Errorf("gateway wing %d is %q, want %q", i, cfg.Wings[i].Name, n)
		}
		host, _, _ := strings.Cut(cfg.Wings[i].Address, ":")
		pod, _, _ := strings.Cut(host, ".")
		s := r.get(t, "StatefulSet", strings.TrimSuffix(pod, "-0"))
		if _, flags := args(t, container(t, s)); flags["wing"] != n {
			t.Errorf("StatefulSet %s serves wing %q, want %q", s.name(), flags["wing"], n)
		}
		if other, dup := seen[s.name()]; dup {
			t.Errorf("wings %q and %q share StatefulSet %s", other, n, s.name())
		}
		seen[s.name()] = n
	}
}

// TestLongWingNames: wing names up to 63 characters that share a long prefix
// still give distinct, valid names (StatefulSets ≤ 52 characters).
func TestLongWingNames(t *testing.T) {
	t.Parallel()
	prefix := strings.Repeat("a", 60)
	// 45 characters: "rel-brainstem-" + 45 = 59, a valid Service name but
	// too long for a StatefulSet.
	checkWingRender(t, []string{prefix + "-x1", prefix + "-x2", strings.Repeat("b", 63), strings.Repeat("d", 45), "short"})
	// A long release name too.
	checkWingRender(t, []string{strings.Repeat("c", 63)}, "--set", "fullnameOverride="+strings.Repeat("r", 63))
}

// FuzzWingName: any string as a wing name is either rejected by the chart
// with an error naming the wings, or it is a valid wing name (the contract's
// rule, brain.ValidWing, which the gateway and the shards apply) and renders
// a release whose every object name is valid. The seeds run in every `go test`.
func FuzzWingName(f *testing.F) {
	for _, s := range []string{
		"pay-ments", "0", strings.Repeat("z", 63), strings.Repeat("z", 64),
		"", "a-", "A_b", "a.b", "ünï", "a\nb", "{{ .Release.Name }}", "con", "lpt1", "console",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		values := valuesFile(t, fmt.Sprintf("wings:\n  - {name: %s, policy: {readers: [\"*\"]}}\n", yamlQuote(name)))
		out, err := helmTemplate([]string{defaultValues, values})
		valid := brain.ValidWing(name) == nil
		switch {
		case err != nil && valid:
			t.Fatalf("valid wing name %q rejected: %v", name, err)
		case err != nil:
			if !strings.Contains(err.Error(), "/wings/0/name") {
				t.Fatalf("invalid wing name %q rejected without naming wings/0/name: %v", name, err)
			}
		case !valid:
			t.Fatalf("invalid wing name %q accepted", name)
		default:
			objs, err := decodeManifests(out)
			if err != nil {
				t.Fatal(err)
			}
			checkNames(t, release{raw: out, objs: objs})
		}
	})
}

// yamlQuote writes s as a YAML double-quoted scalar (JSON string syntax is
// valid YAML), so the name reaches helm exactly.
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfeff || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
