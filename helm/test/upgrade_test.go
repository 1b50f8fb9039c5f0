package helmtest

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// secretStore is the smallest Kubernetes API helm's `lookup` needs to read
// Secrets: discovery of the core group and GET of one Secret. It stands in
// for the cluster of an installed release, so the chart's reuse logic runs
// in real helm (`helm template --dry-run=server`, which enables lookup). Any
// other request fails the test, so it is plain what helm asked for.
type secretStore struct {
	t       *testing.T
	mu      sync.Mutex
	secrets map[string]map[string]any // name → Secret object
}

func newSecretStore(t *testing.T) (*secretStore, string) {
	s := &secretStore{t: t, secrets: map[string]map[string]any{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q}}]
users: [{name: test, user: {token: test}}]
contexts: [{name: test, context: {cluster: test, user: test, namespace: %s}}]
current-context: test
`, srv.URL, namespace)
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return s, kubeconfig
}

func (s *secretStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	prefix := "/api/v1/namespaces/" + namespace + "/secrets/"
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1":
		json.NewEncoder(w).Encode(map[string]any{
			"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1",
			"resources": []any{map[string]any{"name": "secrets", "singularName": "secret", "namespaced": true, "kind": "Secret", "verbs": []string{"get", "list"}}},
		})
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, prefix):
		s.mu.Lock()
		obj, ok := s.secrets[strings.TrimPrefix(r.URL.Path, prefix)]
		s.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404})
			return
		}
		json.NewEncoder(w).Encode(obj)
	default:
		s.t.Errorf("unexpected Kubernetes API request %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusNotImplemented)
	}
}

// apply stores every Secret of a render, as `helm install` would create them.
func (s *secretStore) apply(r release) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range r.all("Secret") {
		s.secrets[o.name()] = map[string]any(o)
	}
}

func (s *secretStore) delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.secrets, name)
}

// upgrade renders as `helm upgrade` would against the store.
func upgrade(t *testing.T, kubeconfig string, valuesFiles ...string) release {
	t.Helper()
	args := []string{"template", releaseName, chartDir, "--namespace", namespace, "--dry-run=server"}
	for _, f := range valuesFiles {
		args = append(args, "-f", f)
	}
	out, err := runHelmEnv([]string{"KUBECONFIG=" + kubeconfig}, args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	return release{raw: out, objs: objs}
}

// TestCertificatesSurviveUpgrades: in generate mode an upgrade keeps the CA
// and every certificate byte for byte; a new wing gets a certificate from
// the same CA; a deleted Secret, a replaced CA or changed names reissue
// exactly the certificates concerned.
func TestCertificatesSurviveUpgrades(t *testing.T) {
	t.Parallel()
	two := valuesFile(t, `wings:
  - {name: payments, policy: {readers: ["*"]}}
  - {name: platform, policy: {readers: ["*"]}}`)
	three := valuesFile(t, `wings:
  - {name: payments, policy: {readers: ["*"]}}
  - {name: platform, policy: {readers: ["*"]}}
  - {name: people-ops, policy: {readers: ["*"]}}`)
	var (
		ca       = releaseName + "-brainstem-ca"
		gw       = releaseName + "-brainstem-gateway-mtls"
		listener = releaseName + "-brainstem-gateway-tls"
		payments = releaseName + "-brainstem-payments-mtls"
		platform = releaseName + "-brainstem-platform-mtls"
		people   = releaseName + "-brainstem-people-ops-mtls"
	)
	store, kubeconfig := newSecretStore(t)
	install := render(t, []string{defaultValues, two})
	store.apply(install)

	same := func(t *testing.T, a, b release, names ...string) {
		t.Helper()
		for _, n := range names {
			if fmt.Sprint(secretData(t, a, n)) != fmt.Sprint(secretData(t, b, n)) {
				t.Errorf("Secret %s changed", n)
			}
		}
	}
	changed := func(t *testing.T, a, b release, n string) {
		t.Helper()
		if string(secretData(t, a, n)["tls.crt"]) == string(secretData(t, b, n)["tls.crt"]) {
			t.Errorf("Secret %s was not reissued", n)
		}
	}
	signedBy := func(t *testing.T, r release, caRel release, names ...string) {
		t.Helper()
		roots := x509.NewCertPool()
		roots.AddCert(parseCert(t, "CA", secretData(t, caRel, ca)["tls.crt"]))
		for _, n := range names {
			d := secretData(t, r, n)
			if string(d["ca.crt"]) != string(secretData(t, caRel, ca)["tls.crt"]) {
				t.Errorf("%s: ca.crt is not the CA", n)
			}
			if _, err := parseCert(t, n, d["tls.crt"]).Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
				t.Errorf("%s: not signed by the CA: %v", n, err)
			}
		}
	}

	// Control: without a cluster, helm cannot look anything up and makes new material.
	changed(t, install, render(t, []string{defaultValues, two}), ca)

	up := upgrade(t, kubeconfig, defaultValues, two)
	same(t, install, up, ca, gw, listener, payments, platform)

	up3 := upgrade(t, kubeconfig, defaultValues, three)
	same(t, install, up3, ca, gw, listener, payments, platform)
	signedBy(t, up3, install, people)
	if cn := parseCert(t, people, secretData(t, up3, people)["tls.crt"]).Subject.CommonName; cn != "shard:people-ops" {
		t.Errorf("new wing's certificate CN %q", cn)
	}

	store.delete(payments)
	re := upgrade(t, kubeconfig, defaultValues, two)
	same(t, install, re, ca, gw, listener, platform)
	changed(t, install, re, payments)
	signedBy(t, re, install, payments)

	// Names changed (another cluster domain): the shard certificates follow,
	// the gateway's client certificate (no names) stays.
	store.apply(install)
	moved := upgrade(t, kubeconfig, defaultValues, two, valuesFile(t, "clusterDomain: corp.internal"))
	same(t, install, moved, ca, gw)
	changed(t, install, moved, payments)
	changed(t, install, moved, listener)
	if !strings.Contains(strings.Join(parseCert(t, payments, secretData(t, moved, payments)["tls.crt"]).DNSNames, ","), "svc.corp.internal") {
		t.Error("reissued shard certificate lacks the new cluster domain")
	}

	// The CA Secret replaced (rotation): every leaf is reissued under it.
	other := render(t, []string{defaultValues, two})
	store.apply(install)
	store.mu.Lock()
	store.secrets[ca] = map[string]any(other.get(t, "Secret", ca))
	store.mu.Unlock()
	rotated := upgrade(t, kubeconfig, defaultValues, two)
	same(t, other, rotated, ca)
	for _, n := range []string{gw, payments, platform} {
		changed(t, install, rotated, n)
	}
	signedBy(t, rotated, other, gw, payments, platform)
}
