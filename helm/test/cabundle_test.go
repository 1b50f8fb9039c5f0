package helmtest

import (
	"strings"
	"testing"
)

// TestIdPCABundle: oidc.caBundle mounts the named ConfigMap's PEM into the
// gateway and points Go's SSL_CERT_DIR at it (the image's public roots stay
// trusted through SSL_CERT_FILE), keeping extraEnv; without it, neither is
// there. The cluster job signs in through Dex behind a private CA with it.
func TestIdPCABundle(t *testing.T) {
	with := render(t, []string{defaultValues, valuesFile(t, "oidc: {caBundle: {configMap: corp-ca, key: bundle.pem}}\ngateway: {extraEnv: [{name: X, value: z1}]}\n")})
	d := with.one(t, "Deployment")
	c := digMap(t, d, "spec", "template", "spec", "containers", 0)
	env := map[string]string{}
	for _, e := range digList(t, c, "env") {
		m := e.(map[string]any)
		v, _ := m["value"].(string)
		env[m["name"].(string)] = v
	}
	if env["SSL_CERT_DIR"] != "/etc/brainstem/idp-ca" || env["X"] != "z1" {
		t.Errorf("gateway env %v: want SSL_CERT_DIR=/etc/brainstem/idp-ca and the extraEnv X=z1", env)
	}
	found := false
	for _, s := range digList(t, d, "spec", "template", "spec", "volumes", 0, "projected", "sources") {
		cm, ok := s.(map[string]any)["configMap"].(map[string]any)
		if !ok || cm["name"] != "corp-ca" {
			continue
		}
		item := cm["items"].([]any)[0].(map[string]any)
		found = item["key"] == "bundle.pem" && item["path"] == "idp-ca/ca.crt"
	}
	if !found {
		t.Error("the corp-ca ConfigMap's bundle.pem is not projected to /etc/brainstem/idp-ca/ca.crt")
	}

	without := render(t, []string{defaultValues})
	if strings.Contains(without.raw, "SSL_CERT_DIR") || strings.Contains(without.raw, "idp-ca") {
		t.Error("without oidc.caBundle the gateway still gets an IdP CA")
	}
	if _, err := helmTemplate([]string{defaultValues, valuesFile(t, "oidc: {caBundle: {configMap: Not_A_Name}}\n")}); err == nil {
		t.Error("the schema accepted an invalid ConfigMap name in oidc.caBundle.configMap")
	}
}
