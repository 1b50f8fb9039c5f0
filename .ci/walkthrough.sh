#!/usr/bin/env bash
# Runs the walkthrough of docs/operating.md ("Running on plain machines")
# so that its commands cannot drift from the binary:
#   * every ```sh walkthrough block is run, in order, by bash;
#   * every ```<lang> walkthrough file=PATH block is written to PATH;
# relocated into a temporary directory: /etc/brainstem, /etc/systemd/system,
# /var/lib/brainstem and /usr/local/bin/brainstem move below it, the
# addresses 10.0.0.10 and 10.0.0.21 become 127.0.0.1, each port of the
# walkthrough becomes a free one, https://brain.acme.com becomes the
# gateway's own loopback listener (there is no TLS proxy in front), and
# https://sso.acme.com becomes a `brainstem dev idp` started here (it also
# gives $TOKEN, for ana@acme.com, and takes any $IDP_CLIENT_SECRET).
# systemd is not run: `systemctl` is played by the function below (start =
# the unit's ExecStart with its EnvironmentFile and %i, reload = ExecReload,
# stop = SIGTERM), `sudo` runs its command as is, and the unit files are
# checked with `systemd-analyze verify` when it is installed. Plain ```sh
# blocks (useradd, chown, install) are not run. The script ends with checks
# of what the walkthrough did: the doctor's brain_wings call through the
# gateway lists both wings, and the policy edit was reloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
doc=$repo/docs/operating.md

root=$(mktemp -d /tmp/brainstem-walkthrough.XXXXXX)
state=$root/.walkthrough
mkdir -p "$state" "$root/bin"
pids=()
cleanup() {
  local st=$?
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$st" -ne 0 ]; then
    for f in "$state"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 30 "$f"; }; done
  fi
  rm -rf "$root"
}
trap cleanup EXIT

go build -o "$root/bin/brainstem" ./cmd/brainstem
export PATH="$root/bin:$PATH"

# A free port for each of the walkthrough's ports (a fresh listener on port
# 0 each, released at once; the same approach as the Go tests).
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 40000)); }
declare -A port
for p in 7443 7444 9091 9092 8443 9090; do port[$p]=$(freeport); done
idp_port=$(freeport)

