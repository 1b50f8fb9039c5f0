#!/usr/bin/env bash
# Resources, prompts and change notifications through a running `brainstem
# dev`, driven by real npm clients: the TypeScript SDK (2025-11-25 and
# 2025-06-18, .ci/resources-e2e.mjs) and the Inspector CLI (its legacy and
# modern eras: 2025-11-25 and 2026-07-28). bob must never see a people-ops
# resource. About 10 s warm.
set -euo pipefail
cd "$(dirname "$0")/.."
npmdir=.ci/node_modules-inspector
if [ ! -x "$npmdir/node_modules/.bin/mcp-inspector" ]; then
  mkdir -p "$npmdir"
  npm install --prefix "$npmdir" --no-audit --no-fund --loglevel=error @modelcontextprotocol/inspector@2.12.0 >/dev/null
fi
inspector=$(pwd)/$npmdir/node_modules/.bin/mcp-inspector
sdkdir=.ci/node_modules-sdk
if [ ! -d "$sdkdir/node_modules/@modelcontextprotocol/sdk" ]; then
  mkdir -p "$sdkdir"
  npm install --prefix "$sdkdir" --no-audit --no-fund --loglevel=error @modelcontextprotocol/sdk@1.32.2 >/dev/null
fi
cp .ci/resources-e2e.mjs "$sdkdir/resources-e2e.mjs"

bin=$(mktemp -d)/brainstem
go build -o "$bin" ./cmd/brainstem
out=$(mktemp)
port=$((20000 + RANDOM % 20000))
"$bin" dev --calls-per-second 1000 --port "$port" --admin-port $((port + 1)) --idp-port $((port + 2)) --shard-port $((port + 3)) >"$out" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
  grep -q '^  Token:' "$out" && break
  kill -0 $pid 2>/dev/null || { cat "$out"; echo "brainstem dev exited"; exit 1; }
  sleep 0.1
done
grep -q '^  Token:' "$out" || { cat "$out"; echo "brainstem dev did not become ready"; exit 1; }
url=$(awk '/^  MCP URL:/ {print $3}' "$out")
alice=$("$bin" dev token --idp "http://127.0.0.1:$((port + 2))" --email alice@example.com)
bob=$("$bin" dev token --idp "http://127.0.0.1:$((port + 2))" --email bob@example.com)

for v in 2025-11-25 2025-06-18; do
  node "$sdkdir/resources-e2e.mjs" "$url" "$alice" "$bob" "$v"
done

fail() { echo "FAIL (inspector, $era): $*"; exit 1; }
for era in legacy modern; do
  insp() { "$inspector" --cli "$url" --transport http --protocol-era "$era" "$@"; }
  list=$(insp --method resources/list --header "Authorization: Bearer $alice")
  grep -q '"brain://people-ops/facts/leave-policy-summary"' <<<"$list" || { echo "$list"; fail "alice's resources/list lacks a people-ops note"; }
  bobs=$(insp --method resources/list --header "Authorization: Bearer $bob")
  grep -q '"brain://payments/' <<<"$bobs" || { echo "$bobs"; fail "bob's resources/list lacks payments"; }
  grep -q 'people-ops' <<<"$bobs" && { echo "$bobs"; fail "bob's resources/list shows people-ops"; }
  read=$(insp --method resources/read --uri brain://people-ops/facts/leave-policy-summary --header "Authorization: Bearer $alice")
  grep -q '"mimeType": *"text/markdown"' <<<"$read" || { echo "$read"; fail "alice cannot read a people-ops note"; }
  if hidden=$(insp --method resources/read --uri brain://people-ops/facts/leave-policy-summary --header "Authorization: Bearer $bob" 2>&1); then
    echo "$hidden"; fail "bob read a people-ops note"
  fi
  grep -q 'resource not found' <<<"$hidden" || { echo "$hidden"; fail "bob's read of a people-ops note is not 'resource not found'"; }
  tpl=$(insp --method resources/templates/list --header "Authorization: Bearer $alice")
  grep -q 'brain://{wing}/{hall}/{slug}' <<<"$tpl" || { echo "$tpl"; fail "no note template"; }
  prompts=$(insp --method prompts/list --header "Authorization: Bearer $bob")
  grep -q '"search_before_task"' <<<"$prompts" || { echo "$prompts"; fail "bob's prompts/list lacks search_before_task"; }
  grep -q '"review_inbox"' <<<"$prompts" && { echo "$prompts"; fail "bob (a curator nowhere) is offered review_inbox"; }
  got=$(insp --method prompts/get --prompt-name review_inbox --prompt-args wing=payments --header "Authorization: Bearer $alice")
  grep -q 'brain_pending' <<<"$got" || { echo "$got"; fail "review_inbox names no tool"; }
  echo "inspector ($era): resources/list, resources/read, resources/templates/list, prompts/list, prompts/get ok; bob sees no people-ops resource"
done
