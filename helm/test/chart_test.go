package helmtest

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// scenarioValues is the part of a values file the checks need to know.
type scenarioValues struct {
	PublicURL string `yaml:"publicURL"`
	OIDC      struct {
		Issuers []struct {
			URL        string   `yaml:"url"`
			Audiences  []string `yaml:"audiences"`
			Algorithms []string `yaml:"algorithms"`
		} `yaml:"issuers"`
	} `yaml:"oidc"`
	Gateway struct {
		TLS struct {
			ExistingSecret string `yaml:"existingSecret"`
		} `yaml:"tls"`
		Autoscaling struct {
			Enabled     bool `yaml:"enabled"`
			MinReplicas int  `yaml:"minReplicas"`
			MaxReplicas int  `yaml:"maxReplicas"`
		} `yaml:"autoscaling"`
	} `yaml:"gateway"`
	Wings []struct {
		Name    string `yaml:"name"`
		Policy  policy `yaml:"policy"`
		Storage struct {
			Size         string `yaml:"size"`
			StorageClass string `yaml:"storageClass"`
		} `yaml:"storage"`
		Resources map[string]any `yaml:"resources"`
	} `yaml:"wings"`
	OAuth struct {
		Enabled  bool `yaml:"enabled"`
		Upstream struct {
			ClientSecret struct {
				ExistingSecret string `yaml:"existingSecret"`
			} `yaml:"clientSecret"`
		} `yaml:"upstream"`
		SigningKey struct {
			ExistingSecret string `yaml:"existingSecret"`
			Previous       []struct {
				ExistingSecret string `yaml:"existingSecret"`
			} `yaml:"previous"`
		} `yaml:"signingKey"`
		ServiceAccounts []struct {
			Credentials []struct {
				SecretSHA256 *struct {
					ExistingSecret string `yaml:"existingSecret"`
				} `yaml:"secretSha256"`
				PublicKey *struct {
					ExistingSecret string `yaml:"existingSecret"`
				} `yaml:"publicKey"`
			} `yaml:"credentials"`
		} `yaml:"serviceAccounts"`
	} `yaml:"oauth"`
	MTLS struct {
		Mode            string `yaml:"mode"`
		ExistingSecrets struct {
			Gateway string            `yaml:"gateway"`
			Shards  map[string]string `yaml:"shards"`
		} `yaml:"existingSecrets"`
	} `yaml:"mtls"`
	Ingress struct {
		Host string `yaml:"host"`
		TLS  struct {
			ExistingSecret string `yaml:"existingSecret"`
			CertManager    struct {
				Enabled bool   `yaml:"enabled"`
				Issuer  string `yaml:"issuer"`
			} `yaml:"certManager"`
		} `yaml:"tls"`
	} `yaml:"ingress"`
	ServiceMonitor struct {
		Enabled bool `yaml:"enabled"`
	} `yaml:"serviceMonitor"`
}

func loadScenario(t *testing.T, file string) scenarioValues {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v scenarioValues
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if v.MTLS.Mode == "" {
		v.MTLS.Mode = "generate"
	}
	return v
}

// Chart defaults the checks compare against (values.yaml).
const (
	defHTTPSPort  = 8443
	defAdminPort  = 9090
	defQUICPort   = 7443
	defShardAdmin = 9091
	defBrainSize  = "10Gi"
)

// TestScenarios renders every ci/ scenario and checks every invariant of the
// release against its values.
func TestScenarios(t *testing.T) {
	for _, file := range scenarios(t) {
		t.Run(strings.TrimSuffix(filepath.Base(file), "-values.yaml"), func(t *testing.T) {
			t.Parallel()
			v := loadScenario(t, file)
			r := render(t, []string{file})
			checkNames(t, r)
			gw := checkGateway(t, r, v)
			cfg := parseGatewayConfig(t, gatewayYAML(t, r))
			checkGatewayConfig(t, cfg, v)
			checkShards(t, r, v, cfg, gw)
			checkNetworkPolicies(t, r, gw)
			checkServiceMonitors(t, r, v)
			checkMTLS(t, r, v, cfg)
			checkOAuth(t, r, v, cfg)
		})
	}
}

