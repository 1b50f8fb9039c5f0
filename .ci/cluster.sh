#!/usr/bin/env bash
# The chart on a real one-node Kubernetes (docs/kubernetes.md, "What CI runs
# on a real cluster"): brings up v1.37.2 from the cached build/kube binary,
# containerd, runc and the CNI plugins from Debian, then
#   1. validates every helm/brainstem/ci/*values.yaml on the API server
#      (server-side dry run, strict fields; ServiceMonitor and cert-manager
#      CRDs installed first from their upstream definitions);
#   2. runs helm/test/cluster (TestCluster): install --wait with three wings
#      and two gateways and Dex as the IdP, sign-in and calls through the
#      gateway's Service, a shard killed under a write loop, an upgrade under
#      a read loop, uninstall;
# and tears everything down, also on failure.
#
# Safety on the machine it runs on (CI runs as root on a developer's
# machine):
# - Every cluster process runs in the network namespace $netns, whose only
#   interfaces are its loopback and the pods' bridge cni0 (10.244.0.1/16);
#   it has no route out, so nothing can reach an address outside the two.
#   The pods have no default route and ip_forward stays 0.
# - The kubelet's kernel settings are saved before it starts and restored
#   after (a copy survives a crashed run and is restored by the next one);
#   the host's own iptables rules must be unchanged at the end.
# - Every process started is recorded and stopped by its own pid; the
#   containers by their containerd ids; mounts, cgroups and the namespace are
#   removed. A second run first clears whatever a first one left.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export GOFLAGS=${GOFLAGS:--mod=readonly}

