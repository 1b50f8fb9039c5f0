package helmtest

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brainstem/brainstem/shard/remote"
)

// remoteDir is where the chart mounts a wing's remote credentials.
const remoteDir = "/etc/brainstem/remote"

// shardOf returns the StatefulSet serving wing.
func shardOf(t *testing.T, r release, wing string) obj {
	t.Helper()
	for _, s := range r.all("StatefulSet") {
		if _, flags := args(t, container(t, s)); flags["wing"] == wing {
			return s
		}
	}
	t.Fatalf("no StatefulSet serves wing %q", wing)
	return nil
}

// gitFlags are a shard's --git-* flags.
func gitFlags(t *testing.T, s obj) map[string]string {
	t.Helper()
	_, flags := args(t, container(t, s))
	out := map[string]string{}
	for k, v := range flags {
		if strings.HasPrefix(k, "git-") {
			out[k] = v
		}
	}
	return out
}

// remoteFiles maps each file a shard sees under remoteDir to its source,
// "Secret/<name>:<key>" or "ConfigMap/<name>:<key>", and checks the volume
// that holds them: read-only, and readable by the pod's group only (the
// kubelet makes projected files root-owned with the fsGroup as group, so
// 0440 is the narrowest mode the shard's uid can read).
func remoteFiles(t *testing.T, s obj) map[string]string {
	t.Helper()
	pod := podSpec(t, s)
	vols := map[string]any{}
	for _, v := range digList(t, pod, "volumes") {
		vols[digString(t, v, "name")] = v
	}
	files := map[string]string{}
	for _, m := range digList(t, container(t, s), "volumeMounts") {
		v := vols[digString(t, m, "name")]
		srcs, _ := dig(v, "projected", "sources").([]any)
		for _, src := range srcs {
			for kind, ref := range map[string]any{"ConfigMap": dig(src, "configMap"), "Secret": dig(src, "secret")} {
				if ref == nil {
					continue
				}
				for _, it := range digList(t, ref, "items") {
					p := path.Join(digString(t, m, "mountPath"), digString(t, it, "path"))
					if !strings.HasPrefix(p, remoteDir+"/") {
						continue
					}
					files[p] = fmt.Sprintf("%s/%s:%s", kind, digString(t, ref, "name"), digString(t, it, "key"))
					if dig(m, "readOnly") != true {
						t.Errorf("%s: %s is on a writable mount", s.name(), p)
					}
					mode := digInt(t, v, "projected", "defaultMode")
					if dig(it, "mode") != nil || mode&0o007 != 0 || mode&0o200 != 0 || mode&0o040 == 0 {
						t.Errorf("%s: %s has mode %o (item mode %v), want group-readable, never writable or world-readable", s.name(), p, mode, dig(it, "mode"))
					}
				}
			}
		}
	}
	if len(files) > 0 {
		sc := digMap(t, pod, "securityContext")
		if sc["fsGroup"] == nil || sc["fsGroup"] != sc["runAsGroup"] {
			t.Errorf("%s: fsGroup %v, runAsGroup %v: the shard could not read its 0440 credential files", s.name(), sc["fsGroup"], sc["runAsGroup"])
		}
	}
	return files
}

// remoteWant is what one wing's shard should get.
type remoteWant struct {
	flags map[string]string // its --git-* flags
	files map[string]string // remoteFiles
}

func rf(name string) string { return remoteDir + "/" + name }

