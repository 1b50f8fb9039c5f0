# Sourced by the CI scripts that drive a running `brainstem dev` with real
# npm clients (smoke.sh, resources.sh): installs the pinned Inspector CLI
# and TypeScript SDK once, builds brainstem, starts `brainstem dev` on
# random ports, waits for its banner and stops it on exit. Sets inspector,
# sdkdir, bin, port, out and url.
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
  sleep 0.1 # polling the banner of the process started above, bounded by 300 tries
done
grep -q '^  Token:' "$out" || { cat "$out"; echo "brainstem dev did not become ready"; exit 1; }
url=$(awk '/^  MCP URL:/ {print $3}' "$out")
