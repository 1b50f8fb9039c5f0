// Command image builds the brainstem container image without a daemon or a
// base image from a registry: a static binary built from this commit, in a
// minimal root filesystem (the nonroot user 65532, CA certificates, /tmp),
// as an OCI layout and a docker-archive tar, and prints its digest.
//
// The same commit gives the same digest on any machine: the binary is built
// with the pinned Go toolchain, -trimpath and no VCS stamp, every timestamp
// is SOURCE_DATE_EPOCH (the commit's time unless set), and the CA bundle
// comes from a pinned module, not from the machine. From the repository
// root:
//
//	go -C build/image run .                  # dist/image/{oci,brainstem.tar}
//	go -C build/image run . -out /tmp/img    # elsewhere
//
// With -binary it packs another static executable the same way (the test
// cluster's pause and identity-provider images). It lives in its own module
// so that go-containerregistry never enters the product's go.mod.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// goToolchain is the Go release every image is built with: a machine with
// another Go fetches this one through the module proxy (GOTOOLCHAIN), so
// the binary's bytes do not depend on which Go is installed.
const goToolchain = "go1.26.8"

// goBuildArgs are the `go build` arguments of the binary, which
// deploy/Dockerfile repeats with ${VERSION} (TestDockerfileAgrees).
func goBuildArgs(version, out string) []string {
	return []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w -X main.version=" + version, "-o", out, "./cmd/brainstem"}
}

// goBuildEnv is the environment of that build besides the caller's.
var goBuildEnv = []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=" + goToolchain}

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	repo := fs.String("repo", "", "repository root (default: the git work tree this runs in)")
	out := fs.String("out", "", "output directory for oci/ and the tar (default: <repo>/dist/image)")
	ref := fs.String("ref", "", "image name in the tar and the layout (default: ghcr.io/brainstem/brainstem:<version>)")
	version := fs.String("version", "", "version stamped in the binary (default: git describe --tags --always --dirty)")
	binary := fs.String("binary", "", "pack this static executable instead of building brainstem")
	inImage := fs.String("path", "", "the executable's path in the image (default /brainstem, or /<name of -binary>)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if *repo == "" {
		if *repo, err = git(ctx, ".", "rev-parse", "--show-toplevel"); err != nil {
			return fmt.Errorf("not in a git work tree (use -repo): %w", err)
		}
	}
	if *out == "" {
		*out = filepath.Join(*repo, "dist", "image")
	}
	epoch, err := sourceDateEpoch(ctx, *repo)
	if err != nil {
		return err
	}
	revision, err := git(ctx, *repo, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if *version == "" {
		if *version, err = git(ctx, *repo, "describe", "--tags", "--always", "--dirty"); err != nil {
			return err
		}
	}
	s := spec{Path: binaryPath, Ports: ports, Epoch: epoch}
	tarName := "brainstem.tar"
	if *binary != "" {
		s.Path, s.Ports, tarName = "/"+filepath.Base(*binary), nil, filepath.Base(*binary)+".tar"
		if s.Binary, err = os.ReadFile(*binary); err != nil {
			return err
		}
	} else {
		if s.Binary, err = buildBinary(ctx, *repo, *version); err != nil {
			return err
		}
		s.Labels = labels(*version, revision, epoch, goToolchain)
	}
	if *inImage != "" {
		s.Path = *inImage
	}
	if *ref == "" {
		*ref = "ghcr.io/brainstem/brainstem:" + *version
	}
	tag, err := name.NewTag(*ref, name.WeakValidation)
	if err != nil {
		return err
	}
	img, err := build(s)
	if err != nil {
		return err
	}
	digest, err := write(img, tag, *out, tarName)
	if err != nil {
		return err
	}
	config, err := img.ConfigName()
	if err != nil {
		return err
	}
	fmt.Printf("image:          %s\n", tag)
	fmt.Printf("oci layout:     %s\n", filepath.Join(*out, "oci"))
	fmt.Printf("docker archive: %s\n", filepath.Join(*out, tarName))
	fmt.Printf("config:         %s\n", config)
	fmt.Printf("digest:         %s\n", digest)
	return nil
}

// write replaces out/oci with a layout holding img alone, named ref, and
// writes out/tarName as a docker-archive (what `podman load`, `docker load`
// and `ctr images import` read).
func write(img v1.Image, ref name.Tag, out, tarName string) (v1.Hash, error) {
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	dir := filepath.Join(out, "oci")
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.String(),
		"io.containerd.image.name":          ref.String(),
	})); err != nil {
		return v1.Hash{}, err
	}
	if err := tarball.WriteToFile(filepath.Join(out, tarName), ref, img); err != nil {
		return v1.Hash{}, err
	}
	return digest, nil
}

// buildBinary builds cmd/brainstem statically with the pinned toolchain.
func buildBinary(ctx context.Context, repo, version string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "brainstem-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "brainstem")
	cmd := exec.CommandContext(ctx, "go", goBuildArgs(version, bin)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = repo, os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), goBuildEnv...)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build: %w", err)
	}
	return os.ReadFile(bin)
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH, or the commit time of HEAD.
func sourceDateEpoch(ctx context.Context, repo string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		var err error
		if s, err = git(ctx, repo, "log", "-1", "--format=%ct"); err != nil {
			return time.Time{}, err
		}
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
