#!/usr/bin/env bash
# The hooks (brainstem hook <event>) as the Claude Code CLI runs them: the
# pinned CLI from npm (.ci/claude-code.sh), a throwaway HOME, nothing but
# loopback.
#  1. `brainstem hooks install --url <url>` merges the four entries into the
#     throwaway ~/.claude/settings.json, and a second install changes nothing;
#  2. alice's sign-in is stored as `brainstem login` leaves it (a token of the
#     dev identity provider in the sign-in file: no browser here);
#  3. in a repository about payments retries with a changed file, a turn of
#     `claude -p "how do we handle retries on the payment API"` against a
#     stand-in for the Messages API (.ci/plugin-api.mjs, which logs every
#     request) must send the model the session-start brief and the prompt's
#     notes (Claude Code took our JSON and passed additionalContext on), then,
#     the session having changed a file and captured nothing, the stop hook's
#     block (a second model request with the capture steps), and only one:
#     the turn ends;
#  4. a /compact runs pre-compact, which logs the compaction in the brain;
#  5. `brainstem hooks uninstall` gives the settings file back as it was.
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

go build -o "$tmp/bin/brainstem" ./cmd/brainstem
. .ci/startdev.sh
start_dev "$tmp/bin/brainstem" "$tmp/dev.out" --data "$tmp/data" || exit 1
pids+=("$dev_pid")
mcp_url=$(awk '/^  MCP URL:/ {print $3}' "$tmp/dev.out")
idp=http://127.0.0.1:$((port + 2))
echo "dev is up at $mcp_url"

export HOME=$tmp/home XDG_CONFIG_HOME=$tmp/home/.config XDG_CACHE_HOME=$tmp/home/.cache PATH=$tmp/bin:$PATH
mkdir -p "$HOME/.claude"
unset CLAUDE_CONFIG_DIR ANTHROPIC_API_KEY ANTHROPIC_AUTH_TOKEN ANTHROPIC_BASE_URL BRAINSTEM_URL
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1

echo "--- brainstem hooks install"
printf '{\n  "model": "sonnet",\n  "permissions": {"allow": ["Bash(git status)"]}\n}\n' >"$HOME/.claude/settings.json"
cp "$HOME/.claude/settings.json" "$tmp/settings.before"
brainstem hooks install --url "$mcp_url"
cp "$HOME/.claude/settings.json" "$tmp/settings.installed"
brainstem hooks install --url "$mcp_url" | grep -q 'nothing changed' || fail "a second install changed the settings"
cmp -s "$HOME/.claude/settings.json" "$tmp/settings.installed" || fail "a second install changed the settings"
grep -c '"command": "brainstem hook ' "$HOME/.claude/settings.json"

echo "--- alice's stored sign-in"
token=$(brainstem dev token --email alice@example.com --idp "$idp" 2>/dev/null)
node - "$mcp_url" "$idp" "$token" <<'EOF'
// The file `brainstem login` writes (signin.Store.Path, signin.Record).
const [url, idp, token] = process.argv.slice(2);
const crypto = require('node:crypto'), fs = require('node:fs'), path = require('node:path');
const dir = path.join(process.env.XDG_CONFIG_HOME, 'brainstem', 'signins');
fs.mkdirSync(dir, {recursive: true, mode: 0o700});
const name = url.replace(/^https?:\/\//, '').replace(/[^A-Za-z0-9.-]/g, '_').slice(0, 80);
const digest = crypto.createHash('sha256').update(url).digest('hex').slice(0, 8);
const rec = {version: 1, mcp_url: url, issuer: idp, token_endpoint: idp + '/token', client_id: 'brainstem-ci',
  access_token: token, token_type: 'Bearer', expires_at: new Date(Date.now() + 3600e3).toISOString(),
  email: 'alice@example.com', signed_in_at: new Date().toISOString()};
fs.writeFileSync(path.join(dir, `${name}-${digest}.json`), JSON.stringify(rec, null, 2) + '\n', {mode: 0o600});
EOF

echo "--- a turn of claude -p in a repository about payments retries"
repo=$tmp/payments-retries
mkdir -p "$repo"
printf '# Payments retries\n\nHow our PSP client retries captures.\n' >"$repo/README.md"
git -C "$repo" init -q -b retry-budget
git -C "$repo" add -A
git -C "$repo" -c user.name=dev -c user.email=dev@example.com commit -q -m "Add exponential backoff to PSP capture retries"
node "$root/.ci/plugin-api.mjs" $((port + 10)) "$tmp/api.log" >"$tmp/api.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do grep -q serving "$tmp/api.out" && break; sleep 0.1; done
grep -q serving "$tmp/api.out" || { cat "$tmp/api.out"; fail "the Messages API stand-in did not start"; }
api() { ANTHROPIC_API_KEY=sk-ant-hooks-ci ANTHROPIC_BASE_URL=http://127.0.0.1:$((port + 10)) CLAUDE_CODE_MAX_RETRIES=0 "$@"; }
cd "$repo"
# brainstem hook session-start notes the repository's git status; a file
# changed after it is the session's work.
api timeout 120 "$claude" -p "how do we handle retries on the payment API" </dev/null >"$tmp/turn.out" 2>&1 &
turn=$!
for _ in $(seq 1 600); do ls "$XDG_CACHE_HOME"/brainstem/hooks/*.json >/dev/null 2>&1 && break; sleep 0.1; done
echo 'package psp' >"$repo/client.go"
wait "$turn" || { cat "$tmp/turn.out"; fail "claude -p did not complete a turn"; }
model_saw() { grep -qF -- "$1" "$tmp/api.log" || { head -c 3000 "$tmp/api.log"; fail "the model was never sent: $1"; }; }
model_saw 'payments/decisions/psp-retry-policy-with-exponential-backoff' # session-start's brief
model_saw 'notes of the team brain that match this prompt'                # the prompt's context
model_saw 'payments/decisions/use-idempotency-keys'
model_saw 'this session changed files and wrote nothing to the team brain' # stop's block
blocks=$(grep -c 'this session changed files and wrote nothing' "$tmp/api.log" || true)
echo "model requests: $(wc -l <"$tmp/api.log"), with the stop hook's reason: $blocks"
# Blocked twice, the third request would carry the reason too (in the history).
[ "$blocks" = 1 ] || fail "the stop hook's reason reached the model in $blocks requests: it blocked more than once"

echo "--- /compact"
api timeout 120 "$claude" -p --continue "/compact" </dev/null >"$tmp/compact.out" 2>&1 ||
  { cat "$tmp/compact.out"; fail "claude -p /compact failed"; }
grep -rqs '"event":"compaction"' "$tmp/data/brain/sessions" || fail "pre-compact logged no compaction in the brain"
grep -rls '"event":"compaction"' "$tmp/data/brain/sessions" | sed "s|$tmp/data/brain/||"
cd "$root"

echo "--- brainstem hooks uninstall"
brainstem hooks uninstall
cmp -s "$HOME/.claude/settings.json" "$tmp/settings.before" || fail "uninstall did not give the settings back"
echo "the hooks under Claude Code: ok"
