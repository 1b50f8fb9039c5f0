#!/usr/bin/env bash
# Resources, prompts and change notifications through a running `brainstem
# dev`, driven by real npm clients: the TypeScript SDK (2025-11-25 and
# 2025-06-18, .ci/resources-e2e.mjs) and the Inspector CLI (its legacy and
# modern eras: 2025-11-25 and 2026-07-28). bob must never see a people-ops
# resource. About 10 s warm.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/devstack.sh
cp .ci/resources-e2e.mjs "$sdkdir/resources-e2e.mjs"
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
