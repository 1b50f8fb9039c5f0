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
. .ci/startdev.sh
start_dev "$tmp/brainstem" "$tmp/dev.out" --data "$tmp/data" || exit 1
pid=$dev_pid
url=$(awk '/^  Console:/ {print $2}' "$tmp/dev.out")
[ -n "$url" ] || { cat "$tmp/dev.out"; echo "brainstem dev printed no console URL"; exit 1; }
echo "console is up at $url"
node .ci/console/console-e2e.mjs "$url" gateway/console/testdata/attacks.txt "$shots"
echo "screenshots in $shots"