// checkNames: valid, unique names, all in the release namespace.
func checkNames(t *testing.T, r release) {
	t.Helper()
	seen := map[string]bool{}
	for _, o := range r.objs {
		key := o.kind() + "/" + o.name()
		if seen[key] {
			t.Errorf("%s rendered twice", key)
		}
		seen[key] = true
		if !dnsSubdomainRE.MatchString(o.name()) {
			t.Errorf("%s: name is not a DNS subdomain", key)
		}
		switch o.kind() {
		case "Service", "StatefulSet", "Deployment":
			if !dnsLabelRE.MatchString(o.name()) {
				t.Errorf("%s: name is not a DNS label (≤ 63)", key)
			}
		}
		if o.kind() == "StatefulSet" && len(o.name()) > 52 {
			t.Errorf("%s: StatefulSet names must stay ≤ 52 characters (controller-revision-hash label)", key)
		}
		if ns := dig(o, "metadata", "namespace"); ns != namespace {
			t.Errorf("%s: namespace %v, want %s", key, ns, namespace)
		}
	}
}

// wantPodSecurity and wantContainerSecurity are the security contexts every
// brainstem pod must carry.
var (
	wantPodSecurity = map[string]any{
		"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "fsGroup": 65532,
		"fsGroupChangePolicy": "OnRootMismatch",
		"seccompProfile":      map[string]any{"type": "RuntimeDefault"},
	}
	wantContainerSecurity = map[string]any{
		"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
		"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false, "privileged": false,
		"capabilities":   map[string]any{"drop": []any{"ALL"}},
		"seccompProfile": map[string]any{"type": "RuntimeDefault"},
	}
)

// checkPod checks what every brainstem pod shares: security, probes on the
// admin port, resources, no service-account token.
func checkPod(t *testing.T, o obj, adminPort int) {
	t.Helper()
	ps := podSpec(t, o)
	if !reflect.DeepEqual(ps["securityContext"], wantPodSecurity) {
		t.Errorf("%s %s: pod securityContext\n got %v\nwant %v", o.kind(), o.name(), ps["securityContext"], wantPodSecurity)
	}
	if ps["automountServiceAccountToken"] != false {
		t.Errorf("%s %s: the service-account token must not be mounted", o.kind(), o.name())
	}
	c := container(t, o)
	if !reflect.DeepEqual(c["securityContext"], wantContainerSecurity) {
		t.Errorf("%s %s: container securityContext\n got %v\nwant %v", o.kind(), o.name(), c["securityContext"], wantContainerSecurity)
	}
	port, proto := containerPort(t, c, "admin")
	if port != adminPort || proto != "TCP" {
		t.Errorf("%s %s: admin port %d/%s, want %d/TCP", o.kind(), o.name(), port, proto, adminPort)
	}
	for probe, wantPath := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"} {
		if got := dig(c, probe, "httpGet", "path"); got != wantPath {
			t.Errorf("%s %s: %s path %v, want %s", o.kind(), o.name(), probe, got, wantPath)
		}
		if got := dig(c, probe, "httpGet", "port"); got != "admin" {
			t.Errorf("%s %s: %s port %v, want the admin port", o.kind(), o.name(), probe, got)
		}
	}
	for _, p := range [][]any{{"requests", "cpu"}, {"requests", "memory"}, {"limits", "memory"}} {
		if dig(c["resources"], p...) == nil {
			t.Errorf("%s %s: resources.%v missing", o.kind(), o.name(), p)
		}
	}
	// A read-only root needs a writable /tmp.
	if !slices.Contains(mountPaths(t, c), "/tmp") {
		t.Errorf("%s %s: no writable /tmp", o.kind(), o.name())
	}
}

