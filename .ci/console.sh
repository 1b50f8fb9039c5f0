#!/usr/bin/env bash
# The curators' console end to end in headless Chromium (Debian's, driven by
# playwright-core, with axe-core), against `brainstem dev`: the curator's
# day, bob's view, the attack notes, forged requests, accessibility on every
# page (.ci/console/console-e2e.mjs says what it checks). Screenshots go to
# $BRAINSTEM_CONSOLE_SHOTS (default: a temporary directory; docs/console/
# holds the committed ones: BRAINSTEM_CONSOLE_SHOTS=docs/console bash .ci/console.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
if [ ! -d .ci/console/node_modules/playwright-core ] || [ ! -d .ci/console/node_modules/axe-core ]; then
  (cd .ci/console && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

tmp=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
shots=${BRAINSTEM_CONSOLE_SHOTS:-$tmp/shots}
case "$shots" in /*) ;; *) shots=$root/$shots ;; esac

go build -o "$tmp/brainstem" ./cmd/brainstem
port=$((20000 + RANDOM % 20000))
"$tmp/brainstem" dev --calls-per-second 1000 --port "$port" --admin-port $((port + 1)) \
  --idp-port $((port + 2)) --shard-port $((port + 3)) --data "$tmp/data" >"$tmp/dev.out" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  grep -q '^  Token:' "$tmp/dev.out" && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/dev.out"; echo "brainstem dev exited"; exit 1; }
  sleep 0.1
done
grep -q '^  Token:' "$tmp/dev.out" || { cat "$tmp/dev.out"; echo "brainstem dev did not become ready"; exit 1; }
url=$(awk '/^  Console:/ {print $2}' "$tmp/dev.out")
[ -n "$url" ] || { cat "$tmp/dev.out"; echo "brainstem dev printed no console URL"; exit 1; }
echo "console is up at $url"
node .ci/console/console-e2e.mjs "$url" gateway/console/testdata/attacks.txt "$shots"
echo "screenshots in $shots"
