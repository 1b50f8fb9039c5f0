#!/usr/bin/env bash
# Installs the Claude Code CLI from npm (@anthropic-ai/claude-code) at the
# pinned version, outside the repository, and prints the path of its `claude`
# program. An install already made for this version is reused, so only the
# first run on a machine reaches the npm registry. Used by .ci/signin.sh (a
# sign-in with only the URL) and .ci/plugin.sh (the Claude Code plugin).
# The CLI needs Node.js 18 or later.
set -euo pipefail
version=2.1.332
dir=${BRAINSTEM_CLAUDE_CODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/brainstem/claude-code-$version}
bin=$dir/node_modules/.bin/claude
if [[ -x $bin ]] && "$bin" --version 2>/dev/null | grep -q "^$version "; then
  echo "$bin"
  exit 0
fi
echo "installing @anthropic-ai/claude-code@$version into $dir" >&2
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"
npm install --prefix "$dir.tmp" --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$version" >&2
rm -rf "$dir"
mv "$dir.tmp" "$dir"
"$bin" --version >/dev/null
echo "$bin"
