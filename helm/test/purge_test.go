package helmtest

import "testing"

// TestAllowPurge: no shard may purge history by default; shard.allowPurge
// turns it on for every wing, and a wing's own allowPurge overrides it
// either way.
func TestAllowPurge(t *testing.T) {
	t.Parallel()
	wings := `wings:
  - {name: payments, policy: {readers: ["*"]}}
  - {name: billing, policy: {readers: ["*"]}, allowPurge: true}
  - {name: legal, policy: {readers: ["*"]}, allowPurge: false}
`
	for _, tc := range []struct {
		name, overlay string
		want          map[string]string // wing → --allow-purge
	}{
		{"default", "", map[string]string{"payments": "", "billing": "true", "legal": ""}},
		{"on for every wing", "shard: {allowPurge: true}\n", map[string]string{"payments": "true", "billing": "true", "legal": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := render(t, []string{defaultValues, valuesFile(t, wings+tc.overlay)})
			sts := r.all("StatefulSet")
			if len(sts) != len(tc.want) {
				t.Fatalf("%d shard StatefulSets, want %d", len(sts), len(tc.want))
			}
			for _, s := range sts {
				_, flags := args(t, container(t, s))
				wing := flags["wing"]
				if got, ok := tc.want[wing]; !ok || flags["allow-purge"] != got {
					t.Errorf("%s: --allow-purge=%q, want %q", wing, flags["allow-purge"], got)
				}
			}
		})
	}
	out, err := helmTemplate([]string{defaultValues, valuesFile(t, "shard: {allowPurge: yes please}\n")})
	if err == nil {
		t.Fatalf("a non-boolean allowPurge rendered:\n%.300s", out)
	}
}
