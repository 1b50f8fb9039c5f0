#!/usr/bin/env bash
# Builds Dex (github.com/dexidp/dex), the third-party OpenID Connect provider
# that e2e/dex_test.go signs in with, at the pinned version, through the Go
# module proxy, outside the repository; prints the binary's path. A binary
# already built for this version is reused. Dex is no dependency of
# Brainstem: it never enters go.mod.
#
# Dex's release tags (v2.x) do not match its module path, so the module proxy
# serves its releases as pseudo-versions of the tagged commits; and its go.mod
# has a replace directive, which `go install pkg@version` refuses, hence the
# throw-away module. CGO_ENABLED=0 leaves out SQLite (the test uses memory
# storage) and halves the build.
set -euo pipefail
release=v2.45.1
version=v0.0.0-20260303133905-11d2eeb52b42 # the commit tagged v2.45.1
dir=${BRAINSTEM_DEX_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/brainstem/dex-$release}
bin=$dir/dex
if [[ -x $bin ]] && "$bin" version 2>/dev/null | grep -q "Dex Version: $release"; then
  echo "$bin"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$dir"
echo "building Dex $release into $bin; the first build takes minutes" >&2
cd "$work"
export GOFLAGS=
go mod init dexbuild >/dev/null 2>&1
go get "github.com/dexidp/dex/cmd/dex@$version" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$release" -o "$bin.tmp" github.com/dexidp/dex/cmd/dex
mv "$bin.tmp" "$bin"
echo "$bin"