netns=brainstem-ci
state=/var/lib/brainstem-ci   # removed and made anew on every run
run=/run/brainstem-ci         # sockets and containerd's state
saved=/var/lib/brainstem-ci.sysctl
node=brainstem-ci
bridge_ip=10.244.0.1
logs=${BRAINSTEM_CLUSTER_LOGS:-/tmp/brainstem-cluster-logs}
sysctls=(kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
t_start=$SECONDS
say() { printf '%s\n' "$*"; }
elapsed() { echo "$((SECONDS - t_start))s"; }

# --- Debian packages and cached builds
need=()
for pair in containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins iptables-save:iptables conntrack:conntrack openssl:openssl curl:curl; do
  cmd=${pair%%:*} pkg=${pair#*:}
  if [[ $cmd == /* ]]; then [[ -e $cmd ]] || need+=("$pkg"); else command -v "$cmd" >/dev/null || need+=("$pkg"); fi
done
if ((${#need[@]})); then
  say "installing ${need[*]} (Debian)"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# containerd's Debian package may start a service of its own; ours is separate
# (own socket, root and state), so that one is left alone.
kube=$(bash .ci/build-kube.sh)
helm=$(bash helm/test/build-helm.sh)
dex=$(bash .ci/build-dex.sh)
say "binaries ready ($(elapsed)): $kube, $helm, $dex"

inns() { nsenter --net="/run/netns/$netns" -- "$@"; }
kubectl() { ip netns exec "$netns" "$kube/kubectl" --kubeconfig "$state/pki/admin.kubeconfig" "$@"; }
ctr_() { ctr --address "$run/containerd/containerd.sock" -n k8s.io "$@"; }

# --- teardown: also what a second run does first
stop_pid() { # name: the process recorded under name, by its pid, TERM then KILL
  local f=$state/pids/$1 pid
  [[ -f $f ]] || return 0
  pid=$(<"$f")
  if kill -0 "$pid" 2>/dev/null && grep -qa -- "$state\|$run\|$netns" "/proc/$pid/cmdline" "/proc/$pid/environ" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
teardown() {
  set +e
  for p in kube-proxy coredns kubelet; do stop_pid "$p"; done
  if [[ -S $run/containerd/containerd.sock ]]; then
    # The pods' containers, by their ids; their network namespaces, from their specs.
    for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1; done
    for id in $(ctr_ tasks ls -q 2>/dev/null); do
      for _ in $(seq 1 50); do ctr_ tasks delete "$id" >/dev/null 2>&1 && break; sleep 0.1; done
    done
    for id in $(ctr_ containers ls -q 2>/dev/null); do
      ctr_ containers info "$id" 2>/dev/null | grep -o '"/var/run/netns/cni-[^"]*"' | tr -d '"' >>"$state/pod-netns"
      ctr_ containers delete "$id" >/dev/null 2>&1
    done
  fi
  stop_pid containerd
  # The runc shims of our containerd, found by its socket, each by its pid.
  for pid in $(pgrep -f "containerd-shim.*$run/containerd/containerd.sock" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  for p in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_pid "$p"; done
  if [[ -f $state/pod-netns ]]; then
    sort -u "$state/pod-netns" | while read -r n; do
      [[ -e $n ]] && { umount "$n" 2>/dev/null; rm -f "$n"; }
    done
  fi
  for _ in 1 2; do
    findmnt -rn -o TARGET | grep -E "^($state|$run)(/|$)" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  done
  ip netns del "$netns" 2>/dev/null
  rm -rf "/etc/netns/$netns"
  for h in /sys/fs/cgroup/*/"$node" /sys/fs/cgroup/"$node"; do
    [[ -d $h ]] && find "$h" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  if [[ -f $saved ]]; then
    while read -r k v; do sysctl -qw "$k=$v" >/dev/null; done <"$saved"
    rm -f "$saved"
  fi
  rm -rf "$state" "$run"
  set -e
}
report_teardown() {
  local rc=$?
  set +e # gathering what failed must not itself stop the teardown
  if ((rc != 0)); then
    rm -rf "$logs"
    mkdir -p "$logs"
    cp -r "$state/logs/." "$logs/" 2>/dev/null || true
    if [[ -S $run/containerd/containerd.sock ]] && kubectl get --raw /readyz >/dev/null 2>&1; then
      kubectl get pods -A -o wide >"$logs/pods.txt" 2>&1
      kubectl get events -A --field-selector type=Warning --sort-by .lastTimestamp \
        -o custom-columns=NS:.metadata.namespace,OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message >"$logs/warnings.txt" 2>&1
      for pod in $(kubectl get pods -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{" "}{end}' 2>/dev/null); do
        kubectl -n "${pod%/*}" logs "${pod#*/}" --all-containers --tail 100 >"$logs/pod-${pod//\//-}.log" 2>&1
      done
    fi
    say "FAIL (exit $rc): the cluster's logs are in $logs"
    for f in "$logs"/pods.txt "$logs"/warnings.txt "$logs"/*.log; do [[ -f $f ]] && { echo "--- tail $f"; tail -n 12 "$f"; }; done
  fi
  if [[ -n ${BRAINSTEM_CLUSTER_KEEP:-} && $rc != 0 ]]; then
    say "BRAINSTEM_CLUSTER_KEEP: the cluster stays up; 'bash .ci/cluster.sh' clears it first next time"
    exit "$rc"
  fi
  teardown
  exit "$rc"
}

# A run that crashed left its processes, mounts and saved sysctls: clear them.
if [[ -d $state || -d $run || -f $saved ]] || ip netns list | grep -qw "$netns"; then
  say "clearing what an earlier run left"
  teardown
fi
trap report_teardown EXIT
mkdir -p "$state"/{pids,logs,pki,pv,cni,cni-ipam,kubelet,etcd,containerd,images} "$run/containerd"
iptables_before=$(iptables-save 2>/dev/null | grep -v '^[#:]' || true)
netns_before=$(ip netns list | awk '{print $1}' | sort)
mounts_before=$(findmnt -rn -o TARGET | sort)
for k in "${sysctls[@]}"; do echo "$k $(sysctl -n "$k")"; done >"$saved"

# --- PKI: one CA; the API server, the kubelet, the admin; the service-account key
pki=$state/pki
ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() { # name CN
  ec "$pki/$1.key"
  openssl req -x509 -new -key "$pki/$1.key" -subj "/CN=$2" -days 2 -sha256 -out "$pki/$1.crt" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
cert() { # name subject [subjectAltName] [ca]
  local issuer=${4:-ca}
  ec "$pki/$1.key"
  openssl req -new -key "$pki/$1.key" -subj "$2" -out "$pki/$1.csr" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=serverAuth,clientAuth"
    [[ -n ${3:-} ]] && echo "subjectAltName=$3"
  } >"$pki/$1.ext"
  openssl x509 -req -in "$pki/$1.csr" -CA "$pki/$issuer.crt" -CAkey "$pki/$issuer.key" -CAcreateserial \
    -days 2 -sha256 -extfile "$pki/$1.ext" -out "$pki/$1.crt" 2>/dev/null
}
kubeconfig() { # name user
  cat >"$pki/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: ci, cluster: {server: "https://127.0.0.1:6443", certificate-authority: "$pki/ca.crt"}}]
users: [{name: $2, user: {client-certificate: "$pki/$2.crt", client-key: "$pki/$2.key"}}]
contexts: [{name: ci, context: {cluster: ci, user: $2}}]
current-context: ci
EOF
}
ca ca brainstem-ci-cluster-ca
cert apiserver "/CN=kube-apiserver" "IP:127.0.0.1,IP:$bridge_ip,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert admin "/O=system:masters/CN=brainstem-ci-admin"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert kubelet "/O=system:nodes/CN=system:node:$node" "IP:$bridge_ip,DNS:$node"
ec "$pki/sa.key"
openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
kubeconfig admin admin
kubeconfig kubelet kubelet
# The identity provider's own CA and serving certificate: the gateway trusts
# it through the chart's oidc.caBundle.
ca idp-ca brainstem-ci-idp-ca
cert dex "/CN=dex.idp.svc.cluster.local" "DNS:dex.idp.svc.cluster.local" idp-ca

# --- the network namespace: loopback and the pods' bridge, nothing else
ip netns add "$netns"
ip -n "$netns" link set lo up
ip -n "$netns" link add cni0 type bridge
ip -n "$netns" addr add "$bridge_ip/16" dev cni0
ip -n "$netns" link set cni0 up
# Service IPs are only ever DNATed to pods by kube-proxy; routing them to the
# bridge lets the namespace's own clients (the checks) reach them.
ip -n "$netns" route add 10.96.0.0/16 dev cni0 src "$bridge_ip"
mkdir -p "/etc/netns/$netns"
echo "nameserver $bridge_ip" >"/etc/netns/$netns/resolv.conf" # for `ip netns exec` clients
echo "127.0.0.1 localhost" >"/etc/netns/$netns/hosts"

start() { # name command...: in the namespace, logged, pid recorded
  local name=$1
  shift
  # exec, twice: $! is then the program's own pid, not a subshell's.
  (exec nsenter --net="/run/netns/$netns" -- "$@") >"$state/logs/$name.log" 2>&1 &
  echo $! >"$state/pids/$name"
}
wait_for() { # what seconds command...
  local what=$1 secs=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then say "FAIL: $what not within ${secs}s"; return 1; fi
    sleep 0.2
  done
}
healthy() { inns curl -fsS --max-time 2 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$1"; }

t_cluster=$SECONDS
start etcd "$kube/etcd" --name "$node" --data-dir "$state/etcd" --unsafe-no-fsync \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster "$node=http://127.0.0.1:2380" --listen-metrics-urls "" --log-level warn
start kube-apiserver "$kube/kube-apiserver" --etcd-servers http://127.0.0.1:2379 \
  --bind-address 127.0.0.1 --secure-port 6443 --advertise-address "$bridge_ip" \
  --service-cluster-ip-range 10.96.0.0/16 --authorization-mode Node,RBAC \
  --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types InternalIP,Hostname \
  --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$pki/sa.pub" \
  --service-account-signing-key-file "$pki/sa.key" --profiling=false
wait_for "the API server" 90 healthy https://127.0.0.1:6443/readyz
start kube-controller-manager "$kube/kube-controller-manager" --kubeconfig "$pki/admin.kubeconfig" \
  --authentication-kubeconfig "$pki/admin.kubeconfig" --authorization-kubeconfig "$pki/admin.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --service-account-private-key-file "$pki/sa.key" \
  --root-ca-file "$pki/ca.crt" --use-service-account-credentials \
  --controllers '*,-csrsigning,-csrapproving,-csrcleaner,-bootstrapsigner,-tokencleaner,-nodeipam' --profiling=false
start kube-scheduler "$kube/kube-scheduler" --kubeconfig "$pki/admin.kubeconfig" \
  --authentication-kubeconfig "$pki/admin.kubeconfig" --authorization-kubeconfig "$pki/admin.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --profiling=false

# containerd: its own socket, root and state; root here has no
# CAP_SYS_RESOURCE, hence restrict_oom_score_adj.
cat >"$state/containerd.toml" <<EOF
version = 2
root = "$state/containerd"
state = "$run/containerd/state"
[grpc]
  address = "$run/containerd/containerd.sock"
[ttrpc]
  address = "$run/containerd/containerd.sock.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni"
EOF
# The bridge: no gateway, no masquerade, no routes: pods reach the bridge only.
cat >"$state/cni/10-bridge.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "brainstem-ci", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": false, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$state/cni-ipam", "routes": [],
            "ranges": [[{"subnet": "10.244.0.0/16", "rangeStart": "10.244.1.1", "rangeEnd": "10.244.255.254"}]]}}
]}
EOF
start containerd containerd --config "$state/containerd.toml"
wait_for "containerd" 30 ctr --address "$run/containerd/containerd.sock" version

# Images: the pause program, Dex, and the brainstem image of this commit,
# each packed by build/image; the brainstem one imported from its OCI layout,
# so containerd has exactly its digest.
image_dir=${BRAINSTEM_IMAGE_DIR:-$root/dist/image}
if [[ ! -f $image_dir/oci/index.json ]]; then (cd build/image && go run . -out "$image_dir") >/dev/null; fi
(cd build/image && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$state/images/pause" ./pause)
(cd build/image && go run . -binary "$state/images/pause" -ref registry.k8s.io/pause:3.10 -out "$state/images/pause-image") >/dev/null
(cd build/image && go run . -binary "$dex" -ref localhost/brainstem-ci/dex:ci -out "$state/images/dex-image") >/dev/null
tar -C "$image_dir/oci" -cf "$state/images/brainstem-oci.tar" .
for tarball in "$state/images/pause-image/pause.tar" "$state/images/dex-image/dex.tar" "$state/images/brainstem-oci.tar"; do
  ctr_ images import --all-platforms "$tarball" >/dev/null
done
image_ref=$(sed -n 's/.*"org.opencontainers.image.ref.name": *"\([^"]*\)".*/\1/p' "$image_dir/oci/index.json" | head -1)
image_digest=$(sed -n 's/.*"digest": *"\(sha256:[0-9a-f]*\)".*/\1/p' "$image_dir/oci/index.json" | head -1)
# The chart names the image by digest (repo@sha256:...); the CRI finds an
# imported image by that name only once it is one of the image's names.
ctr_ images tag --force "$image_ref" "${image_ref%:*}@$image_digest" >/dev/null
say "images imported: $image_ref@$image_digest, Dex, pause ($(elapsed))"

# The kubelet's cgroups live under /$node in every hierarchy, so they are
# removed as one tree at the end; cpuset needs its parent's cpus and mems.
for h in /sys/fs/cgroup/*/; do
  [[ -d $h && ! -L ${h%/} ]] || continue
  mkdir -p "$h$node"
  if [[ -f $h/cpuset.cpus ]]; then cat "$h/cpuset.cpus" >"$h$node/cpuset.cpus"; cat "$h/cpuset.mems" >"$h$node/cpuset.mems"; fi
done
cat >"$state/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$node
containerRuntimeEndpoint: unix://$run/containerd/containerd.sock
address: $bridge_ip
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: AlwaysAllow}
tlsCertFile: "$pki/kubelet.crt"
tlsPrivateKeyFile: "$pki/kubelet.key"
clusterDomain: cluster.local
clusterDNS: [$bridge_ip]
resolvConf: ""
failSwapOn: false
oomScoreAdj: 0
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
syncFrequency: 10s
maxPods: 50
EOF
start kubelet "$kube/kubelet" --config "$state/kubelet.yaml" --kubeconfig "$pki/kubelet.kubeconfig" \
  --root-dir "$state/kubelet" --cert-dir "$state/kubelet/pki" --hostname-override "$node" --node-ip "$bridge_ip"
cat >"$state/Corefile" <<EOF
cluster.local:53 in-addr.arpa:53 ip6.arpa:53 {
  bind $bridge_ip
  errors
  ready 127.0.0.1:8181
  kubernetes cluster.local in-addr.arpa ip6.arpa {
    kubeconfig $pki/admin.kubeconfig
    pods insecure
  }
}
EOF
start coredns "$kube/coredns" -conf "$state/Corefile"
cat >"$state/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$pki/admin.kubeconfig"}
hostnameOverride: $node
mode: iptables
clusterCIDR: 10.244.0.0/16
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
oomScoreAdj: 0
nodePortAddresses: ["$bridge_ip/32"]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
start kube-proxy "$kube/kube-proxy" --config "$state/kube-proxy.yaml"
node_ready() { [[ $(kubectl get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
wait_for "node $node Ready" 120 node_ready
wait_for "CoreDNS" 60 inns curl -fsS --max-time 2 http://127.0.0.1:8181/ready
wait_for "kube-proxy" 60 inns curl -fsS --max-time 2 http://127.0.0.1:10256/healthz
say "ok   cluster up: Kubernetes $(kubectl version -o json | sed -n 's/.*"gitVersion": *"\(v[^"]*\)".*/\1/p' | tail -1), node Ready in $((SECONDS - t_cluster))s"

# What the namespace can reach: its loopback and the bridge, no default route.
links=$(ip -n "$netns" -br link | awk '{print $1}' | sed 's/@.*//' | grep -v '^veth' | sort | tr '\n' ' ')
if [[ $links != "cni0 lo " ]] || ip -n "$netns" route show default | grep -q .; then
  say "FAIL: the cluster's namespace has interfaces '$links' or a default route: $(ip -n "$netns" route)"
  exit 1
fi
say "ok   isolation: the cluster's only interfaces are lo and cni0 (plus pod veths), no default route: $(ip -n "$netns" route | tr '\n' ';')"

# Storage: a default class and one hostPath volume per wing, owned by the
# image's user, as a provisioner-less cluster needs.
kubectl apply -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local, annotations: {storageclass.kubernetes.io/is-default-class: "true"}}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
EOF
for i in 1 2 3 4; do
  install -d -o 65532 -g 65532 -m 0750 "$state/pv/pv$i"
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata: {name: brainstem-ci-pv$i}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: local
  hostPath: {path: "$state/pv/pv$i", type: Directory}
EOF
done

# --- 1. every ci/ scenario validated by the API server
crd_dir() { (cd build/kube && GOFLAGS= go mod download -json "$1" | sed -n 's/.*"Dir": *"\([^"]*\)".*/\1/p'); }
prom=$(crd_dir github.com/prometheus-operator/prometheus-operator@v0.85.0)
certmgr=$(crd_dir github.com/cert-manager/cert-manager@v1.21.2)
kubectl apply --server-side -f "$prom/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml" \
  -f "$certmgr/deploy/crds/cert-manager.io_certificates.yaml" -f "$certmgr/deploy/crds/cert-manager.io_issuers.yaml" >/dev/null
kubectl wait --for condition=Established --timeout 60s crd/servicemonitors.monitoring.coreos.com crd/certificates.cert-manager.io crd/issuers.cert-manager.io >/dev/null
say "ok   CRDs installed from upstream: ServiceMonitor (prometheus-operator v0.85.0), Certificate and Issuer (cert-manager v1.21.2)"
kubectl create namespace validate >/dev/null
for values in helm/brainstem/ci/*values.yaml; do
  if ! "$helm" template brainstem helm/brainstem --namespace validate -f "$values" >"$state/rendered.yaml" 2>"$state/helm.err"; then
    say "FAIL: helm template $(basename "$values"): $(cat "$state/helm.err")"
    exit 1
  fi
  n=$(grep -c '^kind:' "$state/rendered.yaml")
  if ! out=$(kubectl apply --dry-run=server --validate=strict -n validate -f "$state/rendered.yaml" 2>&1); then
    say "FAIL: the API server refused $(basename "$values"):"
    say "$out" | grep -v ' (server dry run)$'
    exit 1
  fi
  say "ok   server-side validation: $(basename "$values"): $n objects accepted (dry run, strict fields)"
done
kubectl delete namespace validate --wait=false >/dev/null

# --- 2. the identity provider in the cluster: Dex, HTTPS under its own CA
secret=$(openssl rand -hex 24)
kubectl create namespace idp >/dev/null
kubectl create namespace brainstem >/dev/null
kubectl -n idp create secret tls dex-tls --cert "$pki/dex.crt" --key "$pki/dex.key" >/dev/null
kubectl -n brainstem create configmap idp-ca --from-file ca.crt="$pki/idp-ca.crt" >/dev/null
kubectl -n brainstem create secret generic idp-client --from-literal client-secret="$secret" >/dev/null
sed -e "s/@SECRET@/$secret/" .ci/cluster/dex.yaml | kubectl apply -f - >/dev/null
kubectl -n idp rollout status deployment/dex --timeout 120s >/dev/null
say "ok   Dex serving https://dex.idp.svc.cluster.local:5556/dex in the cluster ($(elapsed))"

# --- 3. the chart for real: helm/test/cluster, inside the namespace
t_checks=$SECONDS
(cd helm/test && ip netns exec "$netns" env \
  BRAINSTEM_CLUSTER=1 KUBECTL="$kube/kubectl" HELM_BIN="$helm" KUBECONFIG="$pki/admin.kubeconfig" \
  BRAINSTEM_IMAGE_REF="$image_ref" BRAINSTEM_IMAGE_DIGEST="$image_digest" BRAINSTEM_IDP_CA="$pki/idp-ca.crt" \
  BRAINSTEM_CLUSTER_NODE_STATE="$state" BRAINSTEM_CONTAINERD="$run/containerd/containerd.sock" \
  go test -count=1 -timeout 15m -run '^TestCluster$' -v ./cluster/) >"$state/logs/checks.log" 2>&1 || {
  tail -n 80 "$state/logs/checks.log"
  say "FAIL: the cluster checks (full output in $logs/checks.log)"
  exit 1
}
grep -E '^\s*(--- |ok )|^\s+\S+_test.go:[0-9]+: (ok|figure)' "$state/logs/checks.log"
say "ok   cluster checks passed in $((SECONDS - t_checks))s"

# --- teardown, then what must hold after it
trap - EXIT
want_sysctls=$(cat "$saved")
teardown
iptables_after=$(iptables-save 2>/dev/null | grep -v '^[#:]' || true)
if [[ $iptables_before != "$iptables_after" ]]; then
  say "FAIL: the host's iptables rules changed"
  diff <(echo "$iptables_before") <(echo "$iptables_after") || true
  exit 1
fi
left=$(pgrep -f "$state|$run|$kube" || true)
netns_after=$(ip netns list | awk '{print $1}' | sort)
mounts_after=$(findmnt -rn -o TARGET | sort)
if [[ -n $left || $netns_before != "$netns_after" || $mounts_before != "$mounts_after" ]] || [[ -d /sys/fs/cgroup/memory/$node ]]; then
  say "FAIL: left behind: processes '$(tr '\n' ' ' <<<"$left")', network namespaces '$(comm -13 <(echo "$netns_before") <(echo "$netns_after") | tr '\n' ' ')'," \
    "mounts '$(comm -13 <(echo "$mounts_before") <(echo "$mounts_after") | tr '\n' ' ')', or cgroups"
  exit 1
fi
now_sysctls=$(for k in "${sysctls[@]}"; do echo "$k $(sysctl -n "$k")"; done)
if [[ $now_sysctls != "$want_sysctls" ]]; then
  say "FAIL: kernel settings not restored:"
  diff <(echo "$want_sysctls") <(echo "$now_sysctls") || true
  exit 1
fi
restored=$(tr '\n' ' ' <<<"$now_sysctls")
say "ok   torn down: no process, mount, cgroup or namespace left; host iptables unchanged; sysctls restored: $restored"
say "cluster: $(elapsed) in all"
