// Enterprise-managed authorization (ID-JAG) end to end against a running
// `brainstem dev`, with the official TypeScript SDK as the client.
//
// The SDK (@modelcontextprotocol/sdk 1.32.2) has no ID-JAG client: no
// token exchange at the IdP and no provider for the identity assertion
// grant. What it has is the generic hook of its OAuth client,
// OAuthClientProvider.prepareTokenRequest(), which a non-interactive
// provider fills with any grant. This script is such a provider: it gets
// the ID-JAG from the development IdP (POST /dev/id-jag, the IdP's token
// exchange without the client's secret), and the SDK does the rest:
// protected-resource metadata, authorization server discovery, the JWT
// bearer grant at /token, and the MCP session with the token. A replay of
// the same assertion is then refused.
//
// Usage: node idjag-e2e.mjs <mcp-url> <idp-url>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";

const [mcpURL, idpURL] = process.argv.slice(2);
const gateway = mcpURL.replace(/\/mcp$/, "");
const t0 = Date.now();
function fail(msg) { console.error("FAIL (id-jag):", msg); process.exit(1); }
function step(msg) { console.log(`  ${((Date.now() - t0) / 1000).toFixed(1)}s ${msg}`); }

const CLIENT_ID = "brainstem-agent"; // devidp.DefaultAssertionClientID, trusted by oauth.enterprise
const res = await fetch(`${idpURL}/dev/id-jag`, {
  method: "POST",
  body: new URLSearchParams({ email: "alice@example.com", audience: gateway, resource: mcpURL, scope: "mcp" }),
});
if (!res.ok) fail(`the IdP gave no ID-JAG: ${res.status} ${await res.text()}`);
const { id_jag: idJag } = await res.json();
const header = JSON.parse(Buffer.from(idJag.split(".")[0], "base64url"));
if (header.typ !== "oauth-id-jag+jwt") fail(`the ID-JAG's typ is ${header.typ}`);
step("the development IdP issued an ID-JAG for alice@example.com");

// A non-interactive provider: no redirect URL, a public client id, and
// the JWT bearer grant with the ID-JAG.
class IDJAGProvider {
  constructor(assertion) { this.assertion = assertion; }
  get redirectUrl() { return undefined; }
  get clientMetadata() { return { client_name: "idjag-e2e", redirect_uris: [], grant_types: ["urn:ietf:params:oauth:grant-type:jwt-bearer"], token_endpoint_auth_method: "none", scope: "mcp" }; }
  clientInformation() { return { client_id: CLIENT_ID }; }
  saveClientInformation() {}
  tokens() { return this._tokens; }
  saveTokens(t) { this._tokens = t; }
  redirectToAuthorization() { throw new Error("no browser: enterprise-managed authorization has no consent"); }
  saveCodeVerifier() {}
  codeVerifier() { throw new Error("no PKCE in the JWT bearer grant"); }
  prepareTokenRequest(scope) {
    const p = new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion: this.assertion });
    if (scope) p.set("scope", scope);
    return p;
  }
}
const provider = new IDJAGProvider(idJag);
const outcome = await auth(provider, { serverUrl: mcpURL }).catch((e) => fail(`the SDK's auth(): ${e.message}`));
if (outcome !== "AUTHORIZED" || !provider.tokens()?.access_token) fail(`auth() returned ${outcome}`);
if (provider.tokens().refresh_token) fail("a refresh token was issued for an ID-JAG");
step("the SDK discovered the gateway's authorization server and exchanged the ID-JAG (no browser, no consent)");

const client = new Client({ name: "brainstem-ci-idjag", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider }));
const { tools } = await client.listTools();
if (!tools.some((t) => t.name === "brain_query")) fail("tools/list lacks brain_query");
const w = await client.callTool({ name: "brain_wings", arguments: {} });
if (w.isError) fail(`brain_wings: ${w.content?.[0]?.text}`);
const wings = JSON.parse(w.content[0].text);
if (!wings.wings.some((x) => x.wing === "payments")) fail(`alice should see payments: ${JSON.stringify(wings)}`);
step(`the token works at /mcp: ${tools.length} tools; brain_wings: ${wings.wings.map((x) => x.wing).join(", ")}`);
await client.close();

// The same assertion again: refused (jti), and the SDK reports it.
const again = new IDJAGProvider(idJag);
const replay = await auth(again, { serverUrl: mcpURL }).then(() => "accepted", (e) => e.message);
if (replay === "accepted" || !/already used/.test(replay)) fail(`a replayed ID-JAG: ${replay}`);
step(`a replay of the same ID-JAG is refused: ${replay}`);
console.log(`id-jag e2e: ok in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
process.exit(0);
