package main

import (
	"archive/tar"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var testEpoch = time.Unix(1764547200, 0).UTC()

func testSpec() spec {
	return spec{Binary: []byte("\x7fELF not really"), Path: binaryPath, Ports: ports, Epoch: testEpoch,
		Labels: labels("v1.2.3", "abc", testEpoch, goToolchain)}
}

// TestDockerfileAgrees holds deploy/Dockerfile, the build for people with
// docker, to the image this builder makes: the same go build flags and
// environment, the same user, entrypoint, binary path and ports. Changing
// one side alone fails here.
func TestDockerfileAgrees(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)

	m := regexp.MustCompile(`(?s)RUN[^\n]*?(?:\\\n[^\n]*?)*?(CGO_ENABLED=0[^\n]*)\\\n\s*go (build [^\n]*)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("no `CGO_ENABLED=0 ... go build` RUN line in deploy/Dockerfile")
	}
	env := strings.Fields(m[1])
	args := shellWords(t, strings.ReplaceAll(m[2], "${VERSION}", "V"))
	if want := goBuildArgs("V", "/brainstem"); !slices.Equal(args, want) {
		t.Errorf("Dockerfile go build args\n  %q\nbuilder's\n  %q", args, want)
	}
	for _, kv := range goBuildEnv {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GOOS", "GOARCH": // the Dockerfile takes them from TARGETOS/TARGETARCH, whose defaults must match
			def := regexp.MustCompile(`(?m)^ARG TARGET` + strings.TrimPrefix(k, "GO") + `=(\S+)$`).FindStringSubmatch(text)
			if def == nil || def[1] != v || !slices.Contains(env, k+"=$TARGET"+strings.TrimPrefix(k, "GO")) {
				t.Errorf("Dockerfile %s is not $TARGET%s with default %s", k, strings.TrimPrefix(k, "GO"), v)
			}
		case "CGO_ENABLED":
			if !slices.Contains(env, kv) {
				t.Errorf("Dockerfile build environment %q lacks %s", env, kv)
			}
		}
	}

	img, err := build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	runtime := text[strings.LastIndex(text, "\nFROM "):]
	directive := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `\s+(.+)$`).FindStringSubmatch(runtime)
		if m == nil {
			t.Fatalf("runtime stage has no %s", name)
		}
		return strings.TrimSpace(m[1])
	}
	if got := directive("USER"); got != cf.Config.User {
		t.Errorf("Dockerfile USER %s, image %s", got, cf.Config.User)
	}
	var entry []string
	if err := json.Unmarshal([]byte(directive("ENTRYPOINT")), &entry); err != nil || !slices.Equal(entry, cf.Config.Entrypoint) {
		t.Errorf("Dockerfile ENTRYPOINT %s, image %q (%v)", directive("ENTRYPOINT"), cf.Config.Entrypoint, err)
	}
	if got := directive("COPY --from=build"); got != "/brainstem "+binaryPath {
		t.Errorf("Dockerfile copies %q, the image has the binary at %s", got, binaryPath)
	}
	var exposed []string
	for _, p := range strings.Fields(directive("EXPOSE")) {
		if !strings.Contains(p, "/") {
			p += "/tcp"
		}
		exposed = append(exposed, p)
	}
	var imagePorts []string
	for p := range cf.Config.ExposedPorts {
		imagePorts = append(imagePorts, p)
	}
	slices.Sort(exposed)
	slices.Sort(imagePorts)
	if !slices.Equal(exposed, imagePorts) {
		t.Errorf("Dockerfile EXPOSE %v, image %v", exposed, imagePorts)
	}
}

// shellWords splits a shell command line on blanks, keeping double-quoted
// words whole (all the Dockerfile's go build line uses).
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	quoted, in := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// TestReproducible: the same inputs give the same digest, and each input
// that should matter (the binary, the epoch) changes it.
func TestReproducible(t *testing.T) {
	digest := func(s spec) string {
		img, err := build(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
	a, b := digest(testSpec()), digest(testSpec())
	if a != b {
		t.Fatalf("two builds of one input: %s and %s", a, b)
	}
	other := testSpec()
	other.Epoch = other.Epoch.Add(time.Second)
	if digest(other) == a {
		t.Error("the epoch does not reach the image")
	}
	other = testSpec()
	other.Binary = append(other.Binary, '!')
	if digest(other) == a {
		t.Error("the binary does not reach the image")
	}
}

// TestRootFilesystem reads the layer back: the entries, their owners and
// modes, every timestamp the epoch, a parseable CA bundle, the nonroot user.
func TestRootFilesystem(t *testing.T) {
	img, err := build(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("want one layer, got %d (%v)", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	type entry struct {
		mode     int64
		uid, gid int
	}
	got := map[string]entry{}
	bodies := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(testEpoch) || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() {
			t.Errorf("%s: times %v %v %v, want only the epoch", h.Name, h.ModTime, h.AccessTime, h.ChangeTime)
		}
		got[h.Name] = entry{h.Mode, h.Uid, h.Gid}
		bodies[h.Name], _ = io.ReadAll(tr)
	}
	want := map[string]entry{
		"brainstem":                         {0o755, 0, 0},
		"etc/":                              {0o755, 0, 0},
		"etc/group":                         {0o644, 0, 0},
		"etc/nsswitch.conf":                 {0o644, 0, 0},
		"etc/passwd":                        {0o644, 0, 0},
		"etc/ssl/":                          {0o755, 0, 0},
		"etc/ssl/certs/":                    {0o755, 0, 0},
		"etc/ssl/certs/ca-certificates.crt": {0o644, 0, 0},
		"home/":                             {0o755, 0, 0},
		"home/nonroot/":                     {0o700, uid, uid},
		"tmp/":                              {0o1777, 0, 0},
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: got %+v (present %v), want %+v", name, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("layer has %d entries, want %d: %v", len(got), len(want), got)
	}
	if !strings.Contains(string(bodies["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks the nonroot user: %s", bodies["etc/passwd"])
	}
	pool, n := x509.NewCertPool(), 0
	for rest := bodies["etc/ssl/certs/ca-certificates.crt"]; ; n++ {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil || !c.IsCA {
			t.Fatalf("CA bundle entry %d: CA %v, %v", n, c != nil && c.IsCA, err)
		}
		pool.AddCert(c)
	}
	if n < 50 {
		t.Errorf("CA bundle has %d roots", n)
	}
	cf, _ := img.ConfigFile()
	if cf.Config.User != "65532:65532" || !cf.Created.Time.Equal(testEpoch) || cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("config: user %q created %v %s/%s", cf.Config.User, cf.Created, cf.OS, cf.Architecture)
	}
}
