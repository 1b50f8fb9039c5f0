package helmtest

import (
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// tunablesOverlay sets every gateway tunable of the fault-handling work
// (issue 11) and the shard's policy poll, each to a value other than its
// default.
const tunablesOverlay = `gateway:
  config:
    drain_grace: 2s
    shards: {keep_alive: 2s, idle_timeout: 5s}
    limits: {fanout_timeout: 1500ms, header_timeout: 5s, body_timeout: 7s, idle_conn_timeout: 2m, max_unauthenticated_conns: 300}
shard:
  policyPoll: 5s
`

// TestTunablesRendered: each tunable lands under its own key of
// gateway.yaml (and --policy-poll on every shard), the gateway accepts the
// result, and with the defaults only max_unauthenticated_conns is written
// (the others are left to the gateway's defaults).
func TestTunablesRendered(t *testing.T) {
	t.Parallel()
	r := render(t, []string{defaultValues, valuesFile(t, tunablesOverlay)})
	text := gatewayYAML(t, r)
	var cfg gatewayConfig
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	l := cfg.Limits
	got := []string{cfg.DrainGrace, cfg.Shards.KeepAlive, cfg.Shards.IdleTimeout, l.FanoutTimeout, l.HeaderTimeout, l.BodyTimeout, l.IdleConnTimeout, fmt.Sprint(l.MaxUnauthConns)}
	want := []string{"2s", "2s", "5s", "1500ms", "5s", "7s", "2m", "300"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rendered %v, want %v:\n%s", got, want, text)
	}
	if out, err := checkConfig(t, text); err != nil {
		t.Fatalf("brainstem gateway --check-config: %v\n%s\n---\n%s", err, out, text)
	}
	sts := r.all("StatefulSet")
	if len(sts) == 0 {
		t.Fatal("no shard StatefulSet")
	}
	for _, s := range sts {
		if _, flags := args(t, container(t, s)); flags["policy-poll"] != "5s" {
			t.Errorf("%s: --policy-poll=%q, want 5s", s.name(), flags["policy-poll"])
		}
	}

	def := render(t, []string{defaultValues})
	dtext := gatewayYAML(t, def)
	for _, key := range []string{"drain_grace", "keep_alive", "idle_timeout", "fanout_timeout", "header_timeout", "body_timeout", "idle_conn_timeout"} {
		if strings.Contains(dtext, key+":") {
			t.Errorf("the default values write %s (the gateway's default should apply):\n%s", key, dtext)
		}
	}
	if !strings.Contains(dtext, "max_unauthenticated_conns: 1024") {
		t.Errorf("the default values do not write max_unauthenticated_conns: 1024:\n%s", dtext)
	}
	for _, s := range def.all("StatefulSet") {
		if _, flags := args(t, container(t, s)); flags["policy-poll"] != "" {
			t.Errorf("%s: --policy-poll set by default", s.name())
		}
	}
}

// tunablesRejected are the bad tunables, for TestValuesRejected: the
// gateway's bounds, checked by the chart.
var tunablesRejected = []struct {
	name    string
	overlay string
	want    []string
}{
	{"drain grace over 1m", "gateway: {config: {drain_grace: 61s}}", []string{"gateway.config.drain_grace", "[0, 1m]"}},
	{"drain grace in words", "gateway: {config: {drain_grace: one second}}", []string{"/gateway/config/drain_grace"}},
	{"idle timeout under 500ms", "gateway: {config: {shards: {idle_timeout: 499ms, keep_alive: 100ms}}}", []string{"gateway.config.shards.idle_timeout", "[500ms, 5m]"}},
	{"idle timeout over 5m", "gateway: {config: {shards: {idle_timeout: 5m1s}}}", []string{"gateway.config.shards.idle_timeout"}},
	{"keep-alive over half the default idle timeout", "gateway: {config: {shards: {keep_alive: 1300ms}}}", []string{"gateway.config.shards.keep_alive", "half"}},
	{"keep-alive over half the idle timeout", "gateway: {config: {shards: {keep_alive: 3s, idle_timeout: 5s}}}", []string{"gateway.config.shards.keep_alive"}},
	{"keep-alive zero", "gateway: {config: {shards: {keep_alive: 0s}}}", []string{"gateway.config.shards.keep_alive"}},
	{"fanout timeout under 100ms", "gateway: {config: {limits: {fanout_timeout: 99ms}}}", []string{"gateway.config.limits.fanout_timeout", "at least 100ms"}},
	{"header timeout under 100ms", "gateway: {config: {limits: {header_timeout: 50ms}}}", []string{"gateway.config.limits.header_timeout", "[100ms, 1h]"}},
	{"body timeout over 1h", "gateway: {config: {limits: {body_timeout: 61m}}}", []string{"gateway.config.limits.body_timeout"}},
	{"idle conn timeout over 1h", "gateway: {config: {limits: {idle_conn_timeout: 2h}}}", []string{"gateway.config.limits.idle_conn_timeout"}},
	{"no unauthenticated connections", "gateway: {config: {limits: {max_unauthenticated_conns: 0}}}", []string{"/gateway/config/limits/max_unauthenticated_conns"}},
	{"policy poll in words", "shard: {policyPoll: 2 seconds}", []string{"/shard/policyPoll"}},
	{"policy poll negative", "shard: {policyPoll: -1s}", []string{"/shard/policyPoll"}},
}

// tunablesAccepted are the tunables at the gateway's bounds, for
// TestValuesAccepted (TestTunablesAcceptedByGateway checks the gateway
// takes them too).
var tunablesAccepted = []struct{ name, overlay string }{
	{"tunables at their lower bounds", "gateway: {config: {drain_grace: 0s, shards: {idle_timeout: 500ms, keep_alive: 250ms}, limits: {fanout_timeout: 100ms, header_timeout: 100ms, body_timeout: 100ms, idle_conn_timeout: 100ms, max_unauthenticated_conns: 1}}}\nshard: {policyPoll: 0s}"},
	{"tunables at their upper bounds", "gateway: {config: {drain_grace: 1m, shards: {idle_timeout: 5m, keep_alive: 2.5m}, limits: {fanout_timeout: 1h, header_timeout: 1h, body_timeout: 60m, idle_conn_timeout: 3600s}}}"},
	{"keep-alive exactly half the default idle timeout", "gateway: {config: {shards: {keep_alive: 1250ms}}}"},
}

// TestTunablesAcceptedByGateway: what the chart accepts at the bounds, the
// gateway accepts.
func TestTunablesAcceptedByGateway(t *testing.T) {
	for _, tc := range tunablesAccepted {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := gatewayYAML(t, render(t, []string{defaultValues, valuesFile(t, tc.overlay)}))
			if out, err := checkConfig(t, text); err != nil {
				t.Fatalf("brainstem gateway --check-config: %v\n%s\n---\n%s", err, out, text)
			}
		})
	}
}