// TestRemoteRendered: a wing's remote becomes exactly its --git-* flags
// and read-only credential files from the Secrets (or ConfigMap) named;
// shard.remote is every wing's default and a wing's remote overrides it key
// by key, an explicit false included; a wing without a remote gets neither.
func TestRemoteRendered(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, overlay string
		want          map[string]remoteWant
		knownHosts    map[string]string // ConfigMap name → its known_hosts
	}{
		{name: "no remote by default", overlay: "{}", want: map[string]remoteWant{"payments": {}}},
		{name: "https token, webhook and timing", overlay: `wings:
  - name: payments
    policy: {readers: ["*"]}
    remote:
      enabled: true
      url: https://github.com/acme/brain.git
      branch: brain
      username: x-access-token
      token: {secretName: gh-token}
      webhookSecret: {secretName: gh-hook, key: hook}
      pushDelay: 1s
      pushMaxDelay: 30s
      pullInterval: 1m
  - {name: legal, policy: {readers: ["*"]}}
`, want: map[string]remoteWant{
			"payments": {flags: map[string]string{
				"git-remote": "https://github.com/acme/brain.git", "git-branch": "brain", "git-username": "x-access-token",
				"git-token-file": rf("token"), "git-webhook-secret-file": rf("webhook-secret"),
				"git-push-delay": "1s", "git-push-max-delay": "30s", "git-pull-interval": "1m",
			}, files: map[string]string{rf("token"): "Secret/gh-token:token", rf("webhook-secret"): "Secret/gh-hook:hook"}},
			"legal": {},
		}},
		{name: "ssh deploy key, inline known_hosts", overlay: `wings:
  - name: platform
    policy: {readers: ["*"]}
    remote:
      enabled: true
      url: git@gitlab.com:acme/brain.git
      sshKey: {secretName: deploy-key}
      knownHosts: {value: "gitlab.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAfuCHKVTjquxvt6CM6tdG4SLp1Btn/nOeHHE5UOzRdf\n"}
`, want: map[string]remoteWant{
			"platform": {flags: map[string]string{
				"git-remote": "git@gitlab.com:acme/brain.git", "git-ssh-key-file": rf("ssh-key"), "git-known-hosts": rf("known_hosts"),
			}, files: map[string]string{rf("ssh-key"): "Secret/deploy-key:ssh-privatekey", rf("known_hosts"): "ConfigMap/rel-brainstem-platform-git-known-hosts:known_hosts"}},
		}, knownHosts: map[string]string{"rel-brainstem-platform-git-known-hosts": "gitlab.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAfuCHKVTjquxvt6CM6tdG4SLp1Btn/nOeHHE5UOzRdf\n"}},
		{name: "ssh, known_hosts from a Secret and from a ConfigMap", overlay: `wings:
  - name: a
    policy: {}
    remote: {enabled: true, url: "ssh://git@git.acme.com:2222/brain.git", sshKey: {secretName: key-a, key: id}, knownHosts: {secretName: hosts, key: kh}}
  - name: b
    policy: {}
    remote: {enabled: true, url: "ssh://git@git.acme.com/brain.git", sshKey: {secretName: key-b}, knownHosts: {configMapName: ssh-hosts}}
`, want: map[string]remoteWant{
			"a": {flags: map[string]string{"git-remote": "ssh://git@git.acme.com:2222/brain.git", "git-ssh-key-file": rf("ssh-key"), "git-known-hosts": rf("known_hosts")},
				files: map[string]string{rf("ssh-key"): "Secret/key-a:id", rf("known_hosts"): "Secret/hosts:kh"}},
			"b": {flags: map[string]string{"git-remote": "ssh://git@git.acme.com/brain.git", "git-ssh-key-file": rf("ssh-key"), "git-known-hosts": rf("known_hosts")},
				files: map[string]string{rf("ssh-key"): "Secret/key-b:ssh-privatekey", rf("known_hosts"): "ConfigMap/ssh-hosts:known_hosts"}},
		}},
		{name: "shard defaults, wing overrides", overlay: `shard:
  allowPurge: true
  remote:
    enabled: true
    url: https://git.acme.com/acme/brain.git
    username: oauth2
    token: {secretName: shared-token}
    forcePushOnPurge: true
wings:
  - {name: a, policy: {}}
  - {name: b, policy: {}, remote: {branch: other, token: {key: b-token}}}
  - {name: c, policy: {}, remote: {enabled: false}}
  - {name: d, policy: {}, allowPurge: false, remote: {forcePushOnPurge: false, url: "git://git.acme.com/d.git", token: {secretName: ""}}}
`, want: map[string]remoteWant{
			"a": {flags: map[string]string{"git-remote": "https://git.acme.com/acme/brain.git", "git-username": "oauth2", "git-token-file": rf("token"), "git-force-push-on-purge": "true"},
				files: map[string]string{rf("token"): "Secret/shared-token:token"}},
			"b": {flags: map[string]string{"git-remote": "https://git.acme.com/acme/brain.git", "git-branch": "other", "git-username": "oauth2", "git-token-file": rf("token"), "git-force-push-on-purge": "true"},
				files: map[string]string{rf("token"): "Secret/shared-token:b-token"}},
			"c": {},
			"d": {flags: map[string]string{"git-remote": "git://git.acme.com/d.git", "git-username": "oauth2"}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, []string{defaultValues, valuesFile(t, tc.overlay)})
			checkKubeTypes(t, r)
			if n := len(r.all("StatefulSet")); n != len(tc.want) {
				t.Fatalf("%d StatefulSets, want %d", n, len(tc.want))
			}
			for wing, want := range tc.want {
				s := shardOf(t, r, wing)
				if got := gitFlags(t, s); !maps.Equal(got, want.flags) {
					t.Errorf("%s: --git-* flags\n got %v\nwant %v", wing, got, want.flags)
				}
				if got := remoteFiles(t, s); !maps.Equal(got, want.files) {
					t.Errorf("%s: credential files\n got %v\nwant %v", wing, got, want.files)
				}
			}
			var cms []string
			for _, cm := range r.all("ConfigMap") {
				if strings.HasSuffix(cm.name(), "-git-known-hosts") {
					cms = append(cms, cm.name())
					if got := dig(cm, "data", "known_hosts"); got != tc.knownHosts[cm.name()] {
						t.Errorf("ConfigMap %s: known_hosts %q, want %q", cm.name(), got, tc.knownHosts[cm.name()])
					}
				}
			}
			if want := slices.Sorted(maps.Keys(tc.knownHosts)); !equalList(slices.Sorted(slices.Values(cms)), want) {
				t.Errorf("known_hosts ConfigMaps %v, want %v", cms, want)
			}
		})
	}
}

