#!/usr/bin/env bash
# The Claude Code plugin (deploy/claude/plugin) and its marketplace
# (deploy/claude/.claude-plugin/marketplace.json), with the Claude Code CLI
# from npm (.ci/claude-code.sh, the pinned version .ci/signin.sh uses), each
# run in a throwaway HOME, nothing but loopback:
#  1. `claude plugin validate --strict` passes on the plugin and on the
#     marketplace;
#  2. from the local marketplace directory: `claude plugin marketplace add`,
#     `claude plugin install brainstem@brainstem --config brain_url=<url>`,
#     and `claude plugin list` shows it enabled; the plugin's MCP server is
#     `<url>/mcp` of a running `brainstem dev` and, added with the URL alone,
#     needs authentication (the gateway signs it in), not a failure;
#  3. the plugin's hooks: a turn and a /compact of `claude -p` (against a
#     stand-in for the Messages API on loopback, .ci/plugin-api.mjs) run
#     `brainstem hook session-start|prompt|stop|pre-compact --url <url>`. The
#     `brainstem` they run here is a stand-in that records its arguments and
#     input: this checks the plugin's side of the contract (events, matchers,
#     the URL), not the hooks themselves;
#  4. a company's copy, as docs/agents.md tells it: deploy/claude copied,
#     renamed and given its URL, committed and pushed to a git host (a bare
#     repository served over smart HTTP on loopback, .ci/git-http.mjs); a
#     developer adds the marketplace by its git URL and installs
#     brainstem@acme.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

claude=$(bash .ci/claude-code.sh)
echo "Claude Code CLI $("$claude" --version 2>/dev/null)"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }
# Built before HOME changes below: Go's caches stay the machine's.
go build -o "$tmp/brainstem" ./cmd/brainstem
. .ci/startdev.sh
start_dev "$tmp/brainstem" "$tmp/dev.out" --data "$tmp/data" || exit 1
pids+=("$dev_pid")
mcp_url=$(awk '/^  MCP URL:/ {print $3}' "$tmp/dev.out")
url=${mcp_url%/mcp}
echo "dev is up at $url"

# A fresh HOME for each user of Claude Code; nothing leaks in from the machine's.
fresh_home() {
  export HOME=$tmp/$1
  mkdir -p "$HOME"
}
unset CLAUDE_CONFIG_DIR ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN ANTHROPIC_BASE_URL
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1

echo "--- claude plugin validate --strict: the plugin, the marketplace"
fresh_home validate
"$claude" plugin validate --strict deploy/claude/plugin </dev/null >"$tmp/validate-plugin.out" 2>&1 ||
  { cat "$tmp/validate-plugin.out"; fail "the plugin does not validate"; }
grep -E '^  ❯ (hooks|mcpServers|commands):|Validation passed' "$tmp/validate-plugin.out"
"$claude" plugin validate --strict deploy/claude </dev/null >"$tmp/validate-market.out" 2>&1 ||
  { cat "$tmp/validate-market.out"; fail "the marketplace does not validate"; }
grep -E 'Validation passed' "$tmp/validate-market.out"

echo "--- from the local marketplace directory, into a throwaway HOME"
fresh_home dev1
"$claude" plugin marketplace add "$root/deploy/claude" </dev/null
"$claude" plugin install brainstem@brainstem --config "brain_url=$url" </dev/null
list=$("$claude" plugin list </dev/null 2>&1)
echo "$list" | grep -A4 '❯ brainstem@brainstem'
grep -A4 '❯ brainstem@brainstem' <<<"$list" | grep -q 'Status: ✔ enabled' || fail "claude plugin list does not show brainstem@brainstem enabled"
"$claude" plugin configure brainstem@brainstem </dev/null | grep brain_url
mkdir -p "$tmp/proj"
cd "$tmp/proj"
mcp=$("$claude" mcp list </dev/null 2>&1)
echo "$mcp" | grep '^plugin:brainstem:brainstem'
# `claude mcp list` exits 0 whatever the status: read its line.
grep -qF "plugin:brainstem:brainstem: $url/mcp (HTTP) - ! Needs authentication" <<<"$mcp" ||
  fail "the plugin's MCP server should be $url/mcp, needing authentication"

