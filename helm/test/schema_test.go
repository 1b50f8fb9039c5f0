package helmtest

import (
	"strings"
	"testing"
)

// TestValuesRejected: every bad values case fails `helm template` (the
// schema, or the chart's own `fail` for what JSON schema cannot say) with a
// message that names the offending key. Each case is the working default
// scenario plus one overlay, and TestValuesAccepted proves that scenario and
// the edge cases just inside the limits render, so a rejection here comes
// from the bad value and nothing else.
func TestValuesRejected(t *testing.T) {
	long64 := strings.Repeat("a", 64)
	cases := []struct {
		name    string
		overlay string
		want    []string // each must appear in helm's error output
	}{
		{"no oidc issuer", "oidc: {issuers: []}", []string{"/oidc/issuers", "minItems"}},
		{"oidc issuers null", "oidc: {issuers: null}", []string{"/oidc", "issuers"}},
		{"issuer without url", "oidc: {issuers: [{audiences: [brainstem]}]}", []string{"/oidc/issuers/0", "url"}},
		{"issuer over http", "oidc: {issuers: [{url: 'http://login.acme.com', audiences: [brainstem]}]}", []string{"/oidc/issuers/0/url"}},
		{"issuer without audiences", "oidc: {issuers: [{url: 'https://login.acme.com'}]}", []string{"/oidc/issuers/0", "audiences"}},
		{"duplicate wing names", `wings:
  - {name: payments, policy: {readers: ["*"]}}
  - {name: platform, policy: {readers: ["*"]}}
  - {name: payments, policy: {readers: ["group:x"]}}`, []string{"duplicate wing name", `"payments"`}},
		{"no wings", "wings: []", []string{"/wings", "minItems"}},
		{"wing without name", `wings: [{policy: {readers: ["*"]}}]`, []string{"/wings/0", "name"}},
		{"wing without policy", `wings: [{name: payments}]`, []string{"/wings/0", "policy"}},
		{"wing name uppercase", `wings: [{name: Payments, policy: {}}]`, []string{"/wings/0/name"}},
		{"wing name underscore", `wings: [{name: pay_ments, policy: {}}]`, []string{"/wings/0/name"}},
		{"wing name leading hyphen", `wings: [{name: -payments, policy: {}}]`, []string{"/wings/0/name"}},
		{"wing name trailing hyphen", `wings: [{name: payments-, policy: {}}]`, []string{"/wings/0/name"}},
		{"wing name dot", `wings: [{name: pay.ments, policy: {}}]`, []string{"/wings/0/name"}},
		{"wing name empty", `wings: [{name: "", policy: {}}]`, []string{"/wings/0/name"}},
		{"wing name 64 chars", `wings: [{name: ` + long64 + `, policy: {}}]`, []string{"/wings/0/name"}},
		{"wing name not a string", `wings: [{name: 42, policy: {}}]`, []string{"/wings/0/name"}},
		{"wing name a reserved device name", `wings: [{name: con, policy: {}}]`, []string{"/wings/0/name"}},
		{"wing name a reserved port name", `wings: [{name: com1, policy: {}}]`, []string{"/wings/0/name"}},
		{"principal without kind", `wings: [{name: payments, policy: {readers: ["lead@acme.com"]}}]`, []string{"/wings/0/policy/readers/0"}},
		{"unknown wing key", `wings: [{name: payments, policy: {}, replicas: 2}]`, []string{"/wings/0", "replicas"}},
		{"gateway https port 0", "gateway: {ports: {https: 0}}", []string{"/gateway/ports/https"}},
		{"gateway https port 65536", "gateway: {ports: {https: 65536}}", []string{"/gateway/ports/https"}},
		{"gateway admin port negative", "gateway: {ports: {admin: -1}}", []string{"/gateway/ports/admin"}},
		{"gateway port as string", `gateway: {ports: {https: "8443"}}`, []string{"/gateway/ports/https"}},
		{"gateway service port 70000", "gateway: {service: {port: 70000}}", []string{"/gateway/service/port"}},
		{"shard quic port 0", "shard: {ports: {quic: 0}}", []string{"/shard/ports/quic"}},
		{"shard admin port 99999", "shard: {ports: {admin: 99999}}", []string{"/shard/ports/admin"}},
		{"shard quic port fraction", "shard: {ports: {quic: 7443.5}}", []string{"/shard/ports/quic"}},
		{"typo in gateway", "gateway: {replicas: 3}", []string{"/gateway", "replicas"}},
		{"unknown gateway config key", "gateway: {config: {limits: {calls_per_minute: 5}}}", []string{"/gateway/config/limits", "calls_per_minute"}},
		{"zero calls per second", "gateway: {config: {limits: {calls_per_second: 0}}}", []string{"/gateway/config/limits/calls_per_second"}},
		{"body limit too big", "gateway: {config: {limits: {max_body_bytes: 134217728}}}", []string{"/gateway/config/limits/max_body_bytes"}},
		{"duration in words", "gateway: {config: {shards: {call_timeout: 30 seconds}}}", []string{"/gateway/config/shards/call_timeout"}},
		{"bad log level", "gateway: {config: {log: {level: verbose}}}", []string{"/gateway/config/log/level"}},
		{"bad mtls mode", "mtls: {mode: selfsigned}", []string{"/mtls/mode"}},
		{"existing secrets missing a shard", `mtls: {mode: existingSecrets, existingSecrets: {gateway: gw-mtls, shards: {}}}`, []string{"mtls.existingSecrets.shards.payments"}},
		{"existing secrets missing the gateway", `mtls: {mode: existingSecrets, existingSecrets: {shards: {payments: p}}}`, []string{"mtls.existingSecrets.gateway"}},
		{"cert-manager without issuer", `mtls: {mode: certManager, certManager: {createIssuer: false}}`, []string{"mtls.certManager.issuerRef.name"}},
		{"ingress without host", `ingress: {host: ""}`, []string{"ingress.host"}},
		{"no public url at all", `ingress: {enabled: false, host: ""}`, []string{"publicURL"}},
		{"public url over http", `publicURL: "http://brain.acme.com"`, []string{"/publicURL"}},
		{"public url on another host than the ingress", `publicURL: "https://knowledge.acme.com"`, []string{"publicURL host", "ingress.host"}},
		{"ingress cert-manager without issuer", `ingress: {tls: {certManager: {enabled: true}}}`, []string{"ingress.tls.certManager.issuer"}},
	}
	cases = append(cases, oauthRejected...)
	cases = append(cases, machinesRejected...)
	cases = append(cases, signinsRejected...)
	cases = append(cases, tunablesRejected...)
	cases = append(cases, remoteRejected...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := helmTemplate([]string{defaultValues, valuesFile(t, tc.overlay)})
			if err == nil {
				t.Fatalf("rendered without error; want a rejection mentioning %q\n%s", tc.want, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestValuesAccepted: the edge cases just inside each limit render.
func TestValuesAccepted(t *testing.T) {
	long63 := strings.Repeat("a", 63)
	cases := []struct{ name, overlay string }{
		{"default scenario", "{}"},
		{"63-char wing name", `wings: [{name: ` + long63 + `, policy: {}}]`},
		{"1-char and digit wing names", `wings: [{name: a, policy: {}}, {name: "9", policy: {}}, {name: a-9, policy: {}}]`},
		{"names that only start like reserved ones", `wings: [{name: console, policy: {}}, {name: com10, policy: {}}, {name: nul-1, policy: {}}]`},
		{"ports at the limits", "gateway: {ports: {https: 1, admin: 65535}, service: {port: 65535, adminPort: 1}}\nshard: {ports: {quic: 65535, admin: 1}}"},
		{"every principal kind", `wings: [{name: payments, policy: {readers: ["*"], writers: ["email:a@acme.com", "domain:acme.com", "client:ci-1_x"], curators: ["group:leads"]}}]`},
		{"existing secrets complete", `mtls: {mode: existingSecrets, existingSecrets: {gateway: gw, shards: {payments: p}}}`},
		{"cert-manager with an external issuer", `mtls: {mode: certManager, certManager: {createIssuer: false, issuerRef: {name: corp-ca, kind: ClusterIssuer}}}`},
		{"no ingress, public url given", `ingress: {enabled: false}` + "\npublicURL: https://brain.acme.com"},
	}
	cases = append(cases, oauthAccepted...)
	cases = append(cases, tunablesAccepted...)
	cases = append(cases, remoteAccepted...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := helmTemplate([]string{defaultValues, valuesFile(t, tc.overlay)}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
