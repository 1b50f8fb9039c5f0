package helmtest

import (
	"reflect"
	"testing"
)

// adminRules returns, per NetworkPolicy, the ingress rules that open a TCP
// admin port (9090 gateway, 9091 shard).
func adminRules(t *testing.T, r release) map[string][]any {
	t.Helper()
	out := map[string][]any{}
	for _, np := range r.all("NetworkPolicy") {
		for _, rule := range digList(t, np, "spec", "ingress") {
			for _, p := range digList(t, rule, "ports") {
				if port := dig(p, "port"); port == defAdminPort || port == defShardAdmin {
					if dig(p, "protocol") != "TCP" {
						t.Errorf("%s: admin port %v over %v", np.name(), port, dig(p, "protocol"))
					}
					out[np.name()] = append(out[np.name()], rule)
				}
			}
		}
	}
	return out
}

// TestMetricsNetworkPolicy: the admin ports (metrics, probes) are closed
// unless configured, open to exactly the configured peers, or to anyone with
// allowAll — on both the gateway and the shards.
func TestMetricsNetworkPolicy(t *testing.T) {
	t.Parallel()
	monitoring := map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}
	prometheus := map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "prometheus"}}
	cases := []struct {
		name     string
		overlay  string
		wantFrom []any // nil: no admin rule; empty: a rule without from (anyone)
		open     bool
	}{
		{"closed by default", "{}", nil, false},
		{"monitoring namespace", "networkPolicy: {metrics: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}}",
			[]any{map[string]any{"namespaceSelector": monitoring}}, true},
		{"prometheus pods in the monitoring namespace", "networkPolicy: {metrics: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}, podSelector: {matchLabels: {app.kubernetes.io/name: prometheus}}}}",
			[]any{map[string]any{"namespaceSelector": monitoring, "podSelector": prometheus}}, true},
		{"allow all", "networkPolicy: {metrics: {allowAll: true}}", []any{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, []string{defaultValues, valuesFile(t, tc.overlay)})
			rules := adminRules(t, r)
			if !tc.open {
				if len(rules) != 0 {
					t.Fatalf("admin ports opened: %v", rules)
				}
				return
			}
			if len(rules) != 2 {
				t.Fatalf("want an admin rule on the gateway and the shard policies, got %v", rules)
			}
			for np, rs := range rules {
				if len(rs) != 1 {
					t.Fatalf("%s: %d admin rules", np, len(rs))
				}
				from, _ := dig(rs[0], "from").([]any)
				if from == nil {
					from = []any{}
				}
				if !reflect.DeepEqual(from, tc.wantFrom) {
					t.Errorf("%s: admin rule from %v, want %v", np, from, tc.wantFrom)
				}
			}
		})
	}
	t.Run("disabled", func(t *testing.T) {
		t.Parallel()
		r := render(t, []string{defaultValues, valuesFile(t, "networkPolicy: {enabled: false}")})
		if n := len(r.all("NetworkPolicy")); n != 0 {
			t.Errorf("%d NetworkPolicies rendered while disabled", n)
		}
	})
}

// TestKubeVersions: the chart renders for its oldest supported Kubernetes and
// adds the gateway's preStop sleep only where the API has it (≥ 1.30).
func TestKubeVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version string
		sleep   bool
	}{{"1.25.0", false}, {"1.29.9", false}, {"1.30.0", true}, {"1.37.0", true}} {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			r := render(t, []string{defaultValues}, "--kube-version", tc.version)
			got := dig(container(t, r.one(t, "Deployment")), "lifecycle", "preStop", "sleep", "seconds")
			if (got != nil) != tc.sleep {
				t.Errorf("preStop sleep = %v, want present=%v", got, tc.sleep)
			}
		})
	}
	if _, err := helmTemplate([]string{defaultValues}, "--kube-version", "1.24.9"); err == nil {
		t.Error("rendered for Kubernetes 1.24, below the chart's kubeVersion")
	}
}