echo "--- the hooks: a turn and a /compact of claude -p"
mkdir -p "$tmp/bin"
cat >"$tmp/bin/brainstem" <<EOF
#!/bin/sh
# Stand-in for \`brainstem hook\`: records its arguments, the plugin's option
# in the environment, and the event's JSON.
printf '%s\t%s\t%s\n' "\$*" "\$CLAUDE_PLUGIN_OPTION_BRAIN_URL" "\$(cat)" >>"$tmp/hooks.log"
EOF
chmod +x "$tmp/bin/brainstem"
node "$root/.ci/plugin-api.mjs" $((port + 10)) "$tmp/api.log" >"$tmp/api.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do grep -q serving "$tmp/api.out" && break; sleep 0.1; done
grep -q serving "$tmp/api.out" || { cat "$tmp/api.out"; fail "the Messages API stand-in did not start"; }
api() { PATH=$tmp/bin:$PATH ANTHROPIC_API_KEY=sk-ant-plugin-ci ANTHROPIC_BASE_URL=http://127.0.0.1:$((port + 10)) CLAUDE_CODE_MAX_RETRIES=0 "$@"; }
api timeout 120 "$claude" -p "what does the brain know about on-call?" </dev/null >"$tmp/turn.out" 2>&1 ||
  { cat "$tmp/turn.out"; fail "claude -p did not complete a turn"; }
api timeout 120 "$claude" -p --continue "/compact" </dev/null >"$tmp/compact.out" 2>&1 ||
  { cat "$tmp/compact.out"; fail "claude -p /compact failed"; }
cut -f1,2 "$tmp/hooks.log"
expect() { # ARGS EVENT-FIELD: one recorded call with these arguments, the option, and this event
  awk -F'\t' -v a="$1" -v u="$url" -v e="$2" '$1 == a && $2 == u && index($3, e) {found=1} END {exit !found}' "$tmp/hooks.log" ||
    fail "no hook ran \`brainstem $1\` for $2"
}
expect "hook session-start --url $url" '"source":"startup"'
expect "hook prompt --url $url" '"prompt":"what does the brain know about on-call?"'
expect "hook stop --url $url" '"hook_event_name":"Stop"'
expect "hook session-start --url $url" '"source":"resume"'
expect "hook pre-compact --url $url" '"trigger":"manual"'
expect "hook session-start --url $url" '"source":"compact"'

echo "--- the plugin's /brainstem:knowledge-join, with the plugin's URL in it"
: >"$tmp/api.log"
api timeout 120 "$claude" -p "/brainstem:knowledge-join" </dev/null >"$tmp/join.out" 2>&1 ||
  { cat "$tmp/join.out"; fail "claude -p /brainstem:knowledge-join failed"; }
grep -qF "The Brainstem plugin's brain URL: $url" "$tmp/api.log" ||
  { head -c 2000 "$tmp/api.log"; fail "the command did not reach the model with the plugin's brain URL"; }
grep -o "The Brainstem plugin's brain URL: [^ ]*" "$tmp/api.log" | head -n 1 | sed 's/\\n.*//'
cd "$root"

echo "--- a company's copy, pushed to its git host, added by its git URL"
company=$tmp/acme-claude-plugins
cp -R deploy/claude "$company"
node - "$company" <<'EOF'
// What the company edits (docs/agents.md): the marketplace's name and owner,
// and its brain's URL as the option's default.
const fs = require('node:fs');
const dir = process.argv[2];
const edit = (f, fn) => { const j = JSON.parse(fs.readFileSync(f)); fn(j); fs.writeFileSync(f, JSON.stringify(j, null, 2) + '\n'); };
edit(`${dir}/.claude-plugin/marketplace.json`, (m) => { m.name = 'acme'; m.owner = {name: 'Acme Platform Team'}; });
edit(`${dir}/plugin/.claude-plugin/plugin.json`, (p) => { p.userConfig.brain_url.default = 'https://brain.acme.com'; });
EOF
fresh_home company
"$claude" plugin validate --strict "$company/plugin" </dev/null >/dev/null 2>&1 || fail "the company's plugin does not validate"
"$claude" plugin validate --strict "$company" </dev/null >/dev/null 2>&1 || fail "the company's marketplace does not validate"
git -C "$company" init -q -b main
git -C "$company" add -A
git -C "$company" -c user.name=acme -c user.email=platform@acme.com commit -q -m "Brainstem plugin for acme"
mkdir -p "$tmp/git"
git init -q --bare "$tmp/git/claude-plugins.git"
git -C "$company" push -q "$tmp/git/claude-plugins.git" main
git -C "$tmp/git/claude-plugins.git" symbolic-ref HEAD refs/heads/main
node "$root/.ci/git-http.mjs" "$tmp/git" $((port + 11)) >"$tmp/git.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do grep -q serving "$tmp/git.out" && break; sleep 0.1; done
grep -q serving "$tmp/git.out" || { cat "$tmp/git.out"; fail "the git host did not start"; }
fresh_home dev2
"$claude" plugin marketplace add "http://127.0.0.1:$((port + 11))/claude-plugins.git" </dev/null
"$claude" plugin install brainstem@acme --config brain_url=https://brain.acme.com </dev/null
list=$("$claude" plugin list </dev/null 2>&1)
echo "$list" | grep -A4 '❯ brainstem@acme'
grep -A4 '❯ brainstem@acme' <<<"$list" | grep -q 'Status: ✔ enabled' || fail "claude plugin list does not show brainstem@acme enabled"
"$claude" plugin configure brainstem@acme --json </dev/null | grep -q '"brain_url": "https://brain.acme.com"' ||
  fail "the option brain_url was not saved"
echo "the plugin: ok"
