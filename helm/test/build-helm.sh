#!/usr/bin/env bash
# Builds the helm CLI pinned in this module's go.mod (helm.sh/helm/v3, a
# `tool` requirement) into helm/test/.bin/helm, once: a binary that already
# reports the pinned version is reused. Prints the binary's path.
#
# Version stamps are the ones helm's own Makefile sets; without them helm
# would believe it runs against Kubernetes 1.20 and refuse the chart's
# kubeVersion.
set -euo pipefail
cd "$(dirname "$0")"
bin="$PWD/.bin/helm"
want="$(go list -m -f '{{.Version}}' helm.sh/helm/v3)"
if [[ -x "$bin" ]] && [[ "$("$bin" version --template '{{.Version}}' 2>/dev/null || true)" == "$want" ]]; then
  echo "$bin"
  exit 0
fi
k8s="$(go list -m -f '{{.Version}}' k8s.io/client-go)" # v0.MINOR.PATCH
minor="$(cut -d. -f2 <<<"$k8s")"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$want"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$minor"
done
mkdir -p .bin
echo "building helm $want (Kubernetes 1.$minor API) into $bin; the first build takes minutes" >&2
go build -trimpath -ldflags "$ldflags" -o "$bin.tmp" helm.sh/helm/v3/cmd/helm
mv "$bin.tmp" "$bin"
echo "$bin"
