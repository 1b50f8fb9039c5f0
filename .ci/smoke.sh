#!/usr/bin/env bash
# Starts `brainstem dev`, lists the tools and runs brain_query through a real
# npm MCP client (the Inspector CLI, pinned), then stops it.
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
cp .ci/sdk-e2e.mjs "$sdkdir/sdk-e2e.mjs"

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
token=$(awk '/^  Token:/ {print $2}' "$out")
echo "dev is up at $url"

tools=$("$inspector" --cli "$url" --transport http --method tools/list --header "Authorization: Bearer $token")
for t in brain_query brain_get brain_list brain_links brain_pending brain_write brain_update brain_ingest_raw session_log brain_promote brain_wings; do
  grep -q "\"$t\"" <<<"$tools" || { echo "$tools"; echo "tools/list lacks $t"; exit 1; }
done
echo "tools/list: all 11 tools"

res=$("$inspector" --cli "$url" --transport http --method tools/call --tool-name brain_query --tool-arg query=incident --header "Authorization: Bearer $token")
grep -q '"hits' <<<"$res" || { echo "$res"; echo "brain_query returned no hits envelope"; exit 1; }
grep -q 'isError": true' <<<"$res" && { echo "$res"; exit 1; }
echo "brain_query across wings: ok"

if "$inspector" --cli "$url" --transport http --method tools/list >/dev/null 2>&1; then
  echo "tools/list without a token succeeded"; exit 1
fi
echo "unauthenticated call refused: ok"

node "$sdkdir/sdk-e2e.mjs" "$url" "$token"
