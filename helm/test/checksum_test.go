package helmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// configChecksum returns the gateway pod's checksum/config annotation.
func configChecksum(t *testing.T, r release) string {
	t.Helper()
	return digString(t, r.one(t, "Deployment"), "spec", "template", "metadata", "annotations", "checksum/config")
}

// sourceDoc returns the raw text helm rendered from one template file.
func sourceDoc(t *testing.T, r release, template string) string {
	t.Helper()
	marker := "# Source: brainstem/templates/" + template + "\n"
	i := strings.Index(r.raw, marker)
	if i < 0 {
		t.Fatalf("no document from %s", template)
	}
	doc := r.raw[i+len(marker):]
	if j := strings.Index(doc, "\n---\n"); j >= 0 {
		doc = doc[:j+1]
	}
	return doc
}

// TestConfigChecksum: the gateway pods carry the sha256 of the rendered
// ConfigMap, so a config change rolls them and nothing else does.
func TestConfigChecksum(t *testing.T) {
	t.Parallel()
	base := render(t, []string{defaultValues})
	sum := configChecksum(t, base)

	doc := sourceDoc(t, base, "gateway-configmap.yaml")
	h := sha256.Sum256([]byte(doc))
	if got := hex.EncodeToString(h[:]); got != sum {
		t.Errorf("checksum/config %s is not the sha256 of the rendered ConfigMap (%s)", sum, got)
	}

	cases := []struct {
		name    string
		overlay string
		changes bool
	}{
		{"same values again", "{}", false},
		{"gateway replicas", "gateway: {replicaCount: 3}", false},
		{"shard resources", "shard: {resources: {requests: {cpu: 1, memory: 1Gi}, limits: {memory: 2Gi}}}", false},
		{"a wing's storage", `wings: [{name: payments, policy: {readers: ["domain:acme.com"], writers: ["group:payments"], curators: ["email:lead@acme.com"]}, storage: {size: 50Gi}}]`, false},
		{"rate limit", "gateway: {config: {limits: {calls_per_second: 21}}}", true},
		{"log level", "gateway: {config: {log: {level: debug}}}", true},
		{"another issuer", "oidc: {issuers: [{url: 'https://login.acme.com', audiences: [brainstem]}, {url: 'https://accounts.google.com', audiences: [x]}]}", true},
		{"a new wing", `wings: [{name: payments, policy: {}}, {name: platform, policy: {}}]`, true},
		{"public host", "ingress: {host: knowledge.acme.com}", true},
		{"shard port", "shard: {ports: {quic: 7444}}", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, []string{defaultValues, valuesFile(t, tc.overlay)})
			got := configChecksum(t, r)
			cfgChanged := gatewayYAML(t, r) != gatewayYAML(t, base)
			if cfgChanged != tc.changes {
				t.Fatalf("gateway.yaml changed = %v, want %v", cfgChanged, tc.changes)
			}
			if (got != sum) != tc.changes {
				t.Errorf("checksum changed = %v, want %v (%s vs %s)", got != sum, tc.changes, got, sum)
			}
		})
	}
}

// TestPolicyChecksum: a wing's pod rolls when, and only when, its policy changes.
func TestPolicyChecksum(t *testing.T) {
	t.Parallel()
	two := func(paymentsReaders string) []string {
		return []string{defaultValues, valuesFile(t, `wings:
  - {name: payments, policy: {readers: [`+paymentsReaders+`]}}
  - {name: platform, policy: {readers: ["*"]}}`)}
	}
	sums := func(r release) map[string]string {
		out := map[string]string{}
		for _, s := range r.all("StatefulSet") {
			out[s.name()] = digString(t, s, "spec", "template", "metadata", "annotations", "checksum/policy")
		}
		return out
	}
	a := sums(render(t, two(`"domain:acme.com"`)))
	b := sums(render(t, two(`"domain:acme.com", "group:audit"`)))
	if a[releaseName+"-brainstem-payments"] == b[releaseName+"-brainstem-payments"] {
		t.Error("payments' policy changed but its checksum/policy did not")
	}
	if a[releaseName+"-brainstem-platform"] != b[releaseName+"-brainstem-platform"] {
		t.Error("platform's policy did not change but its checksum/policy did")
	}
}