// TestTunablesBoundsMatchGateway: each duration the chart refuses, the
// gateway refuses too (written into gateway.yaml directly, past the
// chart's check), so the two agree on both sides of every bound.
func TestTunablesBoundsMatchGateway(t *testing.T) {
	t.Parallel()
	text := gatewayYAML(t, render(t, []string{defaultValues}))
	for _, tc := range []struct{ section, key, value, want string }{
		{"", "drain_grace", "61s", "drain_grace"},
		{"shards", "idle_timeout", "499ms", "shards.idle_timeout"},
		{"shards", "idle_timeout", "5m1s", "shards.idle_timeout"},
		{"shards", "keep_alive", "1300ms", "shards.keep_alive"},
		{"limits", "fanout_timeout", "99ms", "limits.fanout_timeout"},
		{"limits", "header_timeout", "50ms", "limits.header_timeout"},
		{"limits", "body_timeout", "61m", "limits.body_timeout"},
		{"limits", "idle_conn_timeout", "2h", "limits.idle_conn_timeout"},
		{"limits", "max_unauthenticated_conns", "0", "limits.max_unauthenticated_conns"},
	} {
		var broken string
		if tc.section == "" {
			broken = text + fmt.Sprintf("%s: %s\n", tc.key, tc.value)
		} else {
			head := "\n" + tc.section + ":\n"
			i := strings.Index(text, head)
			if i < 0 {
				t.Fatalf("no %s section in:\n%s", tc.section, text)
			}
			i += len(head)
			broken = text[:i] + fmt.Sprintf("  %s: %s\n", tc.key, tc.value) + text[i:]
			if tc.key == "max_unauthenticated_conns" {
				broken = strings.Replace(broken, "  max_unauthenticated_conns: 1024\n", "", 1)
			}
		}
		out, err := checkConfig(t, broken)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("the gateway accepted %s: %s (err %v):\n%s", tc.key, tc.value, err, out)
		}
	}
}