// egressSummary renders a NetworkPolicy's egress rules as lines
// "<proto>/<port>,… -> <peers as JSON>" ("*" for any destination, "all
// ports" without ports).
func egressSummary(t *testing.T, np obj) []string {
	t.Helper()
	var out []string
	for _, rule := range digList(t, np, "spec", "egress") {
		var ports []string
		if ps, ok := dig(rule, "ports").([]any); ok {
			for _, p := range ps {
				ports = append(ports, fmt.Sprintf("%v/%v", dig(p, "protocol"), dig(p, "port")))
			}
		} else {
			ports = []string{"all ports"}
		}
		to := "*"
		if peers, ok := dig(rule, "to").([]any); ok {
			b, err := json.Marshal(peers)
			if err != nil {
				t.Fatal(err)
			}
			to = string(b)
		}
		out = append(out, strings.Join(ports, ",")+" -> "+to)
	}
	return out
}

const kubeDNS = `UDP/53,TCP/53 -> [{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"kube-system"}},"podSelector":{"matchLabels":{"k8s-app":"kube-dns"}}}]`

// egressPolicies maps each wing to the egress rules of the NetworkPolicies
// that select its shard pod (nil: none, so its egress is open).
func egressPolicies(t *testing.T, r release) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, s := range r.all("StatefulSet") {
		_, flags := args(t, container(t, s))
		labels := stringMap(t, dig(s, "spec", "template", "metadata", "labels"))
		for _, np := range r.all("NetworkPolicy") {
			types := digList(t, np, "spec", "policyTypes")
			if !slices.Contains(types, any("Egress")) {
				continue
			}
			if selects(stringMap(t, dig(np, "spec", "podSelector", "matchLabels")), labels) {
				out[flags["wing"]] = append(out[flags["wing"]], egressSummary(t, np)...)
			}
		}
	}
	return out
}

