package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The runtime contract of the image, which deploy/Dockerfile must keep too
// (TestDockerfileAgrees): the binary's path and entrypoint, the user the
// chart's securityContext pins, and the ports.
const (
	binaryPath = "/brainstem"
	uid        = 65532
	user       = "65532:65532"
)

// ports are the image's exposed ports: gateway HTTPS and admin, shard QUIC
// and admin.
var ports = []string{"8443/tcp", "9090/tcp", "7443/udp", "9091/tcp"}

// spec is what one image holds besides its root filesystem's fixed files.
type spec struct {
	Binary     []byte            // the static executable
	Path       string            // where it goes, e.g. /brainstem
	Entrypoint []string          // default [Path]
	Ports      []string          // exposed, "8443/tcp"
	Labels     map[string]string // org.opencontainers.image.*
	Epoch      time.Time         // every timestamp (SOURCE_DATE_EPOCH)
}

// file is one entry of the layer.
type file struct {
	name string // without the leading slash
	mode int64
	uid  int
	body []byte
	dir  bool
}

// rootFS is the minimal root filesystem around the binary: the nonroot
// user and group (65532), root for completeness, a hosts lookup order for
// Go's resolver, the CA bundle, a world-writable sticky /tmp and the
// user's home.
func rootFS(s spec) ([]file, error) {
	cas, err := caBundle()
	if err != nil {
		return nil, err
	}
	files := []file{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: cas},
		{name: "home", mode: 0o755, dir: true},
		{name: "home/nonroot", mode: 0o700, uid: uid, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
		{name: strings.TrimPrefix(s.Path, "/"), mode: 0o755, body: s.Binary},
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files, nil
}

// caBundle is the PEM bundle of the Mozilla (NSS) roots that
// golang.org/x/crypto/x509roots/fallback pins, so the bundle is a function
// of this module's go.sum, not of the machine that builds. Roots that NSS
// trusts only for certificates issued before a date are left out: a PEM file
// cannot carry that constraint.
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	n := 0
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n < 50 {
		return nil, fmt.Errorf("image: only %d CA roots in the bundle", n)
	}
	return buf.Bytes(), nil
}

// layerTar is the one layer: every entry owned by root but the user's home,
// every timestamp the epoch, in name order.
func layerTar(files []file, epoch time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: epoch,
			Typeflag: tar.TypeReg, Size: int64(len(f.body)), Format: tar.FormatPAX,
		}
		if f.dir {
			h.Name, h.Typeflag, h.Size = f.name+"/", tar.TypeDir, 0
		}
		// PAX without access and change times: only what is set is written.
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// build makes the OCI image of s: one gzip layer, an OCI manifest and
// config, nothing that depends on the clock or the machine.
func build(s spec) (v1.Image, error) {
	if s.Path == "" || !path.IsAbs(s.Path) {
		return nil, fmt.Errorf("image: binary path %q is not absolute", s.Path)
	}
	files, err := rootFS(s)
	if err != nil {
		return nil, err
	}
	raw, err := layerTar(files, s.Epoch)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: s.Epoch.UTC()}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "brainstem build/image", Comment: s.Path + " and a minimal root filesystem"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = "amd64", "linux", created
	entry := s.Entrypoint
	if entry == nil {
		entry = []string{s.Path}
	}
	cf.Config = v1.Config{
		Entrypoint: entry,
		User:       user,
		WorkingDir: "/home/nonroot",
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		Labels:     s.Labels,
	}
	if len(s.Ports) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range s.Ports {
			cf.Config.ExposedPorts[p] = struct{}{}
		}
	}
	return mutate.ConfigFile(img, cf)
}

// labels are the OCI annotations of a brainstem image built from a commit.
func labels(version, revision string, epoch time.Time, goVersion string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "brainstem",
		"org.opencontainers.image.source":   "https://github.com/brainstem/brainstem",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.created":  epoch.UTC().Format(time.RFC3339),
		"dev.brainstem.go-version":          goVersion,
		"dev.brainstem.source-date-epoch":   strconv.FormatInt(epoch.Unix(), 10),
	}
}
