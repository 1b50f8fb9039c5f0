package helmtest

import (
	"strings"
	"testing"
)

// envOf is a container's environment: plain values, and secret references
// as "secret:<name>/<key>".
func envOf(t *testing.T, c map[string]any) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range digList(t, c, "env") {
		m := e.(map[string]any)
		v, _ := m["value"].(string)
		if ref, ok := dig(m, "valueFrom", "secretKeyRef").(map[string]any); ok {
			v = "secret:" + ref["name"].(string) + "/" + ref["key"].(string)
		}
		env[m["name"].(string)] = v
	}
	return env
}

// TestTracingRendered: tracing is off by default (no OTEL_* variable on any
// pod); tracing.enabled sets the OTLP/HTTP environment on the gateway and
// on every shard, each with its service name, the sampler, the headers
// from an existing Secret and the sensitive opt-in; the schema refuses an
// enabled tracing without an endpoint and an unknown sampler.
func TestTracingRendered(t *testing.T) {
	t.Parallel()
	off := render(t, []string{defaultValues})
	if strings.Contains(off.raw, "OTEL_") || strings.Contains(off.raw, "BRAINSTEM_TRACE_SENSITIVE") {
		t.Fatal("tracing is on by default")
	}
	on := render(t, []string{defaultValues, valuesFile(t, `tracing:
  enabled: true
  endpoint: http://otel-collector.observability:4318
  sampler: parentbased_traceidratio
  samplerArg: "0.25"
  headersSecret: otlp-auth
  sensitive: true
shard: {extraEnv: [{name: X, value: kept}]}
`)})
	want := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector.observability:4318",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_TRACES_SAMPLER":         "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG":     "0.25",
		"OTEL_EXPORTER_OTLP_HEADERS":  "secret:otlp-auth/headers",
		"BRAINSTEM_TRACE_SENSITIVE":   "true",
	}
	check := func(what string, env map[string]string, service string) {
		for k, v := range want {
			if env[k] != v {
				t.Errorf("%s: %s=%q, want %q", what, k, env[k], v)
			}
		}
		if env["OTEL_SERVICE_NAME"] != service {
			t.Errorf("%s: OTEL_SERVICE_NAME=%q, want %q", what, env["OTEL_SERVICE_NAME"], service)
		}
	}
	check("gateway", envOf(t, container(t, on.one(t, "Deployment"))), "brainstem-gateway")
	sts := on.all("StatefulSet")
	if len(sts) == 0 {
		t.Fatal("no shards")
	}
	for _, s := range sts {
		c := container(t, s)
		_, flags := args(t, c)
		env := envOf(t, c)
		check("shard "+flags["wing"], env, "brainstem-shard-"+flags["wing"])
		if env["X"] != "kept" {
			t.Errorf("shard %s lost its extraEnv: %v", flags["wing"], env)
		}
	}
	for _, bad := range []string{
		"tracing: {enabled: true}\n",
		"tracing: {enabled: true, endpoint: otel:4318}\n",
		"tracing: {enabled: true, endpoint: http://otel:4318, sampler: sometimes}\n",
		"tracing: {enabled: true, endpoint: http://otel:4318, samplerArg: \"2\"}\n",
	} {
		if out, err := helmTemplate([]string{defaultValues, valuesFile(t, bad)}); err == nil {
			t.Errorf("rendered %q:\n%.300s", bad, out)
		}
	}
}