func mountPaths(t *testing.T, c map[string]any) []string {
	var out []string
	for _, m := range digList(t, c, "volumeMounts") {
		out = append(out, digString(t, m, "mountPath"))
	}
	return out
}

// projectedFiles maps every file a pod sees through its projected volumes to
// the ConfigMap or Secret it comes from ("ConfigMap/name" or "Secret/name").
func projectedFiles(t *testing.T, o obj) map[string]string {
	t.Helper()
	c := container(t, o)
	vols := map[string]any{}
	for _, v := range digList(t, podSpec(t, o), "volumes") {
		vols[digString(t, v, "name")] = v
	}
	if vct, ok := dig(o, "spec", "volumeClaimTemplates").([]any); ok {
		for _, v := range vct {
			vols[digString(t, v, "metadata", "name")] = v
		}
	}
	files := map[string]string{}
	for _, m := range digList(t, c, "volumeMounts") {
		v := vols[digString(t, m, "name")]
		if v == nil {
			t.Fatalf("%s %s: mount %v has no volume", o.kind(), o.name(), m)
		}
		srcs, ok := dig(v, "projected", "sources").([]any)
		if !ok {
			continue
		}
		for _, s := range srcs {
			for kind, src := range map[string]any{"ConfigMap": dig(s, "configMap"), "Secret": dig(s, "secret")} {
				if src == nil {
					continue
				}
				for _, it := range digList(t, src, "items") {
					p := path.Join(digString(t, m, "mountPath"), digString(t, it, "path"))
					files[p] = kind + "/" + digString(t, src, "name")
				}
			}
		}
	}
	return files
}

// secretSources lists the Secrets a release will have: rendered ones,
// cert-manager Certificates' secretName, and operator-provided ones.
func secretSources(r release, v scenarioValues) map[string]bool {
	out := map[string]bool{}
	for _, s := range r.all("Secret") {
		out[s.name()] = true
	}
	for _, c := range r.all("Certificate") {
		if n, ok := dig(c, "spec", "secretName").(string); ok {
			out[n] = true
		}
	}
	if v.Gateway.TLS.ExistingSecret != "" {
		out[v.Gateway.TLS.ExistingSecret] = true
	}
	for _, n := range []string{v.OAuth.Upstream.ClientSecret.ExistingSecret, v.OAuth.SigningKey.ExistingSecret} {
		if n != "" {
			out[n] = true
		}
	}
	for _, p := range v.OAuth.SigningKey.Previous {
		out[p.ExistingSecret] = true
	}
	for _, a := range v.OAuth.ServiceAccounts {
		for _, c := range a.Credentials {
			if c.SecretSHA256 != nil {
				out[c.SecretSHA256.ExistingSecret] = true
			}
			if c.PublicKey != nil {
				out[c.PublicKey.ExistingSecret] = true
			}
		}
	}
	if v.MTLS.Mode == "existingSecrets" {
		out[v.MTLS.ExistingSecrets.Gateway] = true
		for _, n := range v.MTLS.ExistingSecrets.Shards {
			out[n] = true
		}
	}
	return out
}

// checkFilesProvided: every file path is mounted, from an object that exists.
func checkFilesProvided(t *testing.T, r release, v scenarioValues, o obj, paths ...string) {
	t.Helper()
	files := projectedFiles(t, o)
	secrets := secretSources(r, v)
	for _, p := range paths {
		src, ok := files[p]
		if !ok {
			t.Errorf("%s %s: %s is not mounted (mounted: %v)", o.kind(), o.name(), p, files)
			continue
		}
		kind, name, _ := strings.Cut(src, "/")
		switch kind {
		case "ConfigMap":
			r.get(t, "ConfigMap", name)
		case "Secret":
			if !secrets[name] {
				t.Errorf("%s %s: %s comes from Secret %s, which nothing creates", o.kind(), o.name(), p, name)
			}
		}
	}
}

