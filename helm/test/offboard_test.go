package helmtest

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/brainstem/brainstem/auth/offboard"
)

// signinsOverlay ends one person's sign-ins in values and turns the admin
// endpoints on with an operator token Secret.
const signinsOverlay = `signins:
  ended:
    - email: Bob@Acme.com
      notBefore: "2026-12-02T10:00:00Z"
      reason: left the company
  adminToken:
    existingSecret: ops-token
`

// TestSigninsRendered: the ended sign-ins are a ConfigMap the gateway's
// check and parser accept, mounted (projected, never subPath, so the
// kubelet updates it) at the path gateway.yaml names, outside
// checksum/config (editing it restarts nothing); the operator token is
// mounted from its Secret, with a headless admin Service and a network
// rule between gateway pods for brainstem signins end. Without the token
// none of those; with existingConfigMap no chart ConfigMap.
func TestSigninsRendered(t *testing.T) {
	t.Parallel()
	r := render(t, []string{defaultValues, valuesFile(t, signinsOverlay)})
	text := gatewayYAML(t, r)
	cfg := parseGatewayConfig(t, text)
	if cfg.Signins.EndedFile != "/etc/brainstem/signins/ended.yaml" || cfg.Signins.AdminTokenFile != "/etc/brainstem/signins-admin/token" {
		t.Fatalf("signins: %+v", cfg.Signins)
	}
	cm := r.get(t, "ConfigMap", "rel-brainstem-gateway-signins")
	es, err := offboard.Parse([]byte(digString(t, cm, "data", "ended.yaml")))
	if err != nil || len(es) != 1 || es[0].Email != "bob@acme.com" || es[0].Reason != "left the company" {
		t.Fatalf("ended.yaml: %+v %v\n%s", es, err, dig(cm, "data", "ended.yaml"))
	}
	d := r.one(t, "Deployment")
	files, keys := projectedFiles(t, d), mountedKeys(t, d)
	if files["/etc/brainstem/signins/ended.yaml"] != "ConfigMap/rel-brainstem-gateway-signins" || keys["/etc/brainstem/signins/ended.yaml"] != "ended.yaml" {
		t.Errorf("ended.yaml mounted from %s key %s", files["/etc/brainstem/signins/ended.yaml"], keys["/etc/brainstem/signins/ended.yaml"])
	}
	if files["/etc/brainstem/signins-admin/token"] != "Secret/ops-token" || keys["/etc/brainstem/signins-admin/token"] != "token" {
		t.Errorf("the admin token mounted from %s key %s", files["/etc/brainstem/signins-admin/token"], keys["/etc/brainstem/signins-admin/token"])
	}
	svc := r.get(t, "Service", "rel-brainstem-gateway-admin")
	if dig(svc, "spec", "clusterIP") != "None" || dig(svc, "spec", "publishNotReadyAddresses") != true {
		t.Errorf("admin Service: %v", svc)
	}
	var np obj
	for _, o := range r.all("NetworkPolicy") {
		if o.name() == "rel-brainstem-gateway" {
			np = o
		}
	}
	if np == nil || !strings.Contains(strings.ReplaceAll(stringOfObj(np), " ", ""), "port:9090") {
		t.Errorf("no network rule for the admin port between gateway pods: %v", np)
	}
	if out, err := checkConfig(t, text); err != nil {
		t.Fatalf("brainstem gateway --check-config: %v\n%s", err, out)
	}
	// Ending another person changes the ConfigMap, not the pods' checksum.
	more := render(t, []string{defaultValues, valuesFile(t, strings.Replace(signinsOverlay, "  adminToken:",
		"    - {email: carol@acme.com, notBefore: \"2026-12-02T11:00:00Z\"}\n  adminToken:", 1))})
	if a, b := dig(d, "spec", "template", "metadata", "annotations", "checksum/config"), dig(more.one(t, "Deployment"), "spec", "template", "metadata", "annotations", "checksum/config"); a != b {
		t.Errorf("ending a sign-in would restart the gateways: checksum/config %v → %v", a, b)
	}

	plain := render(t, []string{defaultValues})
	if es, err := offboard.Parse([]byte(digString(t, plain.get(t, "ConfigMap", "rel-brainstem-gateway-signins"), "data", "ended.yaml"))); err != nil || len(es) != 0 {
		t.Errorf("default ended.yaml: %+v %v", es, err)
	}
	if parseGatewayConfig(t, gatewayYAML(t, plain)).Signins.AdminTokenFile != "" {
		t.Error("admin_token_file rendered without a token Secret")
	}
	for _, s := range plain.all("Service") {
		if s.name() == "rel-brainstem-gateway-admin" {
			t.Error("admin Service rendered without a token Secret")
		}
	}
	own := render(t, []string{defaultValues, valuesFile(t, "signins:\n  existingConfigMap: my-ended\n")})
	for _, c := range own.all("ConfigMap") {
		if c.name() == "rel-brainstem-gateway-signins" {
			t.Error("the chart's ConfigMap rendered with existingConfigMap")
		}
	}
	if f := projectedFiles(t, own.one(t, "Deployment"))["/etc/brainstem/signins/ended.yaml"]; f != "ConfigMap/my-ended" {
		t.Errorf("with existingConfigMap ended.yaml comes from %s", f)
	}
}

