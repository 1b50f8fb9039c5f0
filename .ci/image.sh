#!/usr/bin/env bash
# The image CI tests and operators run (build/image, docs/kubernetes.md "The
# image"): built twice from this commit, the second time with an empty Go
# build cache, and the two digests must be equal; then the docker-archive is
# loaded into podman and run read-only, as nonroot, with no capabilities:
# `brainstem version`, and `brainstem dev` until its /readyz answers ready.
#
# The container gets a network namespace of its own with only a loopback
# interface, so it reaches nothing, and the check reaches it there. Podman's
# storage is a scratch directory removed at the end; every container is
# removed by its id and the namespace by its name, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${BRAINSTEM_IMAGE_DIR:-$root/dist/image}
export GOFLAGS=${GOFLAGS:--mod=readonly}

need=()
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || need+=(runc)
command -v curl >/dev/null || need+=(curl)
if ((${#need[@]})); then
  echo "installing ${need[*]} (Debian)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

work=$(mktemp -d /tmp/brainstem-image-ci.XXXXXX)
ns=brainstem-img-$$
cids=()
pm=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
cleanup() {
  set +e
  for cid in "${cids[@]}"; do podman "${pm[@]}" rm -f -t 2 "$cid" >/dev/null 2>&1; done
  ip netns del "$ns" 2>/dev/null
  podman "${pm[@]}" rmi -a -f >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# --- two builds, one digest: the second from a fresh clone of the same
# commit (and the same uncommitted changes) in another directory, as another
# machine would have it; with BRAINSTEM_IMAGE_COLD=1 also with an empty Go
# build cache (about 3 minutes more on 2 cores).
t0=$SECONDS
(cd build/image && go run . -out "$out") | tee "$work/build1.txt"
t1=$SECONDS
src2=$work/src
git clone -q --no-checkout "$root" "$src2"
git -C "$src2" checkout -q --detach "$(git rev-parse HEAD)"
git diff HEAD --binary | git -C "$src2" apply --allow-empty
git ls-files -z -o --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$src2"
cache2=$(go env GOCACHE)
second="a fresh clone in $src2"
if [[ -n ${BRAINSTEM_IMAGE_COLD:-} ]]; then cache2=$work/gocache second+=", empty GOCACHE"; fi
(cd "$src2/build/image" && GOCACHE="$cache2" go run . -out "$work/second") >"$work/build2.txt"
t2=$SECONDS
d1=$(awk '/^digest:/ {print $2}' "$work/build1.txt")
d2=$(awk '/^digest:/ {print $2}' "$work/build2.txt")
ref=$(awk '/^image:/ {print $2}' "$work/build1.txt")
config=$(awk '/^config:/ {print $2}' "$work/build1.txt")
echo "build 1: $d1 (${t1}s from the start, $((t1 - t0))s)"
echo "build 2: $d2 ($((t2 - t1))s, $second)"
if [[ -z $d1 || $d1 != "$d2" ]]; then
  echo "FAIL: two builds of one commit gave two digests" >&2
  exit 1
fi
cmp "$out/brainstem.tar" "$work/second/brainstem.tar"
echo "ok   reproducible: one digest, byte-identical archives ($(du -h "$out/brainstem.tar" | cut -f1))"

# --- podman, with this machine's limits (docs/kubernetes.md): the hard
# nofile limit is 20000, pid_max 32768, no CAP_SYS_RESOURCE; crun refuses
# hybrid cgroups, so runc.
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF=$work/containers.conf
podman "${pm[@]}" load -q -i "$out/brainstem.tar" >/dev/null
id=$(podman "${pm[@]}" image inspect -f '{{.Id}}' "$ref")
if [[ sha256:$id != "$config" ]]; then
  echo "FAIL: podman loaded image $id, the build's config is $config" >&2
  exit 1
fi
echo "ok   podman load: $ref, image id = the config digest"
locked=(--read-only --cap-drop=all --security-opt no-new-privileges --user 65532:65532)

got=$(podman "${pm[@]}" run --rm "${locked[@]}" --network none "$ref" version)
want="brainstem $(awk -F: '{print $NF}' <<<"$ref")"
if [[ $got != "$want" ]]; then
  echo "FAIL: brainstem version printed '$got', want '$want'" >&2
  exit 1
fi
echo "ok   read-only, nonroot, no capabilities: $got"

ip netns add "$ns"
ip -n "$ns" link set lo up
cid=$(podman "${pm[@]}" run -d "${locked[@]}" --network "ns:/run/netns/$ns" "$ref" dev)
cids+=("$cid")
ready=""
for _ in $(seq 1 150); do # 30 s
  if ready=$(ip netns exec "$ns" curl -fsS --max-time 1 http://127.0.0.1:9090/readyz 2>/dev/null); then break; fi
  if [[ $(podman "${pm[@]}" inspect -f '{{.State.Running}}' "$cid") != true ]]; then break; fi
  sleep 0.2
done
if [[ $ready != *'"ready":true'* ]]; then
  echo "FAIL: brainstem dev in the container never answered ready: '$ready'" >&2
  podman "${pm[@]}" logs "$cid" >&2 || true
  exit 1
fi
pid=$(podman "${pm[@]}" inspect -f '{{.State.Pid}}' "$cid")
status=$(grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs):' "/proc/$pid/status" | tr -s '\t' ' ')
for want in "Uid: 65532 65532 65532 65532" "CapEff: 0000000000000000" "CapBnd: 0000000000000000" "NoNewPrivs: 1"; do
  if [[ $status != *"$want"* ]]; then
    echo "FAIL: the container's process is not locked down: want '$want' in: $status" >&2
    exit 1
  fi
done
echo "ok   brainstem dev in the container: /readyz $ready; $(tr '\n' ';' <<<"$status")"
echo "image: $ref $d1 (${SECONDS}s)"