type gatewayInfo struct {
	deploy       obj
	podLabels    map[string]string
	selector     map[string]string
	serviceName  string
	shardPodsLbl map[string]map[string]string // wing → pod labels
}

func checkGateway(t *testing.T, r release, v scenarioValues) gatewayInfo {
	t.Helper()
	d := r.one(t, "Deployment")
	gw := gatewayInfo{
		deploy:    d,
		podLabels: stringMap(t, dig(d, "spec", "template", "metadata", "labels")),
		selector:  stringMap(t, dig(d, "spec", "selector", "matchLabels")),
	}
	if !selects(gw.selector, gw.podLabels) {
		t.Fatalf("gateway Deployment selector %v does not select its pods %v", gw.selector, gw.podLabels)
	}
	checkPod(t, d, defAdminPort)
	c := container(t, d)
	sub, flags := args(t, c)
	if sub != "gateway" || flags["config"] != "/etc/brainstem/gateway.yaml" {
		t.Errorf("gateway args: %v", dig(c, "args"))
	}
	if port, proto := containerPort(t, c, "https"); port != defHTTPSPort || proto != "TCP" {
		t.Errorf("gateway https port %d/%s", port, proto)
	}
	ann := digMap(t, d, "spec", "template", "metadata", "annotations")
	if s, _ := ann["checksum/config"].(string); len(s) != 64 {
		t.Errorf("gateway pod has no checksum/config annotation: %v", ann)
	}

	// Replicas: ≥ 2 by default, left to the HPA when autoscaling.
	if v.Gateway.Autoscaling.Enabled {
		if _, ok := digMap(t, d, "spec")["replicas"]; ok {
			t.Error("with autoscaling the Deployment must not set replicas (the HPA owns them)")
		}
		h := r.one(t, "HorizontalPodAutoscaler")
		if digString(t, h, "spec", "scaleTargetRef", "name") != d.name() || digString(t, h, "spec", "scaleTargetRef", "kind") != "Deployment" {
			t.Errorf("HPA targets %v", dig(h, "spec", "scaleTargetRef"))
		}
		if digInt(t, h, "spec", "minReplicas") != v.Gateway.Autoscaling.MinReplicas || digInt(t, h, "spec", "maxReplicas") != v.Gateway.Autoscaling.MaxReplicas {
			t.Errorf("HPA replicas %v..%v", dig(h, "spec", "minReplicas"), dig(h, "spec", "maxReplicas"))
		}
	} else {
		if n := digInt(t, d, "spec", "replicas"); n < 2 {
			t.Errorf("gateway replicas %d, want ≥ 2", n)
		}
		if len(r.all("HorizontalPodAutoscaler")) != 0 {
			t.Error("HPA rendered while autoscaling is off")
		}
	}
	var gatewayPDB bool
	for _, p := range r.all("PodDisruptionBudget") {
		if selects(stringMap(t, dig(p, "spec", "selector", "matchLabels")), gw.podLabels) {
			gatewayPDB = true
		}
	}
	if !gatewayPDB {
		t.Error("no PodDisruptionBudget selects the gateway pods")
	}

	// The Service in front of it, and the Ingress in front of that (the
	// headless peers Service, for the replicas themselves, is checked by
	// checkPeers).
	var svc obj
	for _, s := range r.all("Service") {
		if dig(s, "spec", "clusterIP") == "None" {
			continue
		}
		if selects(stringMap(t, dig(s, "spec", "selector")), gw.podLabels) {
			if svc != nil {
				t.Fatalf("two Services select the gateway pods: %s, %s", svc.name(), s.name())
			}
			svc = s
		}
	}
	if svc == nil {
		t.Fatal("no Service selects the gateway pods")
	}
	gw.serviceName = svc.name()
	svcPorts := map[string]bool{}
	for _, p := range digList(t, svc, "spec", "ports") {
		svcPorts[digString(t, p, "name")] = true
		target := digString(t, p, "targetPort")
		containerPort(t, c, target) // the target must be a named container port
	}
	if !svcPorts["https"] || !svcPorts["admin"] {
		t.Errorf("gateway Service ports %v, want https and admin", svcPorts)
	}
	if v.Ingress.Host != "" {
		ing := r.one(t, "Ingress")
		if h := digString(t, ing, "spec", "rules", 0, "host"); h != v.Ingress.Host {
			t.Errorf("Ingress host %q, want %q", h, v.Ingress.Host)
		}
		be := digMap(t, ing, "spec", "rules", 0, "http", "paths", 0, "backend", "service")
		if be["name"] != svc.name() || dig(be, "port", "name") != "https" {
			t.Errorf("Ingress backend %v, want service %s port https", be, svc.name())
		}
		wantTLS := v.Ingress.TLS.ExistingSecret
		if wantTLS == "" && v.Ingress.TLS.CertManager.Enabled {
			wantTLS = releaseName + "-brainstem-gateway-public-tls"
			if got := dig(ing, "metadata", "annotations", "cert-manager.io/cluster-issuer"); got != v.Ingress.TLS.CertManager.Issuer {
				t.Errorf("Ingress cert-manager annotation %v, want %s", got, v.Ingress.TLS.CertManager.Issuer)
			}
		}
		if wantTLS != "" {
			if got := dig(ing, "spec", "tls", 0, "secretName"); got != wantTLS {
				t.Errorf("Ingress TLS secret %v, want %s", got, wantTLS)
			}
			if got := dig(ing, "spec", "tls", 0, "hosts", 0); got != v.Ingress.Host {
				t.Errorf("Ingress TLS host %v", got)
			}
		}
		if got := dig(ing, "metadata", "annotations", "nginx.ingress.kubernetes.io/backend-protocol"); got != "HTTPS" {
			t.Errorf("the gateway listens with TLS: the Ingress must say backend-protocol HTTPS, got %v", got)
		}
	}
	checkFilesProvided(t, r, v, d, "/etc/brainstem/gateway.yaml")
	return gw
}