// TestEnterpriseRendered: oauth.enterprise.idps lands in gateway.yaml as
// the gateway reads it, and the gateway's check accepts it.
func TestEnterpriseRendered(t *testing.T) {
	t.Parallel()
	overlay := oauthOverlay + `  enterprise:
    idps:
      - issuer: https://login.acme.com
        clients: [claude-enterprise, release-bot]
        algorithms: [RS256, ES256]
`
	text := gatewayYAML(t, render(t, []string{defaultValues, valuesFile(t, overlay)}))
	e := parseGatewayConfig(t, text).OAuth.Enterprise
	if len(e.IdPs) != 1 || e.IdPs[0].Issuer != "https://login.acme.com" || len(e.IdPs[0].Clients) != 2 || len(e.IdPs[0].Algorithms) != 2 || e.IdPs[0].TrustEmail {
		t.Fatalf("enterprise: %+v", e)
	}
	if out, err := checkConfig(t, text); err != nil {
		t.Fatalf("brainstem gateway --check-config: %v\n%s", err, out)
	}
	if strings.Contains(gatewayYAML(t, render(t, []string{defaultValues, valuesFile(t, oauthOverlay)})), "enterprise") {
		t.Error("enterprise rendered without IdPs")
	}
}

// stringOfObj is a manifest as YAML, for a containment check.
func stringOfObj(o obj) string {
	b, _ := yaml.Marshal(o)
	return string(b)
}

// signinsRejected are the bad offboarding and enterprise values, for
// TestValuesRejected.
var signinsRejected = []struct {
	name    string
	overlay string
	want    []string
}{
	{"ended without notBefore", "signins: {ended: [{email: bob@acme.com}]}", []string{"/signins/ended/0", "notBefore"}},
	{"ended notBefore not a time", "signins: {ended: [{email: bob@acme.com, notBefore: tomorrow}]}", []string{"/signins/ended/0/notBefore"}},
	{"ended unknown key", "signins: {ended: [{email: bob@acme.com, notBefore: '2026-12-02T10:00:00Z', until: x}]}", []string{"/signins/ended/0", "until"}},
	{"admin token in values", "signins: {adminToken: {value: s3cret}}", []string{"/signins/adminToken", "value"}},
	{"enterprise IdP without clients", oauthOverlay + "  enterprise: {idps: [{issuer: 'https://login.acme.com'}]}", []string{"/oauth/enterprise/idps/0", "clients"}},
	{"enterprise IdP over http", oauthOverlay + "  enterprise: {idps: [{issuer: 'http://login.acme.com', clients: [a]}]}", []string{"/oauth/enterprise/idps/0/issuer"}},
	{"enterprise without oauth", "oauth: {enterprise: {idps: [{issuer: 'https://login.acme.com', clients: [a]}]}}", []string{"oauth.enterprise.idps", "oauth.enabled"}},
	{"enterprise IdP with HS256", oauthOverlay + "  enterprise: {idps: [{issuer: 'https://login.acme.com', clients: [a], algorithms: [HS256]}]}", []string{"/oauth/enterprise/idps/0/algorithms/0"}},
}
