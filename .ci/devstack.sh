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
. .ci/startdev.sh
trap 'kill $dev_pid 2>/dev/null || true; wait $dev_pid 2>/dev/null || true' EXIT
start_dev "$bin" "$out" || exit 1
pid=$dev_pid
url=$(awk '/^  MCP URL:/ {print $3}' "$out")
