#!/usr/bin/env bash
# Builds the one-node test cluster's programs (build/kube: kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy, kubectl,
# etcd and CoreDNS in one multi-call binary) through the Go module proxy,
# outside the repository, once per version of build/kube; prints the
# directory that holds the binary and one symlink per program. A binary
# already built from the same go.mod, go.sum and main.go is reused.
#
# The version stamps are the ones Kubernetes' own build sets; without them
# the API server reports v0.0.0 and the chart's kubeVersion refuses it. The
# build is reproducible (-trimpath, no build date, no VCS stamp): two
# machines with the same Go build the same bytes.
set -euo pipefail
cd "$(dirname "$0")/../build/kube"
k8s=v1.37.2
key=$(cat go.mod go.sum main.go | sha256sum | cut -c1-12)
dir=${BRAINSTEM_KUBE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/brainstem/kube-$k8s-$key}
programs=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl etcd coredns)
if [[ -x $dir/kube ]] && [[ -L $dir/coredns ]]; then
  echo "$dir"
  exit 0
fi
mkdir -p "$dir"
echo "building Kubernetes $k8s, etcd and CoreDNS into $dir; the first build takes minutes" >&2
minor=$(cut -d. -f2 <<<"$k8s")
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done
start=$SECONDS
GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$dir/kube.tmp" .
mv "$dir/kube.tmp" "$dir/kube"
for p in "${programs[@]}"; do ln -sfn kube "$dir/$p"; done
echo "built in $((SECONDS - start))s: $(du -h "$dir/kube" | cut -f1)" >&2
echo "$dir"
