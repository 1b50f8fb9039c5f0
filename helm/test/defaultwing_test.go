package helmtest

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestDefaultWingRendered: gateway.config.default_wing lands as the
// gateway's default_wing, which the gateway accepts for a configured wing
// and refuses for another; the defaults write none.
func TestDefaultWingRendered(t *testing.T) {
	t.Parallel()
	text := gatewayYAML(t, render(t, []string{defaultValues, valuesFile(t, "gateway:\n  config:\n    default_wing: payments\n")}))
	var cfg gatewayConfig
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil || cfg.DefaultWing != "payments" {
		t.Fatalf("default_wing %q, %v:\n%s", cfg.DefaultWing, err, text)
	}
	if out, err := checkConfig(t, text); err != nil {
		t.Fatalf("brainstem gateway --check-config: %v\n%s\n---\n%s", err, out, text)
	}
	other := gatewayYAML(t, render(t, []string{defaultValues, valuesFile(t, "gateway:\n  config:\n    default_wing: billing\n")}))
	if out, err := checkConfig(t, other); err == nil || !strings.Contains(out+err.Error(), "default_wing") {
		t.Errorf("a default_wing that is no wing: %v\n%s", err, out)
	}
	if def := gatewayYAML(t, render(t, []string{defaultValues})); strings.Contains(def, "default_wing") {
		t.Errorf("the default values write default_wing:\n%s", def)
	}
}
