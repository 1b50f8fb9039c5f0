package helmtest

import (
	"fmt"
	"strings"
	"testing"
)

// machinesOverlay defines two service accounts over oauthOverlay: ci in a
// rotation (two secret hashes, the old one ending), bot with a public key,
// and a wing policy that names ci.
const machinesOverlay = oauthOverlay + `  serviceAccountTokenTTL: 5m
  serviceAccounts:
    - id: ci
      name: CI pipeline
      credentials:
        - secretSha256: {existingSecret: ci-credentials, key: old-sha256}
          notAfter: "2027-01-31T00:00:00Z"
        - secretSha256: {existingSecret: ci-credentials, key: sha256}
    - id: release-bot
      credentials:
        - publicKey: {existingSecret: release-bot-key, key: public.pem}
wings:
  - name: payments
    policy:
      readers: ["domain:acme.com", "client:release-bot"]
      writers: ["group:payments", "client:ci"]
      curators: ["email:lead@acme.com"]
`

// TestServiceAccountsRendered: each service account lands in gateway.yaml
// with one file per credential, each file mounted from the Secret and key
// its values entry names (a hash or a public key: the chart never holds a
// secret), the policy's client: principals reach the shard, and the
// gateway's own check accepts the result.
func TestServiceAccountsRendered(t *testing.T) {
	t.Parallel()
	r := render(t, []string{defaultValues, valuesFile(t, machinesOverlay)})
	text := gatewayYAML(t, r)
	cfg := parseGatewayConfig(t, text).OAuth
	if cfg.ServiceAccountTokenTTL != "5m" || len(cfg.ServiceAccounts) != 2 {
		t.Fatalf("oauth section: %+v", cfg)
	}
	got := fmt.Sprintf("%+v", cfg.ServiceAccounts)
	want := "[{ID:ci Name:CI pipeline Credentials:[" +
		"{SecretSHA256File:/etc/brainstem/service-accounts/ci-0 PublicKeyFile: NotAfter:2027-01-31T00:00:00Z} " +
		"{SecretSHA256File:/etc/brainstem/service-accounts/ci-1 PublicKeyFile: NotAfter:}]} " +
		"{ID:release-bot Name: Credentials:[{SecretSHA256File: PublicKeyFile:/etc/brainstem/service-accounts/release-bot-0 NotAfter:}]}]"
	if got != want {
		t.Fatalf("service_accounts:\n got %s\nwant %s", got, want)
	}
	d := r.one(t, "Deployment")
	files, keys := projectedFiles(t, d), mountedKeys(t, d)
	for file, src := range map[string][2]string{
		"/etc/brainstem/service-accounts/ci-0":          {"Secret/ci-credentials", "old-sha256"},
		"/etc/brainstem/service-accounts/ci-1":          {"Secret/ci-credentials", "sha256"},
		"/etc/brainstem/service-accounts/release-bot-0": {"Secret/release-bot-key", "public.pem"},
	} {
		if files[file] != src[0] || keys[file] != src[1] {
			t.Errorf("%s is mounted from %s key %s, want %s key %s", file, files[file], keys[file], src[0], src[1])
		}
	}
	var policy string
	for _, cm := range r.all("ConfigMap") {
		if s, ok := dig(cm, "data", "policy.yaml").(string); ok {
			policy = s
		}
	}
	if !strings.Contains(policy, "client:ci") || !strings.Contains(policy, "client:release-bot") {
		t.Errorf("the wing policy lost its client: principals:\n%s", policy)
	}
	if out, err := checkConfig(t, text); err != nil {
		t.Fatalf("brainstem gateway --check-config: %v\n%s", err, out)
	}
	// Without accounts, no service_accounts key and no mounts.
	plain := render(t, []string{defaultValues, valuesFile(t, oauthOverlay)})
	if strings.Contains(gatewayYAML(t, plain), "service_accounts") {
		t.Error("service_accounts rendered without accounts")
	}
	for f := range projectedFiles(t, plain.one(t, "Deployment")) {
		if strings.Contains(f, "service-accounts") {
			t.Errorf("%s mounted without accounts", f)
		}
	}
}

