#!/usr/bin/env bash
# Sign-in with nothing but the URL, end to end, against `brainstem dev`, with
# real clients and a real browser (Debian's Chromium driven by playwright-core):
#  - the official TypeScript SDK's OAuth client, registering dynamically and
#    with a client ID metadata document (served locally over https, trusted by
#    the gateway through SSL_CERT_FILE);
#  - enterprise-managed authorization: an ID-JAG of the development IdP
#    exchanged at /token by the SDK's OAuth client (idjag-e2e.mjs);
#  - `brainstem login --device` (RFC 8628): the code it prints is typed into
#    the gateway's verification page in Chromium, the dev IdP login follows,
#    and the stored token lists the tools and calls brain_wings;
#  - the Claude Code CLI from npm: a server added with only its URL is
#    reported as needing authentication (not as a failure), and
#    `claude mcp login` completes through the browser, after which the server
#    is connected.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi
npmdir=.ci/node_modules-signin
if [ ! -d "$npmdir/node_modules/playwright-core" ] || [ ! -d "$npmdir/node_modules/@modelcontextprotocol/sdk" ]; then
  mkdir -p "$npmdir"
  npm install --prefix "$npmdir" --no-audit --no-fund --loglevel=error @modelcontextprotocol/sdk@1.32.2 playwright-core@1.65.1 >/dev/null
fi
claude=$(bash .ci/claude-code.sh) # the pinned Claude Code CLI, cached under ~/.cache/brainstem
cp .ci/signin-e2e.mjs .ci/device-e2e.mjs .ci/idjag-e2e.mjs .ci/claude-login.mjs .ci/metadata-doc.mjs "$npmdir/"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# A certificate for the local metadata document servers; the gateway trusts it.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null

go build -o "$tmp/brainstem" ./cmd/brainstem
. .ci/startdev.sh
SSL_CERT_FILE=$tmp/cert.pem start_dev "$tmp/brainstem" "$tmp/dev.out" --data "$tmp/data" || exit 1
pids+=("$dev_pid")
url=$(awk '/^  MCP URL:/ {print $3}' "$tmp/dev.out")
token=$(awk '/^  Token:/ {print $2}' "$tmp/dev.out")
idp=$(awk '/^Identity provider:/ {print $3}' "$tmp/dev.out")
echo "dev is up at $url"

echo "--- TypeScript SDK OAuth client, dynamic registration"
node "$npmdir/signin-e2e.mjs" "$url" dcr
echo "--- TypeScript SDK OAuth client, client ID metadata document"
node "$npmdir/signin-e2e.mjs" "$url" cimd "https://127.0.0.1:$((port + 10))/client.json" "$tmp/cert.pem" "$tmp/key.pem"

echo "--- brainstem login --device, the code typed into the page in Chromium"
node "$npmdir/device-e2e.mjs" "$url" "$tmp/brainstem" "$tmp/device-config"

echo "--- enterprise-managed authorization (ID-JAG), the TypeScript SDK's OAuth client with the JWT bearer grant"
node "$npmdir/idjag-e2e.mjs" "$url" "$idp"

echo "--- Claude Code CLI $("$claude" --version 2>/dev/null)"
mkdir -p "$tmp/home" "$tmp/claude" "$tmp/proj"
export HOME=$tmp/home CLAUDE_CONFIG_DIR=$tmp/claude CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1
cd "$tmp/proj"
"$claude" mcp add --transport http brainstem "$url" </dev/null >/dev/null
"$claude" mcp add --transport http brainstem-token "$url" --header "Authorization: Bearer $token" </dev/null >/dev/null
list=$("$claude" mcp list </dev/null 2>&1)
echo "$list" | grep '^brainstem'
# `claude mcp list` exits 0 whatever the status: read its lines.
grep -q '^brainstem: .*Needs authentication' <<<"$list" || { echo "FAIL: a server added with only its URL should need authentication"; exit 1; }
grep -q '^brainstem-token: .*Connected' <<<"$list" || { echo "FAIL: the server with a token header should be connected"; exit 1; }

# Claude Code identifies itself with its client ID metadata document at
# claude.ai, which the gateway cannot fetch without internet: point it at a
# local copy for the sign-in.
docport=$((port + 11))
node "$root/$npmdir/metadata-doc.mjs" "https://127.0.0.1:$docport/claude.json" "$tmp/cert.pem" "$tmp/key.pem" \
  "Claude Code (brainstem)" http://localhost/callback http://127.0.0.1/callback >"$tmp/doc.out" 2>&1 &
pids+=($!)
# Node may start slowly on a loaded machine: wait for it, and say so if it never serves.
for _ in $(seq 1 600); do grep -q serving "$tmp/doc.out" && break; sleep 0.1; done
grep -q serving "$tmp/doc.out" || { echo "FAIL: the metadata document server did not start:"; cat "$tmp/doc.out"; exit 1; }
MCP_OAUTH_CLIENT_METADATA_URL=https://127.0.0.1:$docport/claude.json CLAUDE=$claude \
  node "$root/$npmdir/claude-login.mjs" brainstem dave@example.com
list=$("$claude" mcp list </dev/null 2>&1)
echo "$list" | grep '^brainstem:'
grep -q '^brainstem: .*Connected' <<<"$list" || { echo "FAIL: after claude mcp login the server should be connected"; exit 1; }
echo "sign-in end to end: ok"