relocate() {
  local s
  s=$(sed -e "s#/usr/local/bin/brainstem#$root/bin/brainstem#g" \
          -e "s#/etc/brainstem#$root/etc/brainstem#g" \
          -e "s#/etc/systemd/system#$root/etc/systemd/system#g" \
          -e "s#/var/lib/brainstem#$root/var/lib/brainstem#g" \
          -e "s#https://sso\.acme\.com#http://127.0.0.1:$idp_port#g" \
          -e "s#https://brain\.acme\.com#http://127.0.0.1:8443#g" \
          -e "s#10\.0\.0\.10#127.0.0.1#g" -e "s#10\.0\.0\.21#127.0.0.1#g")
  for p in "${!port[@]}"; do s=${s//:$p/:${port[$p]}}; done
  printf '%s\n' "$s"
}

# The identity provider, and a token for a user the policies admit.
brainstem dev idp --port "$idp_port" >"$state/idp.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$idp_port/.well-known/openid-configuration" >/dev/null 2>&1 && break
  sleep 0.1
done
TOKEN=$(brainstem dev token --idp "http://127.0.0.1:$idp_port" --email ana@acme.com)
IDP_CLIENT_SECRET=walkthrough-$RANDOM$RANDOM # the development IdP checks no client secret
export TOKEN IDP_CLIENT_SECRET

# systemctl, as far as the walkthrough uses it.
unitfile() { # unit name → its file (a template's for an instance)
  local u=$1 d=$root/etc/systemd/system
  [[ $u == *.service ]] || u=$u.service
  if [ -f "$d/$u" ]; then echo "$d/$u"; return; fi
  if [[ $u == *@*.service ]]; then echo "$d/${u%%@*}@.service"; return; fi
  echo "walkthrough: no unit file for $1" >&2; return 1
}
unitkey() { # the joined value of KEY= in a unit file, %i expanded
  local f=$1 key=$2 inst=$3
  awk -v k="$key" '
    BEGIN { on = 0 }
    on { sub(/^[ \t]+/, ""); line = line " " $0; if (line ~ /\\$/) { sub(/\\$/, "", line); next } print line; exit }
    index($0, k "=") == 1 { line = substr($0, length(k) + 2); if (line ~ /\\$/) { sub(/\\$/, "", line); on = 1; next } print line; exit }
  ' "$f" | sed -e "s/%i/$inst/g" -e "s/%I/$inst/g"
}
instance() { local u=${1%.service}; [[ $u == *@* ]] && echo "${u#*@}" || echo ""; }
systemctl() {
  local cmd=$1; shift
  case $cmd in
    daemon-reload)
      if command -v systemd-analyze >/dev/null; then
        for f in "$root"/etc/systemd/system/*.service; do
          local v=$f
          [[ $f == *@.service ]] && { v=${f%@.service}@check.service; cp "$f" "$v"; }
          # Any complaint fails (an unknown key is only a warning to systemd).
          if ! systemd-analyze verify --man=no "$v" >"$state/verify.out" 2>&1 || [ -s "$state/verify.out" ]; then
            cat "$state/verify.out"; echo "walkthrough: systemd-analyze verify $f failed"; return 1
          fi
          echo "systemd-analyze verify $(basename "$f"): ok"
          [[ $v != "$f" ]] && rm -f "$v"
        done
      else
        echo "walkthrough: systemd-analyze is not installed; unit files not verified"
      fi ;;
    enable|start)
      [ "$cmd" = enable ] && [ "${1:-}" = --now ] && shift
      local u
      for u in "$@"; do
        local f inst exec envf
        f=$(unitfile "$u"); inst=$(instance "$u")
        exec=$(unitkey "$f" ExecStart "$inst")
        envf=$(unitkey "$f" EnvironmentFile "$inst")
        (
          set -a
          [ -n "$envf" ] && . "${envf#-}"
          set +a
          exec bash -c "exec $exec"
        ) >"$state/$u.log" 2>&1 &
        pids+=($!)
        echo $! >"$state/$u.pid"
        echo "started $u (pid $!): $exec"
      done ;;
    reload)
      local u
      for u in "$@"; do
        local f inst reload
        f=$(unitfile "$u"); inst=$(instance "$u")
        reload=$(unitkey "$f" ExecReload "$inst")
        MAINPID=$(cat "$state/$u.pid") bash -c "${reload//\$MAINPID/\$MAINPID}"
        echo "reloaded $u: $reload"
      done ;;
    stop)
      local u pid
      for u in "$@"; do
        pid=$(cat "$state/$u.pid")
        kill -TERM "$pid"
        wait "$pid" || true # as systemd does, until the process is gone
        echo "stopped $u"
      done ;;
    *) echo "walkthrough: systemctl $cmd is not played here" >&2; return 1 ;;
  esac
}
sudo() { "$@"; }
export -f systemctl unitfile unitkey instance sudo 2>/dev/null || true

# The blocks, in order.
n=0
while IFS= read -r -d $'\0' block; do
  n=$((n + 1))
  head=${block%%$'\n'*}
  body=${block#*$'\n'}
  body=$(relocate <<<"$body")
  case $head in
    *"file="*)
      path=$(relocate <<<"${head##*file=}")
      mkdir -p "$(dirname "$path")"
      printf '%s\n' "$body" >"$path"
      echo "=== block $n: wrote $path" ;;
    *)
      echo "=== block $n: run"
      printf '%s\n' "$body" | sed 's/^/  $ /'
      # systemctl's starts must outlive the block's bash: run it here.
      eval "$body" ;;
  esac
done < <(awk '
  /^```[a-z]+ walkthrough/ { on = 1; buf = substr($0, 4); next }
  on && /^```$/ { printf "%s%c", buf, 0; on = 0; next }
  on { buf = buf "\n" $0 }
' "$doc")
[ "$n" -ge 8 ] || { echo "walkthrough: only $n blocks found in $doc"; exit 1; }

# What the walkthrough must have done.
doctor=$(brainstem doctor "$(relocate <<<https://brain.acme.com)" --token "$TOKEN" 2>&1) || { echo "$doctor"; exit 1; }
grep -q payments <<<"$doctor" && grep -q platform <<<"$doctor" || { echo "$doctor"; echo "walkthrough: brain_wings through the gateway did not list both wings"; exit 1; }
# A tool call on each wing's shard through the gateway (MCP over curl:
# initialize, initialized, tools/call), with the token of the walkthrough.
mcp=$(relocate <<<https://brain.acme.com/mcp)
hdr=(-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
sid=$(curl -fsS -D - -o /dev/null "${hdr[@]}" "$mcp" \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"walkthrough","version":"0"}}}' |
  tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" {print $2}')
[ -n "$sid" ] || { echo "walkthrough: initialize through the gateway gave no session"; exit 1; }
hdr+=(-H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-06-18')
curl -fsS "${hdr[@]}" "$mcp" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
for wing in payments platform; do
  out=$(curl -fsS "${hdr[@]}" "$mcp" -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"brain_query","arguments":{"wing":"'$wing'","query":"walkthrough"}}}')
  grep -q '\\"hits\\"' <<<"$out" && ! grep -q '"isError":true' <<<"$out" ||
    { echo "$out"; echo "walkthrough: brain_query on $wing through the gateway failed"; exit 1; }
  echo "brain_query on $wing through the gateway: ok"
done
grep -q '"msg":"wing rejected a cached token; re-minting","email":"ana@acme.com".*"wing":"payments"' "$state/brainstem-gateway.log" ||
  { echo "walkthrough: the payments shard's new key did not make the gateway re-mint"; exit 1; }

for _ in $(seq 1 100); do # the reload is the shard's, after the signal
  grep -q '"msg":"policy reloaded"' "$state/brainstem-shard@platform.log" && break
  sleep 0.1
done
grep -q '"msg":"policy reloaded"' "$state/brainstem-shard@platform.log" || { echo "walkthrough: the platform shard did not reload its edited policy within 10 s"; exit 1; }
echo "walkthrough: $n blocks of docs/operating.md ran; brain_wings and brain_query on both wings through the gateway; the rotated shard key re-minted; the policy edit was reloaded"