// TestServiceAccountsRejectedByGateway: what the chart cannot see (the
// content of the Secrets aside), the gateway's check refuses: a service
// account token lifetime over its bound.
func TestServiceAccountsRejectedByGateway(t *testing.T) {
	t.Parallel()
	text := gatewayYAML(t, render(t, []string{defaultValues, valuesFile(t, machinesOverlay)}))
	broken := strings.Replace(text, `service_account_token_ttl: "5m"`, `service_account_token_ttl: "16m"`, 1)
	if broken == text {
		t.Fatalf("no service_account_token_ttl in:\n%s", text)
	}
	if out, err := checkConfig(t, broken); err == nil || !strings.Contains(out, "oauth.service_account_token_ttl") {
		t.Errorf("the gateway accepted a 16m token lifetime (err %v):\n%s", err, out)
	}
}

// machinesRejected are the bad service account values, for
// TestValuesRejected.
var machinesRejected = []struct {
	name    string
	overlay string
	want    []string
}{
	{"service account id upper case", oauthOverlay + "  serviceAccounts: [{id: CI, credentials: [{secretSha256: {existingSecret: s, key: k}}]}]", []string{"/oauth/serviceAccounts/0/id"}},
	{"service account id with a dot", oauthOverlay + "  serviceAccounts: [{id: a.b, credentials: [{secretSha256: {existingSecret: s, key: k}}]}]", []string{"/oauth/serviceAccounts/0/id"}},
	{"service account without credentials", oauthOverlay + "  serviceAccounts: [{id: ci, credentials: []}]", []string{"/oauth/serviceAccounts/0/credentials"}},
	{"service account with three credentials", oauthOverlay + "  serviceAccounts: [{id: ci, credentials: [{secretSha256: {existingSecret: s, key: a}}, {secretSha256: {existingSecret: s, key: b}}, {secretSha256: {existingSecret: s, key: c}}]}]", []string{"/oauth/serviceAccounts/0/credentials"}},
	{"service account credential with both", oauthOverlay + "  serviceAccounts: [{id: ci, credentials: [{secretSha256: {existingSecret: s, key: a}, publicKey: {existingSecret: s, key: b}}]}]", []string{"/oauth/serviceAccounts/0/credentials/0"}},
	{"service account credential with neither", oauthOverlay + "  serviceAccounts: [{id: ci, credentials: [{notAfter: '2027-01-01T00:00:00Z'}]}]", []string{"/oauth/serviceAccounts/0/credentials/0"}},
	{"service account secret in values", oauthOverlay + "  serviceAccounts: [{id: ci, credentials: [{secret: hunter2hunter2hunter2hunter2hunter2}]}]", []string{"/oauth/serviceAccounts/0/credentials/0", "secret"}},
	{"service account secret without key", oauthOverlay + "  serviceAccounts: [{id: ci, credentials: [{secretSha256: {existingSecret: s}}]}]", []string{"/oauth/serviceAccounts/0/credentials/0"}},
	{"service account not after not a time", oauthOverlay + "  serviceAccounts: [{id: ci, credentials: [{secretSha256: {existingSecret: s, key: k}, notAfter: next year}]}]", []string{"/oauth/serviceAccounts/0/credentials/0/notAfter"}},
	{"service account ids twice", oauthOverlay + "  serviceAccounts: [{id: ci, credentials: [{secretSha256: {existingSecret: s, key: k}}]}, {id: ci, credentials: [{secretSha256: {existingSecret: s, key: k}}]}]", []string{"oauth.serviceAccounts[1].id", "unique"}},
	{"service accounts without oauth", "oauth: {serviceAccounts: [{id: ci, credentials: [{secretSha256: {existingSecret: s, key: k}}]}]}", []string{"oauth.serviceAccounts", "oauth.enabled"}},
	{"service account token ttl over 15m", oauthOverlay + "  serviceAccountTokenTTL: 16m", []string{"oauth.serviceAccountTokenTTL", "[1m, 15m]"}},
	{"service account token ttl under 1m", oauthOverlay + "  serviceAccountTokenTTL: 30s", []string{"oauth.serviceAccountTokenTTL"}},
	{"client principal upper case", "wings: [{name: payments, policy: {writers: ['client:CI']}}]", []string{"/wings/0/policy/writers/0"}},
	{"client principal empty", "wings: [{name: payments, policy: {writers: ['client:']}}]", []string{"/wings/0/policy/writers/0"}},
}