func checkGatewayConfig(t *testing.T, cfg gatewayConfig, v scenarioValues) {
	t.Helper()
	wantURL := v.PublicURL
	if wantURL == "" {
		wantURL = "https://" + v.Ingress.Host
	}
	if cfg.PublicURL != wantURL {
		t.Errorf("public_url %q, want %q", cfg.PublicURL, wantURL)
	}
	if cfg.Listen != fmt.Sprintf(":%d", defHTTPSPort) || cfg.AdminListen != fmt.Sprintf(":%d", defAdminPort) {
		t.Errorf("listen %q admin_listen %q", cfg.Listen, cfg.AdminListen)
	}
	if len(cfg.OIDC.Issuers) != len(v.OIDC.Issuers) {
		t.Fatalf("oidc.issuers: %d rendered, %d in values", len(cfg.OIDC.Issuers), len(v.OIDC.Issuers))
	}
	for i, is := range v.OIDC.Issuers {
		got := cfg.OIDC.Issuers[i]
		if got.URL != is.URL || !slices.Equal(got.Audiences, is.Audiences) || !slices.Equal(got.Algorithms, is.Algorithms) {
			t.Errorf("oidc.issuers[%d] = %+v, want %+v", i, got, is)
		}
	}
	if cfg.TLS.CertFile == "" || cfg.TLS.KeyFile == "" {
		t.Error("tls: the public listener is not loopback, cert_file and key_file are required")
	}
	if cfg.Shards.TLS.CAFile == "" || cfg.Shards.TLS.CertFile == "" || cfg.Shards.TLS.KeyFile == "" {
		t.Errorf("shards.tls incomplete: %+v", cfg.Shards.TLS)
	}
	var names []string
	for _, w := range cfg.Wings {
		names = append(names, w.Name)
	}
	var want []string
	for _, w := range v.Wings {
		want = append(want, w.Name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("gateway wings %v, want %v", names, want)
	}
}

func checkShards(t *testing.T, r release, v scenarioValues, cfg gatewayConfig, gw gatewayInfo) {
	t.Helper()
	sts := r.all("StatefulSet")
	if len(sts) != len(v.Wings) {
		t.Fatalf("%d StatefulSets for %d wings", len(sts), len(v.Wings))
	}
	workloads := append(slices.Clone(sts), gw.deploy)
	for i, w := range v.Wings {
		wc := cfg.Wings[i]
		host, port, ok := strings.Cut(wc.Address, ":")
		if !ok || port != fmt.Sprint(defQUICPort) {
			t.Errorf("wing %s: address %q, want host:%d", w.Name, wc.Address, defQUICPort)
		}
		// <sts>-0.<svc>.<ns>.svc.cluster.local: the pod's stable DNS name.
		pod, rest, _ := strings.Cut(host, ".")
		svcName, rest, _ := strings.Cut(rest, ".")
		if rest != namespace+".svc.cluster.local" || !strings.HasSuffix(pod, "-0") {
			t.Errorf("wing %s: address host %q is not <statefulset>-0.<service>.%s.svc.cluster.local", w.Name, host, namespace)
		}
		s := r.get(t, "StatefulSet", strings.TrimSuffix(pod, "-0"))
		svc := r.get(t, "Service", svcName)
		if digString(t, s, "spec", "serviceName") != svcName {
			t.Errorf("wing %s: StatefulSet serviceName %v, want %s", w.Name, dig(s, "spec", "serviceName"), svcName)
		}
		if digInt(t, s, "spec", "replicas") != 1 {
			t.Errorf("wing %s: replicas %v, want 1", w.Name, dig(s, "spec", "replicas"))
		}
		checkPod(t, s, defShardAdmin)
		c := container(t, s)
		sub, flags := args(t, c)
		wantFlags := map[string]string{
			"brain": "/data", "wing": w.Name, "listen": fmt.Sprintf(":%d", defQUICPort),
			"admin-listen": fmt.Sprintf(":%d", defShardAdmin),
			"tls-ca":       "/etc/brainstem/mtls/ca.crt", "tls-cert": "/etc/brainstem/mtls/tls.crt", "tls-key": "/etc/brainstem/mtls/tls.key",
			"policy": "/etc/brainstem/policy/policy.yaml", "key-file": "/data/.brainstem/shard-key.pem",
		}
		if sub != "shard" || !reflect.DeepEqual(flags, wantFlags) {
			t.Errorf("wing %s: args %v %v\nwant shard %v", w.Name, sub, flags, wantFlags)
		}
		if p, proto := containerPort(t, c, "quic"); p != defQUICPort || proto != "UDP" {
			t.Errorf("wing %s: container quic port %d/%s, want %d/UDP", w.Name, p, proto, defQUICPort)
		}
		checkFilesProvided(t, r, v, s, flags["tls-ca"], flags["tls-cert"], flags["tls-key"], flags["policy"])

		// The brain lives on the StatefulSet's own volume, mounted at /data.
		vct := digList(t, s, "spec", "volumeClaimTemplates")
		if len(vct) != 1 || dig(vct[0], "metadata", "name") != "brain" {
			t.Fatalf("wing %s: volumeClaimTemplates %v", w.Name, vct)
		}
		var dataMount string
		for _, m := range digList(t, c, "volumeMounts") {
			if dig(m, "mountPath") == "/data" {
				dataMount, _ = dig(m, "name").(string)
			}
		}
		if dataMount != "brain" {
			t.Errorf("wing %s: /data must be the brain volume, got %q", w.Name, dataMount)
		}
		wantSize := w.Storage.Size
		if wantSize == "" {
			wantSize = defBrainSize
		}
		if got := dig(vct[0], "spec", "resources", "requests", "storage"); got != wantSize {
			t.Errorf("wing %s: volume size %v, want %s", w.Name, got, wantSize)
		}
		if got, _ := dig(vct[0], "spec", "storageClassName").(string); got != w.Storage.StorageClass {
			t.Errorf("wing %s: storage class %q, want %q", w.Name, got, w.Storage.StorageClass)
		}
		if w.Resources != nil && !reflect.DeepEqual(c["resources"], w.Resources) {
			t.Errorf("wing %s: resources %v, want the wing's own %v", w.Name, c["resources"], w.Resources)
		}

		// The policy file says exactly what the values say.
		cmName := strings.TrimPrefix(projectedFiles(t, s)[flags["policy"]], "ConfigMap/")
		var p policy
		dec := yaml.NewDecoder(strings.NewReader(digString(t, r.get(t, "ConfigMap", cmName), "data", "policy.yaml")))
		dec.KnownFields(true)
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("wing %s: policy.yaml: %v", w.Name, err)
		}
		if !equalList(p.Readers, w.Policy.Readers) || !equalList(p.Writers, w.Policy.Writers) || !equalList(p.Curators, w.Policy.Curators) {
			t.Errorf("wing %s: policy %+v, want %+v", w.Name, p, w.Policy)
		}

		// The headless Service: UDP for QUIC, selecting this wing's pod only.
		if dig(svc, "spec", "clusterIP") != "None" {
			t.Errorf("wing %s: Service %s must be headless", w.Name, svcName)
		}
		var quic bool
		for _, sp := range digList(t, svc, "spec", "ports") {
			if dig(sp, "name") == "quic" {
				quic = true
				if dig(sp, "protocol") != "UDP" || dig(sp, "port") != defQUICPort || dig(sp, "targetPort") != "quic" {
					t.Errorf("wing %s: quic service port %v, want UDP %d → quic", w.Name, sp, defQUICPort)
				}
			}
			if dig(sp, "protocol") == "TCP" && dig(sp, "port") == defQUICPort {
				t.Errorf("wing %s: QUIC port exposed over TCP", w.Name)
			}
		}
		if !quic {
			t.Errorf("wing %s: Service %s has no quic port", w.Name, svcName)
		}
		sel := stringMap(t, dig(svc, "spec", "selector"))
		for _, o := range workloads {
			labels := stringMap(t, dig(o, "spec", "template", "metadata", "labels"))
			if got, want := selects(sel, labels), o.name() == s.name(); got != want {
				t.Errorf("wing %s: Service selector %v selects %s %s = %v, want %v", w.Name, sel, o.kind(), o.name(), got, want)
			}
		}
	}
}

