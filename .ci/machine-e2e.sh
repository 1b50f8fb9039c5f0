#!/usr/bin/env bash
# A CI job signing in to Brainstem as a service account (issue 21, machine
# identities) with nothing but curl, jq and openssl: it gets an access token
# with the client credentials grant, lists the tools and writes one inbox note
# to a wing its account may write, then prints the note's path.
#
#   BRAINSTEM_URL            the gateway, e.g. https://brain.acme.com
#   BRAINSTEM_CLIENT_ID      the service account's id (oauth.service_accounts[].id)
#   BRAINSTEM_CLIENT_SECRET  its client secret                   (client_secret_post), or
#   BRAINSTEM_CLIENT_KEY     a PEM Ed25519 private key file      (private_key_jwt)
#   BRAINSTEM_WING           the wing to write to
#
# e2e/machines_test.go (TestMachineScript) runs it against the real gateway
# on loopback; docs/sign-in.md ("Machine identities") explains each step.
set -euo pipefail
: "${BRAINSTEM_URL:?}" "${BRAINSTEM_CLIENT_ID:?}" "${BRAINSTEM_WING:?}"
base=${BRAINSTEM_URL%/}
mcp="$base/mcp"

# The token endpoint, from the authorization server's metadata.
token_endpoint=$(curl -fsS "$base/.well-known/oauth-authorization-server" | jq -er .token_endpoint)

b64url() { basenc --base64url -w0 | tr -d '='; }
if [ -n "${BRAINSTEM_CLIENT_SECRET:-}" ]; then
  auth=(--data-urlencode "client_id=$BRAINSTEM_CLIENT_ID" --data-urlencode "client_secret=$BRAINSTEM_CLIENT_SECRET")
else
  : "${BRAINSTEM_CLIENT_KEY:?set BRAINSTEM_CLIENT_SECRET or BRAINSTEM_CLIENT_KEY}"
  # A client assertion (RFC 7523): iss = sub = the account, aud = the token
  # endpoint, a short exp and a fresh jti (each jti is accepted once).
  now=$(date +%s)
  header=$(printf '{"alg":"EdDSA","typ":"JWT"}' | b64url)
  claims=$(jq -cn --arg id "$BRAINSTEM_CLIENT_ID" --arg aud "$token_endpoint" --argjson now "$now" \
    --arg jti "$(openssl rand -hex 16)" '{iss: $id, sub: $id, aud: $aud, iat: $now, exp: ($now + 120), jti: $jti}' | b64url)
  signed=$(printf '%s.%s' "$header" "$claims")
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  printf '%s' "$signed" >"$tmp/in"
  openssl pkeyutl -sign -rawin -inkey "$BRAINSTEM_CLIENT_KEY" -in "$tmp/in" -out "$tmp/sig"
  auth=(--data-urlencode "client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    --data-urlencode "client_assertion=$signed.$(b64url <"$tmp/sig")")
fi
token=$(curl -fsS "$token_endpoint" -d grant_type=client_credentials --data-urlencode "resource=$mcp" "${auth[@]}" |
  jq -er .access_token)

# MCP over Streamable HTTP, stateless revision 2026-07-28: every request
# carries the protocol version and the client's description in _meta.
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"machine-e2e.sh","version":"1"}}'
rpc() { # method, name ("" for none), params JSON without braces
  local extra=()
  [ -n "$2" ] && extra=(-H "Mcp-Name: $2")
  curl -fsS "$mcp" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
    -H "Mcp-Method: $1" "${extra[@]}" -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":{$meta${3:+,$3}}}"
}
rpc tools/list "" "" | jq -e '.result.tools | length > 0' >/dev/null
note=$(jq -cn --arg wing "$BRAINSTEM_WING" --arg title "CI run $(date -u +%Y-%m-%dT%H:%M:%SZ) $(openssl rand -hex 4)" \
  '{name: "brain_write", arguments: {wing: $wing, inbox: true, title: $title, body: "Written by a CI job.\n"}}')
answer=$(rpc tools/call brain_write "${note:1:${#note}-2}")
if [ "$(jq -r '.result.isError // false' <<<"$answer")" = true ] || ! jq -e .result >/dev/null <<<"$answer"; then
  echo "machine-e2e.sh: brain_write failed: $answer" >&2
  exit 1
fi
jq -r '.result.content[0].text | fromjson | .path' <<<"$answer"
