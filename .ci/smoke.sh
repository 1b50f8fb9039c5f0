#!/usr/bin/env bash
# Starts `brainstem dev`, lists the tools and runs brain_query through a real
# npm MCP client (the Inspector CLI, pinned), then stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/devstack.sh
cp .ci/sdk-e2e.mjs "$sdkdir/sdk-e2e.mjs"
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