func equalList(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || slices.Equal(a, b))
}

// checkNetworkPolicies: shards take UDP only from exactly the gateway pods.
func checkNetworkPolicies(t *testing.T, r release, gw gatewayInfo) {
	t.Helper()
	nps := r.all("NetworkPolicy")
	if len(nps) != 2 {
		t.Fatalf("want 2 NetworkPolicies (shards, gateway), got %d", len(nps))
	}
	shards := r.all("StatefulSet")
	var shardNP, gatewayNP obj
	for _, np := range nps {
		sel := stringMap(t, dig(np, "spec", "podSelector", "matchLabels"))
		switch {
		case selects(sel, gw.podLabels):
			gatewayNP = np
		default:
			shardNP = np
			for _, s := range shards {
				if !selects(sel, stringMap(t, dig(s, "spec", "template", "metadata", "labels"))) {
					t.Errorf("NetworkPolicy %s does not cover shard %s", np.name(), s.name())
				}
			}
		}
	}
	if shardNP == nil || gatewayNP == nil {
		t.Fatal("want one NetworkPolicy for the shards and one for the gateway")
	}
	var quicRules int
	for _, rule := range digList(t, shardNP, "spec", "ingress") {
		ports := digList(t, rule, "ports")
		for _, p := range ports {
			if dig(p, "protocol") != "UDP" {
				continue
			}
			quicRules++
			if dig(p, "port") != defQUICPort {
				t.Errorf("shard NetworkPolicy opens UDP port %v", dig(p, "port"))
			}
			from := digList(t, rule, "from")
			if len(from) != 1 || dig(from[0], "namespaceSelector") != nil || dig(from[0], "ipBlock") != nil {
				t.Fatalf("shard QUIC must be open to gateway pods only, from: %v", from)
			}
			peer := stringMap(t, dig(from[0], "podSelector", "matchLabels"))
			if !reflect.DeepEqual(peer, gw.selector) {
				t.Errorf("shard NetworkPolicy peer %v, want exactly the gateway selector %v", peer, gw.selector)
			}
			if !selects(peer, gw.podLabels) {
				t.Errorf("shard NetworkPolicy peer %v does not match the gateway pods %v", peer, gw.podLabels)
			}
			for _, s := range shards {
				if selects(peer, stringMap(t, dig(s, "spec", "template", "metadata", "labels"))) {
					t.Errorf("shard NetworkPolicy lets shard %s reach other shards", s.name())
				}
			}
		}
	}
	if quicRules != 1 {
		t.Errorf("shard NetworkPolicy: %d UDP rules, want 1", quicRules)
	}
	var https bool
	for _, rule := range digList(t, gatewayNP, "spec", "ingress") {
		for _, p := range digList(t, rule, "ports") {
			if dig(p, "port") == defHTTPSPort {
				https = true
				from := digList(t, rule, "from")
				if len(from) != 1 || dig(from[0], "namespaceSelector") == nil {
					t.Errorf("gateway HTTPS must be open to the ingress controller's namespace only: %v", from)
				}
			}
		}
	}
	if !https {
		t.Error("gateway NetworkPolicy does not admit HTTPS from the ingress controller")
	}
}

