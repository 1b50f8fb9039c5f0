package helmtest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const (
	releaseName = "rel"
	namespace   = "brainstem"
)

// chartDir is the chart under test; $CHART_DIR overrides it (used to check
// that the tests catch deliberately broken copies of the chart).
var chartDir = cmp.Or(os.Getenv("CHART_DIR"), "../brainstem")

// helmBin is the helm CLI the tests run; set by TestMain.
var helmBin string

func TestMain(m *testing.M) {
	bin, err := findHelm()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helmtest:", err)
		os.Exit(1)
	}
	helmBin = bin
	os.Exit(m.Run())
}

// findHelm returns $HELM_BIN, or builds (or reuses) the pinned helm with
// build-helm.sh.
func findHelm() (string, error) {
	if bin := os.Getenv("HELM_BIN"); bin != "" {
		return bin, nil
	}
	cmd := exec.Command("bash", "./build-helm.sh")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("build-helm.sh: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// scenarios are the chart's ci/ values files, each a complete install.
func scenarios(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("want at least 3 ci scenarios, found %v", files)
	}
	return files
}

// defaultValues is the smallest working values file.
var defaultValues = filepath.Join(chartDir, "ci", "default-values.yaml")

// valuesFile writes a YAML values overlay into a temp dir and returns its path.
func valuesFile(t *testing.T, yamlText string) string {
	t.Helper()
	// Not t.TempDir(): its path holds the test name, and helm splits -f on commas.
	dir, err := os.MkdirTemp("", "helmtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(p, []byte(yamlText), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// helmTemplate runs `helm template` with the given values files and extra
// arguments; it returns stdout, and an error carrying stderr on failure.
func helmTemplate(valuesFiles []string, extra ...string) (string, error) {
	args := []string{"template", releaseName, chartDir, "--namespace", namespace}
	for _, f := range valuesFiles {
		args = append(args, "-f", f)
	}
	args = append(args, extra...)
	return runHelm(args...)
}

func runHelm(args ...string) (string, error) {
	return runHelmEnv(nil, args...)
}

// runHelmEnv runs helm with extra environment variables (KEY=value).
func runHelmEnv(env []string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmBin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// obj is one decoded manifest.
type obj map[string]any

func (o obj) kind() string { s, _ := o["kind"].(string); return s }
func (o obj) name() string { s, _ := dig(o, "metadata", "name").(string); return s }

// release is a rendered chart: its manifests in order, and the raw text.
type release struct {
	raw  string
	objs []obj
}

// render runs helm template and decodes every manifest; it fails the test on
// any error.
func render(t *testing.T, valuesFiles []string, extra ...string) release {
	t.Helper()
	out, err := helmTemplate(valuesFiles, extra...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	return release{raw: out, objs: objs}
}

// decodeManifests decodes a multi-document YAML stream, skipping empty
// documents; every document must be a mapping with apiVersion and kind.
func decodeManifests(stream string) ([]obj, error) {
	dec := yaml.NewDecoder(strings.NewReader(stream))
	var objs []obj
	for i := 0; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("manifest %d: %w", i, err)
		}
		if m == nil {
			continue
		}
		if m["apiVersion"] == nil || m["kind"] == nil {
			return nil, fmt.Errorf("manifest %d has no apiVersion or kind: %v", i, m)
		}
		objs = append(objs, obj(m))
	}
}

// all returns the manifests of a kind.
func (r release) all(kind string) []obj {
	var out []obj
	for _, o := range r.objs {
		if o.kind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// get returns the manifest of a kind and name, failing the test when absent.
func (r release) get(t *testing.T, kind, name string) obj {
	t.Helper()
	for _, o := range r.objs {
		if o.kind() == kind && o.name() == name {
			return o
		}
	}
	t.Fatalf("no %s %q rendered", kind, name)
	return nil
}

// one returns the only manifest of a kind.
func (r release) one(t *testing.T, kind string) obj {
	t.Helper()
	all := r.all(kind)
	if len(all) != 1 {
		t.Fatalf("want exactly one %s, got %d", kind, len(all))
	}
	return all[0]
}

// dig walks maps (string keys) and lists (int keys); nil when absent.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				if o, isObj := v.(obj); isObj {
					m, ok = map[string]any(o), true
				}
			}
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil
			}
			v = l[k]
		default:
			panic(fmt.Sprintf("dig: bad path element %T", p))
		}
	}
	return v
}

func digMap(t *testing.T, v any, path ...any) map[string]any {
	t.Helper()
	m, ok := dig(v, path...).(map[string]any)
	if !ok {
		t.Fatalf("%v: want a mapping, got %T", path, dig(v, path...))
	}
	return m
}

func digList(t *testing.T, v any, path ...any) []any {
	t.Helper()
	l, ok := dig(v, path...).([]any)
	if !ok {
		t.Fatalf("%v: want a list, got %T", path, dig(v, path...))
	}
	return l
}

func digString(t *testing.T, v any, path ...any) string {
	t.Helper()
	s, ok := dig(v, path...).(string)
	if !ok {
		t.Fatalf("%v: want a string, got %T (%v)", path, dig(v, path...), dig(v, path...))
	}
	return s
}

func digInt(t *testing.T, v any, path ...any) int {
	t.Helper()
	n, ok := dig(v, path...).(int)
	if !ok {
		t.Fatalf("%v: want an integer, got %T (%v)", path, dig(v, path...), dig(v, path...))
	}
	return n
}

// stringMap converts a decoded label map.
func stringMap(t *testing.T, v any) map[string]string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("want a label map, got %T", v)
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		s, ok := val.(string)
		if !ok {
			t.Fatalf("label %s: want a string, got %T", k, val)
		}
		out[k] = s
	}
	return out
}

// selects reports whether a matchLabels selector selects a pod with labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return true
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
var dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)

// podSpec returns the pod spec of a Deployment or StatefulSet.
func podSpec(t *testing.T, o obj) map[string]any {
	t.Helper()
	return digMap(t, o, "spec", "template", "spec")
}

// container returns a workload's only container.
func container(t *testing.T, o obj) map[string]any {
	t.Helper()
	cs := digList(t, podSpec(t, o), "containers")
	if len(cs) != 1 {
		t.Fatalf("%s %s: want one container, got %d", o.kind(), o.name(), len(cs))
	}
	return cs[0].(map[string]any)
}

// containerPort returns the number and protocol of a named container port.
func containerPort(t *testing.T, c map[string]any, name string) (int, string) {
	t.Helper()
	for _, p := range digList(t, c, "ports") {
		if dig(p, "name") == name {
			return digInt(t, p, "containerPort"), digString(t, p, "protocol")
		}
	}
	t.Fatalf("container %v has no port %q", dig(c, "name"), name)
	return 0, ""
}

// args returns a container's args as a flag map (--k=v) plus the subcommand.
func args(t *testing.T, c map[string]any) (string, map[string]string) {
	t.Helper()
	list := digList(t, c, "args")
	flags := map[string]string{}
	sub := ""
	for i, a := range list {
		s := a.(string)
		if i == 0 {
			sub = s
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(s, "--"), "=")
		if !ok || !strings.HasPrefix(s, "--") {
			t.Fatalf("arg %q is not --flag=value", s)
		}
		flags[k] = v
	}
	return sub, flags
}

// find returns the manifest of a kind and name, if rendered.
func (r release) find(kind, name string) (obj, bool) {
	for _, o := range r.objs {
		if o.kind() == kind && o.name() == name {
			return o, true
		}
	}
	return nil, false
}
