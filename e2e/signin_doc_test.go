package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/brainstem/brainstem/gateway/config"
)

// yamlBlockRE finds the fenced YAML blocks of a Markdown page.
var yamlBlockRE = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestSignInRecipesPassConfigCheck: every gateway configuration that
// docs/sign-in.md gives (each YAML block with an oauth: section) passes the
// gateway's own configuration check once the parts every gateway has
// (public URL, TLS, shards, one wing) are added, and the Dex recipe is the
// very configuration TestDexInterop runs.
func TestSignInRecipesPassConfigCheck(t *testing.T) {
	doc, err := os.ReadFile("../docs/sign-in.md")
	if err != nil {
		t.Fatal(err)
	}
	const rest = `public_url: https://brain.acme.com
tls: {cert_file: /etc/brainstem/tls/tls.crt, key_file: /etc/brainstem/tls/tls.key}
shards:
  tls: {ca_file: /etc/brainstem/mtls/ca.crt, cert_file: /etc/brainstem/mtls/tls.crt, key_file: /etc/brainstem/mtls/tls.key}
wings:
  - {name: payments, address: "payments-0.payments.brainstem.svc:7443"}
`
	dex := fmt.Sprintf(dexGatewayConfig, "https://dex.acme.com/dex", "/etc/brainstem/oauth/signing.pem", "/etc/brainstem/oauth/client-secret")
	checked, dexFound := 0, false
	for _, m := range yamlBlockRE.FindAllStringSubmatch(string(doc), -1) {
		block := m[1]
		if !strings.Contains(block, "\noauth:\n") {
			continue
		}
		checked++
		if strings.Contains(block, "issuer: https://dex.acme.com/dex") {
			dexFound = true
			if block != dex {
				t.Errorf("the Dex recipe is not the configuration TestDexInterop runs:\n--- docs/sign-in.md\n%s--- dexGatewayConfig\n%s", block, dex)
			}
		}
		cfg, err := config.ParseConfig([]byte(rest + block))
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			t.Errorf("docs/sign-in.md recipe fails the gateway's check: %v\n%s", err, block)
		}
	}
	if checked < 6 || !dexFound {
		t.Fatalf("checked %d recipes (want the generic one, Okta, Entra, Google, Keycloak and Dex); Dex found: %v", checked, dexFound)
	}
}