func checkServiceMonitors(t *testing.T, r release, v scenarioValues) {
	t.Helper()
	sms := r.all("ServiceMonitor")
	if !v.ServiceMonitor.Enabled {
		if len(sms) != 0 {
			t.Errorf("ServiceMonitors rendered while disabled")
		}
		return
	}
	if len(sms) != 2 {
		t.Fatalf("want 2 ServiceMonitors (gateway, shards), got %d", len(sms))
	}
	scraped := map[string]bool{}
	for _, sm := range sms {
		sel := stringMap(t, dig(sm, "spec", "selector", "matchLabels"))
		port := digString(t, sm, "spec", "endpoints", 0, "port")
		if p := dig(sm, "spec", "endpoints", 0, "path"); p != "/metrics" {
			t.Errorf("ServiceMonitor %s path %v", sm.name(), p)
		}
		for _, svc := range r.all("Service") {
			if !selects(sel, stringMap(t, dig(svc, "metadata", "labels"))) {
				continue
			}
			var has bool
			for _, p := range digList(t, svc, "spec", "ports") {
				has = has || dig(p, "name") == port
			}
			if !has {
				t.Errorf("ServiceMonitor %s scrapes port %q, which Service %s lacks", sm.name(), port, svc.name())
			}
			scraped[svc.name()] = true
		}
	}
	for _, svc := range r.all("Service") {
		if !scraped[svc.name()] {
			t.Errorf("Service %s is scraped by no ServiceMonitor", svc.name())
		}
	}
}

// TestLint: `helm lint --strict` passes for every scenario.
func TestLint(t *testing.T) {
	for _, file := range scenarios(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			out, err := runHelm("lint", "--strict", chartDir, "-f", file)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}
