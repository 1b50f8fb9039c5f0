# Sourced by the CI scripts that start `brainstem dev` (devstack.sh,
# signin.sh, console.sh). start_dev BIN OUT [ARGS...] starts BIN dev on a
# block of free ports and waits for its banner; sets port (the gateway's;
# admin is port+1, the IdP port+2, the shards port+3 on, and port+10 is free
# for the caller) and dev_pid.
#
# The block is chosen below the kernel's ephemeral range: a port in that
# range can be held at any moment by some outgoing connection on the
# machine (a CI run once lost the console step to "bind: address already in
# use" on a random port there). A start that still finds a port taken is
# tried again on another block, five times at most; any other early exit
# fails at once.
start_dev() {
  local bin=$1 out=$2
  shift 2
  local low first=20000 span
  low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  span=$((low - first - 16))
  [ "$span" -gt 100 ] || { first=61000; span=4000; } # a range starting that low: use the ports above it
  for _try in 1 2 3 4 5; do
    port=$((first + RANDOM % span))
    "$bin" dev --calls-per-second 1000 --port "$port" --admin-port $((port + 1)) \
      --idp-port $((port + 2)) --shard-port $((port + 3)) "$@" >"$out" 2>&1 &
    dev_pid=$!
    local up=""
    for _ in $(seq 1 300); do
      grep -q '^  Token:' "$out" && { up=1; break; }
      kill -0 "$dev_pid" 2>/dev/null || break
      sleep 0.1 # polling the banner of the process started above, bounded by 300 tries
    done
    [ -n "$up" ] && return 0
    if ! kill -0 "$dev_pid" 2>/dev/null && grep -q 'address already in use' "$out"; then
      echo "brainstem dev found a port of $port..$((port + 10)) taken; trying another block"
      wait "$dev_pid" 2>/dev/null || true
      continue
    fi
    cat "$out"
    if kill -0 "$dev_pid" 2>/dev/null; then
      echo "brainstem dev did not become ready"
      kill "$dev_pid" 2>/dev/null || true
    else
      echo "brainstem dev exited"
    fi
    return 1
  done
  cat "$out"
  echo "brainstem dev found its ports taken five times"
  return 1
}