// TestRemoteEgressPolicy: with networkPolicy on, each shard with a remote
// gets an egress policy of its own that allows DNS, the remote (its URL's
// port to anywhere, or the destinations given), the tracing collector when
// tracing is on (which the policy would otherwise cut off) and the extra
// rules; shards without a remote get none, and networkPolicy off renders
// none.
func TestRemoteEgressPolicy(t *testing.T) {
	t.Parallel()
	wing := func(name, remote string) string {
		return fmt.Sprintf("  - {name: %s, policy: {}, remote: {enabled: true, %s}}\n", name, remote)
	}
	cases := []struct {
		name, overlay string
		want          map[string][]string
	}{
		{"ports from each URL form", "wings:\n" +
			wing("https", `url: "https://github.com/acme/brain.git"`) +
			wing("httpsport", `url: "https://git.acme.com:8443/brain.git"`) +
			wing("http", `url: "http://gitea.brain.svc:3000/acme/brain.git"`) +
			wing("scp", `url: "git@github.com:acme/brain.git"`) +
			wing("ssh", `url: "ssh://git@git.acme.com:2222/brain.git"`) +
			wing("sshdefault", `url: "ssh://git@git.acme.com/brain.git"`) +
			wing("git", `url: "git://git.acme.com/brain.git"`) +
			wing("path", `url: /srv/brain.git`) +
			"  - {name: plain, policy: {}}\n",
			map[string][]string{
				"https":      {kubeDNS, "TCP/443 -> *"},
				"httpsport":  {kubeDNS, "TCP/8443 -> *"},
				"http":       {kubeDNS, "TCP/3000 -> *"},
				"scp":        {kubeDNS, "TCP/22 -> *"},
				"ssh":        {kubeDNS, "TCP/2222 -> *"},
				"sshdefault": {kubeDNS, "TCP/22 -> *"},
				"git":        {kubeDNS, "TCP/9418 -> *"},
				"path":       {kubeDNS},
			}},
		{"destinations given, tracing on, custom DNS, extra rules", `wings:
  - name: payments
    policy: {}
    remote:
      enabled: true
      url: https://github.com/acme/brain.git
      egress:
        - {cidr: 140.82.112.0/20, except: [140.82.112.0/24]}
        - {to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: gitea}}}], ports: [3000, 22]}
  - {name: plain, policy: {}}
tracing: {enabled: true, endpoint: "http://otel-collector.observability:4318"}
networkPolicy:
  egress:
    dns: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: dns-system}}, podSelector: null}
    extraRules: [{to: [{ipBlock: {cidr: 10.0.0.10/32}}], ports: [{port: 3128, protocol: TCP}]}]
`, map[string][]string{"payments": {
			`UDP/53,TCP/53 -> [{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"dns-system"}}}]`,
			`TCP/443 -> [{"ipBlock":{"cidr":"140.82.112.0/20","except":["140.82.112.0/24"]}}]`,
			`TCP/3000,TCP/22 -> [{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"gitea"}}}]`,
			"TCP/4318 -> *",
			`TCP/3128 -> [{"ipBlock":{"cidr":"10.0.0.10/32"}}]`,
		}}},
		{"tracing collector peers, https endpoint without a port", `wings:
  - {name: payments, policy: {}, remote: {enabled: true, url: "git@github.com:acme/brain.git", sshKey: {secretName: k}, knownHosts: {value: x}}}
tracing: {enabled: true, endpoint: "https://otlp.example.com"}
networkPolicy: {egress: {tracing: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: observability}}}]}}
`, map[string][]string{"payments": {kubeDNS, "TCP/22 -> *",
			`TCP/443 -> [{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"observability"}}}]`}}},
		{"network policies off", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git"}}]
networkPolicy: {enabled: false}
`, map[string][]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, []string{defaultValues, valuesFile(t, tc.overlay)})
			checkKubeTypes(t, r)
			got := egressPolicies(t, r)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("egress rules by wing:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestRemoteWebhookIngress: the opt-in webhook Ingress routes exactly POST
// /remote/webhook on the wing's own host to that wing's shard admin port
// (the Service port that targets the container's admin port), with the
// gateway Ingress's class unless told otherwise and TLS as configured; a
// NetworkPolicy opens that admin port to the ingress controller (or the
// peers given) and to nothing else; without the opt-in neither exists.
func TestRemoteWebhookIngress(t *testing.T) {
	t.Parallel()
	const hooked = `wings:
  - name: payments
    policy: {}
    remote:
      enabled: true
      url: https://github.com/acme/brain.git
      token: {secretName: t}
      webhookSecret: {secretName: hook}
      webhookIngress: {enabled: true, host: payments-hooks.acme.com%s}
  - {name: legal, policy: {}, remote: {enabled: true, url: "https://github.com/acme/legal.git", webhookSecret: {secretName: hook2}}}
`
	ingressCtl := []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "ingress-nginx"}}}}
	cases := []struct {
		name, extra, np string
		class           string
		annotations     map[string]any
		tlsSecret       string // "" none
		from            []any
	}{
		{"defaults", "", "", "nginx", nil, "", ingressCtl},
		{"class, annotations, cert-manager, own peers", ", className: traefik, annotations: {a: b}, tls: {certManager: {enabled: true, issuer: le}}",
			"networkPolicy: {webhookFrom: [{namespaceSelector: {matchLabels: {name: traefik}}, podSelector: {matchLabels: {app: traefik}}}]}\n",
			"traefik", map[string]any{"a": "b", "cert-manager.io/cluster-issuer": "le"}, "rel-brainstem-payments-git-webhook-tls",
			[]any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"name": "traefik"}}, "podSelector": map[string]any{"matchLabels": map[string]any{"app": "traefik"}}}}},
		{"existing TLS secret", ", tls: {existingSecret: hooks-tls}", "", "nginx", nil, "hooks-tls", ingressCtl},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := render(t, []string{defaultValues, valuesFile(t, fmt.Sprintf(hooked, tc.extra)+tc.np)})
			checkKubeTypes(t, r)
			ing := r.get(t, "Ingress", "rel-brainstem-payments-git-webhook")
			if n := len(r.all("Ingress")); n != 2 {
				t.Errorf("%d Ingresses, want the gateway's and payments' webhook", n)
			}
			if got := dig(ing, "spec", "ingressClassName"); got != tc.class {
				t.Errorf("ingressClassName %v, want %s", got, tc.class)
			}
			if got, _ := dig(ing, "metadata", "annotations").(map[string]any); !reflect.DeepEqual(got, tc.annotations) {
				t.Errorf("annotations %v, want %v", got, tc.annotations)
			}
			tls, _ := dig(ing, "spec", "tls").([]any)
			if tc.tlsSecret == "" && tls != nil || tc.tlsSecret != "" && (len(tls) != 1 || dig(tls[0], "secretName") != tc.tlsSecret || dig(tls[0], "hosts", 0) != "payments-hooks.acme.com") {
				t.Errorf("tls %v, want secret %q for the webhook host", tls, tc.tlsSecret)
			}
			rules := digList(t, ing, "spec", "rules")
			if len(rules) != 1 || dig(rules[0], "host") != "payments-hooks.acme.com" {
				t.Fatalf("rules %v, want one for payments-hooks.acme.com", rules)
			}
			paths := digList(t, rules[0], "http", "paths")
			if len(paths) != 1 || dig(paths[0], "path") != "/remote/webhook" || dig(paths[0], "pathType") != "Exact" {
				t.Fatalf("paths %v, want exactly /remote/webhook (Exact)", paths)
			}
			svcName := digString(t, paths[0], "backend", "service", "name")
			portName := digString(t, paths[0], "backend", "service", "port", "name")
			svc := r.get(t, "Service", svcName)
			s := shardOf(t, r, "payments")
			if !selects(stringMap(t, dig(svc, "spec", "selector")), stringMap(t, dig(s, "spec", "template", "metadata", "labels"))) {
				t.Errorf("the webhook backend %s does not select payments' shard", svcName)
			}
			var target any
			for _, p := range digList(t, svc, "spec", "ports") {
				if dig(p, "name") == portName {
					target = dig(p, "targetPort")
				}
			}
			if n, proto := containerPort(t, container(t, s), fmt.Sprint(target)); n != defShardAdmin || proto != "TCP" {
				t.Errorf("the webhook reaches port %d/%s, want the admin port %d", n, proto, defShardAdmin)
			}
			if gitFlags(t, s)["git-webhook-secret-file"] == "" {
				t.Error("payments has a webhook Ingress but no --git-webhook-secret-file")
			}
			np := r.get(t, "NetworkPolicy", "rel-brainstem-payments-git-webhook")
			if !selects(stringMap(t, dig(np, "spec", "podSelector", "matchLabels")), stringMap(t, dig(s, "spec", "template", "metadata", "labels"))) ||
				selects(stringMap(t, dig(np, "spec", "podSelector", "matchLabels")), stringMap(t, dig(shardOf(t, r, "legal"), "spec", "template", "metadata", "labels"))) {
				t.Error("the webhook NetworkPolicy must select payments' shard and no other")
			}
			in := digList(t, np, "spec", "ingress")
			if len(in) != 1 || !reflect.DeepEqual(dig(in[0], "ports"), []any{map[string]any{"port": defShardAdmin, "protocol": "TCP"}}) {
				t.Fatalf("webhook NetworkPolicy ingress %v, want the admin port only", in)
			}
			if got := dig(in[0], "from"); !reflect.DeepEqual(got, tc.from) {
				t.Errorf("webhook NetworkPolicy from %v, want %v", got, tc.from)
			}
			if _, ok := r.find("NetworkPolicy", "rel-brainstem-legal-git-webhook"); ok {
				t.Error("legal has no webhook Ingress, yet its admin port is opened")
			}
		})
	}
	r := render(t, []string{defaultValues, valuesFile(t, strings.Replace(fmt.Sprintf(hooked, ""), "enabled: true, host", "enabled: false, host", 1))})
	if n := len(r.all("Ingress")); n != 1 {
		t.Errorf("webhook Ingress off: %d Ingresses, want the gateway's only", n)
	}
	if _, ok := r.find("NetworkPolicy", "rel-brainstem-payments-git-webhook"); ok {
		t.Error("webhook Ingress off, yet the admin port is opened to the ingress controller")
	}
}

// remoteRejected are the bad remote values, for TestValuesRejected: the
// schema's refusals and the chart's own (`fail`) on each wing's effective
// remote, which mirror the shard's.
var remoteRejected = []struct {
	name    string
	overlay string
	want    []string
}{
	{"remote without url", `wings: [{name: payments, policy: {}, remote: {enabled: true}}]`, []string{"wings[0] (payments): remote.url", "required"}},
	{"shard remote without url", `shard: {remote: {enabled: true}}`, []string{"wings[0] (payments): remote.url", "required"}},
	{"url but not enabled", `wings: [{name: payments, policy: {}, remote: {url: "https://github.com/acme/brain.git"}}]`, []string{"remote.url is set but the remote is not enabled", "enabled: true"}},
	{"password in the url", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://bot:s3cret@github.com/acme/brain.git"}}]`, []string{"wings[0] (payments): remote.url: carries a password", "remote.token"}},
	{"password in a disabled remote's url", `shard: {remote: {url: "https://bot:s3cret@github.com/acme/brain.git"}}`, []string{"remote.url: carries a password"}},
	{"url of no known form", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "ftp://github.com/acme/brain.git"}}]`, []string{"wings[0] (payments): remote.url: not an https://"}},
	{"url with a bad escape", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/%zz.git"}}]`, []string{"remote.url: not an https://"}},
	{"url with a port over 65535", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com:65536/acme/brain.git"}}]`, []string{"remote.url: port 65536 is outside 1..65535"}},
	{"token and ssh key in one remote", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", token: {secretName: t}, sshKey: {secretName: k}}}]`, []string{"/wings/0/remote"}},
	{"token from shard, ssh key on the wing", `shard: {remote: {token: {secretName: t}}}
wings: [{name: payments, policy: {}, remote: {enabled: true, url: "git@github.com:acme/brain.git", sshKey: {secretName: k}, knownHosts: {value: x}}}]`, []string{"wings[0] (payments): remote", "exactly one kind of credential"}},
	{"token with an ssh url", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "git@github.com:acme/brain.git", token: {secretName: t}}}]`, []string{"remote.token", "https://", "ssh URL"}},
	{"token with a git url", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "git://git.acme.com/brain.git", token: {secretName: t}}}]`, []string{"remote.token", "git URL"}},
	{"ssh key with an https url", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", sshKey: {secretName: k}, knownHosts: {value: x}}}]`, []string{"remote.sshKey", "https URL"}},
	{"ssh key without known hosts", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "git@github.com:acme/brain.git", sshKey: {secretName: k}}}]`, []string{"remote.knownHosts", "required with sshKey", "ssh-keyscan"}},
	{"known hosts from two places", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "git@github.com:acme/brain.git", sshKey: {secretName: k}, knownHosts: {secretName: s, value: x}}}]`, []string{"/wings/0/remote/knownHosts"}},
	{"known hosts from shard and wing", `shard: {remote: {knownHosts: {configMapName: hosts}}}
wings: [{name: payments, policy: {}, remote: {enabled: true, url: "git@github.com:acme/brain.git", sshKey: {secretName: k}, knownHosts: {value: x}}}]`, []string{"remote.knownHosts", "exactly one"}},
	{"purge with a remote", `wings: [{name: payments, policy: {}, allowPurge: true, remote: {enabled: true, url: "https://github.com/acme/brain.git"}}]`, []string{"wings[0] (payments)", "allowPurge with a remote needs remote.forcePushOnPurge", "force-push-on-purge"}},
	{"shard-wide purge with a remote", `shard: {allowPurge: true, remote: {enabled: true, url: "https://github.com/acme/brain.git"}}`, []string{"allowPurge with a remote needs remote.forcePushOnPurge"}},
	{"wing turns off the shard's force push", `shard: {allowPurge: true, remote: {enabled: true, url: "https://github.com/acme/brain.git", forcePushOnPurge: true}}
wings: [{name: payments, policy: {}, remote: {forcePushOnPurge: false}}]`, []string{"allowPurge with a remote needs remote.forcePushOnPurge"}},
	{"push max delay below push delay", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", pushDelay: 1m, pushMaxDelay: 30s}}]`, []string{"remote.pushMaxDelay", "30s is below pushDelay 1m"}},
	{"push max delay below the default push delay", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", pushMaxDelay: 1500ms}}]`, []string{"remote.pushMaxDelay", "1500ms is below pushDelay 2s (the shard's default)"}},
	{"pull interval under 100ms", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", pullInterval: 50ms}}]`, []string{"remote.pullInterval", "100ms"}},
	{"push delay in words", `wings: [{name: payments, policy: {}, remote: {pushDelay: 2 seconds}}]`, []string{"/wings/0/remote/pushDelay"}},
	{"remote unknown key", `shard: {remote: {urls: ["https://github.com/acme/brain.git"]}}`, []string{"/shard/remote", "urls"}},
	{"token without a key", `shard: {remote: {token: {secretName: t, key: ""}}}`, []string{"/shard/remote/token/key"}},
	{"webhook ingress without secret", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", webhookIngress: {enabled: true, host: hooks.acme.com}}}]`, []string{"remote.webhookIngress", "webhookSecret.secretName"}},
	{"webhook ingress without host", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", webhookSecret: {secretName: h}, webhookIngress: {enabled: true}}}]`, []string{"remote.webhookIngress.host", "required"}},
	{"two wings, one webhook host", `shard: {remote: {enabled: true, url: "https://github.com/acme/brain.git", webhookSecret: {secretName: h}, webhookIngress: {enabled: true, host: hooks.acme.com}}}
wings: [{name: payments, policy: {}}, {name: legal, policy: {}}]`, []string{"wings[1] (legal)", `"hooks.acme.com" is also the webhook host of wing payments`}},
	{"webhook cert-manager without issuer", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", webhookSecret: {secretName: h}, webhookIngress: {enabled: true, host: hooks.acme.com, tls: {certManager: {enabled: true}}}}}]`, []string{"remote.webhookIngress.tls.certManager.issuer"}},
	{"webhook host with a path", `wings: [{name: payments, policy: {}, remote: {webhookIngress: {host: "hooks.acme.com/x"}}}]`, []string{"/wings/0/remote/webhookIngress/host"}},
	{"egress with cidr and peers", `shard: {remote: {egress: [{cidr: 10.0.0.0/8, to: [{podSelector: {}}]}]}}`, []string{"/shard/remote/egress/0"}},
	{"egress cidr not a cidr", `shard: {remote: {egress: [{cidr: github.com}]}}`, []string{"/shard/remote/egress/0"}},
	{"egress port 0", `shard: {remote: {egress: [{cidr: 10.0.0.0/8, ports: [0]}]}}`, []string{"/shard/remote/egress/0/ports/0"}},
	{"egress unknown key", `networkPolicy: {egress: {dns: {selector: {}}}}`, []string{"/networkPolicy/egress/dns", "selector"}},
}

// remoteAccepted are remote edge cases that render, for TestValuesAccepted.
var remoteAccepted = []struct{ name, overlay string }{
	{"remote off with settings", `shard: {remote: {url: "https://github.com/acme/brain.git", token: {secretName: t}}}`},
	{"bare repository path, no credential", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: /srv/brain.git}}]`},
	{"file url", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "file:///srv/brain.git"}}]`},
	{"purge with force push", `wings: [{name: payments, policy: {}, allowPurge: true, remote: {enabled: true, url: "https://github.com/acme/brain.git", forcePushOnPurge: true}}]`},
	{"push max delay equal to push delay", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", pushDelay: 30s, pushMaxDelay: 0.5m, pullInterval: 100ms}}]`},
	{"user name in an https url", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://bot@github.com/acme/brain.git", token: {secretName: t}}}]`},
	{"ipv6 egress", `wings: [{name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", egress: [{cidr: "2a0a:a440::/29"}]}}]`},
	{"one wing opts out of the shard's remote", `shard: {allowPurge: true, remote: {enabled: true, url: "https://github.com/acme/brain.git"}}
wings: [{name: payments, policy: {}, remote: {enabled: false}}]`},
}

// FuzzRemoteURL: any string as a wing's remote URL is either refused by the
// chart with an error naming remote.url and not repeating the URL (it may
// carry a password), or accepted by the shard's own
// remote.Config.Validate too, passed on unchanged as --git-remote, and
// opened in the egress policy on the port the shard will dial (its
// transport's, or the URL's own), with no port for a path. The seeds run in
// every `go test`.
func FuzzRemoteURL(f *testing.F) {
	for _, s := range []string{
		"https://github.com/acme/brain.git", "http://gitea.svc:3000/a/b.git", "https://h:0443/x", "https://h:99999/x",
		"https://h:0/x", "https://h?x:1", "https://a@b?c@d", "https://bot@github.com/a.git", "https://u:p@h/x",
		"https://%zz/x", "https://h/%zz", "https://h/a%20b", "HTTPS://h/x", "ftp://h/x", "https://", "https://h:/x",
		"git@github.com:acme/brain.git", "ssh://git@[::1]:2222/x", "ssh://git@h/x", "git://h:9419/x", "git://h",
		"file:///srv/b.git", "file://host/x", "/srv/b.git", "", "relative/path", "a@b:", "https://h/\x01", "{{ .Values }}",
		"https://bot:hunter22@h/x", "https://bot:hunter22/x@h/%zz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !utf8.ValidString(raw) {
			return // values files are UTF-8 text: such a URL cannot reach the chart
		}
		values := valuesFile(t, fmt.Sprintf("wings:\n  - {name: payments, policy: {}, remote: {enabled: true, url: %s}}\n", yamlQuote(raw)))
		out, err := helmTemplate([]string{defaultValues, values})
		if err != nil {
			if !strings.Contains(err.Error(), "remote.url") {
				t.Fatalf("URL %q refused without naming remote.url: %v", raw, err)
			}
			if m := passwordRE.FindStringSubmatch(raw); m != nil && len(m[1]) >= 6 && strings.Contains(err.Error(), m[1]) {
				t.Fatalf("the refusal repeats the URL's password %q: %v", m[1], err)
			}
			return
		}
		cfg := remote.Config{URL: raw, Wing: "payments"}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("the chart accepts URL %q, the shard refuses it: %v", raw, err)
		}
		objs, err := decodeManifests(out)
		if err != nil {
			t.Fatal(err)
		}
		r := release{raw: out, objs: objs}
		if got := gitFlags(t, shardOf(t, r, "payments"))["git-remote"]; got != raw {
			t.Fatalf("--git-remote=%q, want %q", got, raw)
		}
		want := []string{kubeDNS}
		if port := shardPort(t, cfg); port != 0 {
			want = append(want, fmt.Sprintf("TCP/%d -> *", port))
		}
		if got := egressPolicies(t, r)["payments"]; !slices.Equal(got, want) {
			t.Fatalf("URL %q: egress %q, want %q", raw, got, want)
		}
	})
}

// passwordRE finds the password of a URL's user information.
var passwordRE = regexp.MustCompile(`://[^/?#@]*:([^@]+)@`)

// shardPort is the TCP port the shard dials for cfg's URL (0: none, a path).
func shardPort(t *testing.T, cfg remote.Config) int {
	t.Helper()
	kind, err := cfg.Transport()
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[remote.Transport]int{remote.SSH: 22, remote.Git: 9418}
	if kind == remote.File {
		return 0
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Scheme == "" || !strings.Contains(cfg.URL, "://") {
		return defaults[kind] // user@host:path
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if u.Scheme == "http" {
		return 80
	}
	if kind == remote.HTTPS {
		return 443
	}
	return defaults[kind]
}

// TestRemoteURLSecretNotRepeated: a remote URL that carries a password is
// refused without the password in the error, whichever rule refuses it.
func TestRemoteURLSecretNotRepeated(t *testing.T) {
	t.Parallel()
	for _, u := range []string{
		"https://bot:pw-7Qx2v9@github.com/acme/brain.git", // a password
		"ssh://git:pw-7Qx2v9@github.com/acme/brain.git",
		"https://bot:pw-7Qx2v9/x@github.com/acme/brain.git", // a password with a slash: not even a URL
		"https://bot:pw-7Qx2v9@github.com/%zz",
	} {
		_, err := helmTemplate([]string{defaultValues, valuesFile(t, fmt.Sprintf("wings: [{name: payments, policy: {}, remote: {enabled: true, url: %q}}]\n", u))})
		if err == nil {
			t.Errorf("%s rendered", u)
			continue
		}
		if strings.Contains(err.Error(), "pw-7Qx2v9") {
			t.Errorf("the refusal of a URL with a password repeats it: %v", err)
		}
	}
}

// TestRemoteRulesMatchShard: the chart and the shard draw the same lines.
// The --git-* flags of every remote the chart renders parse and validate
// with the shard's own flag set (remote.Flags, remote.Config.Validate), and
// the flags of each remote the chart refuses for a rule of the shard's are
// refused by the shard too.
func TestRemoteRulesMatchShard(t *testing.T) {
	t.Parallel()
	validate := func(argv []string) error {
		fs := flag.NewFlagSet("shard", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		get := remote.Flags(fs)
		if err := fs.Parse(argv); err != nil {
			return err
		}
		cfg := get()
		if cfg == nil {
			return errors.New("no remote")
		}
		cfg.Wing = "payments"
		return cfg.Validate()
	}
	overlays := []string{`wings:
  - {name: payments, policy: {}, remote: {enabled: true, url: "https://github.com/acme/brain.git", branch: brain, username: x-access-token, token: {secretName: t}, webhookSecret: {secretName: h}, pushDelay: 1s, pushMaxDelay: 30s, pullInterval: 1m}}
  - {name: ssh, policy: {}, remote: {enabled: true, url: "git@github.com:acme/brain.git", sshKey: {secretName: k}, knownHosts: {value: x}, forcePushOnPurge: true}}
`}
	for _, c := range remoteAccepted {
		overlays = append(overlays, c.overlay)
	}
	for _, overlay := range overlays {
		r := render(t, []string{defaultValues, valuesFile(t, overlay)})
		for _, s := range r.all("StatefulSet") {
			var argv []string
			for k, v := range gitFlags(t, s) {
				argv = append(argv, "--"+k+"="+v)
			}
			if len(argv) == 0 {
				continue
			}
			if err := validate(argv); err != nil {
				t.Errorf("the chart renders %v, the shard refuses it: %v", argv, err)
			}
		}
	}
	for _, argv := range [][]string{
		{"--git-remote=https://bot:s3cret@github.com/acme/brain.git"},
		{"--git-remote=ftp://github.com/acme/brain.git"},
		{"--git-remote=git@github.com:acme/brain.git", "--git-token-file=/t"},
		{"--git-remote=git://git.acme.com/brain.git", "--git-token-file=/t"},
		{"--git-remote=https://github.com/acme/brain.git", "--git-ssh-key-file=/k", "--git-known-hosts=/h"},
		{"--git-remote=git@github.com:acme/brain.git", "--git-ssh-key-file=/k"},
		{"--git-remote=https://github.com/acme/brain.git", "--git-push-delay=1m", "--git-push-max-delay=30s"},
		{"--git-remote=https://github.com/acme/brain.git", "--git-push-max-delay=1500ms"},
		{"--git-remote=https://github.com/acme/brain.git", "--git-pull-interval=50ms"},
	} {
		if err := validate(argv); err == nil {
			t.Errorf("the chart refuses %v, the shard accepts it", argv)
		}
	}
}
