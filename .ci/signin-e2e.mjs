// Signs in to a running `brainstem dev` with nothing but the MCP URL, as an
// MCP client does: the official TypeScript SDK's OAuth client
// (StreamableHTTPClientTransport with an authProvider) discovers the
// gateway's authorization server, registers (dynamically, or with a client
// ID metadata document), and sends a real headless Chromium through the
// gateway's consent page and the development IdP's login form; then it lists
// the tools, calls brain_wings, forces a refresh, and calls again.
//
// Usage: node signin-e2e.mjs <mcp-url> dcr
//        node signin-e2e.mjs <mcp-url> cimd <https-document-url> <cert.pem> <key.pem>
// In cimd mode it serves the client metadata document itself, over https
// with the given certificate (which the gateway must trust: SSL_CERT_FILE).
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { chromium } from "playwright-core";

const [mcpURL, mode, docURL, certFile, keyFile] = process.argv.slice(2);
const t0 = Date.now();
function fail(msg) { console.error(`FAIL (${mode}):`, msg); process.exit(1); }
function step(msg) { console.log(`  ${((Date.now() - t0) / 1000).toFixed(1)}s ${msg}`); }

// The client's loopback redirect listener: it takes exactly one answer.
let onAnswer;
const answered = new Promise((resolve) => { onAnswer = resolve; });
const redirect = http.createServer((req, res) => {
  const u = new URL(req.url, "http://127.0.0.1");
  if (u.pathname !== "/callback") { res.writeHead(404).end(); return; }
  res.writeHead(200, { "Content-Type": "text/plain" }).end("Signed in; you can close this window.\n");
  onAnswer(u.searchParams);
});
await new Promise((r) => redirect.listen(0, "127.0.0.1", r));
const redirectUrl = `http://127.0.0.1:${redirect.address().port}/callback`;

// In cimd mode, the client's metadata document, at its https URL.
let docServer;
if (mode === "cimd") {
  docServer = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({
      client_id: docURL, client_name: "brainstem CI (TypeScript SDK, metadata document)",
      redirect_uris: ["http://127.0.0.1/callback"], token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"],
    }));
  });
  await new Promise((r) => docServer.listen(Number(new URL(docURL).port), "127.0.0.1", r));
} else if (mode !== "dcr") {
  fail("mode must be dcr or cimd");
}

class Provider {
  constructor() { this.saved = {}; this.refreshes = 0; }
  get redirectUrl() { return redirectUrl; }
  get clientMetadataUrl() { return mode === "cimd" ? docURL : undefined; }
  get clientMetadata() {
    return { client_name: "brainstem CI (TypeScript SDK)", redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(c) { this.saved.client = c; }
  tokens() { return this.saved.tokens; }
  saveTokens(t) {
    if (this.saved.tokens?.refresh_token && t.refresh_token !== this.saved.tokens.refresh_token) this.refreshes++;
    this.saved.tokens = t;
  }
  redirectToAuthorization(url) { this.authURL = url; }
  saveCodeVerifier(v) { this.saved.verifier = v; }
  codeVerifier() { return this.saved.verifier; }
}

// signIn drives Chromium from the authorization URL to the client's
// redirect: consent, then the development IdP's login form.
async function signIn(authURL, email, groups) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "brainstem-chromium-"));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = await ctx.newPage();
    const blocked = [];
    page.on("console", (m) => { if (/Content Security Policy|violates|blocked/i.test(m.text())) blocked.push(m.text()); });
    await page.goto(authURL.toString());
    const body = await page.textContent("body");
    if (!/Allow .* to use your team brain/.test(body)) fail(`no consent page: ${body.slice(0, 300)}`);
    if (mode === "dcr" && !body.includes("registered itself")) fail("the consent page does not warn of a self-registered client");
    if (mode === "cimd" && !body.includes(new URL(docURL).host)) fail("the consent page does not name the metadata document's host");
    step("consent page shown; allowing");
    await page.click("button[value=allow]");
    await page.waitForSelector("input[name=email]", { timeout: 15000 }).catch(async (e) => {
      fail(`no IdP login form after consent (${e.message.split("\n")[0]}); at ${page.url()}: ${(await page.textContent("body")).slice(0, 300)}; console: ${blocked.join(" | ")}`);
    });
    step(`IdP login form shown; signing in as ${email} (groups ${groups})`);
    await page.fill("input[name=email]", email);
    await page.fill("input[name=groups]", groups);
    await page.click("button[type=submit]");
    const params = await Promise.race([answered, new Promise((_, r) => setTimeout(() => r(new Error("no answer at the redirect URI within 15 s")), 15000))]);
    if (blocked.length) fail(`the browser blocked a step: ${blocked.join(" | ")}`);
    if (params.get("error")) fail(`authorization error: ${params.get("error")}: ${params.get("error_description")}`);
    step(`code received (iss=${params.get("iss")})`);
    return params.get("code");
  } finally {
    await ctx.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const provider = new Provider();
async function connect() {
  const transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
  const client = new Client({ name: "brainstem-ci-signin", version: "1.0.0" });
  try {
    await client.connect(transport);
    return client;
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    if (!provider.authURL) fail("unauthorized without an authorization URL");
    step(`401 → authorization server found; client ${mode === "cimd" ? "by metadata document" : "registered dynamically"}`);
    const code = await signIn(provider.authURL, "carol@example.com", "people-team");
    await transport.finishAuth(code);
    step("tokens received");
    const again = new Client({ name: "brainstem-ci-signin", version: "1.0.0" });
    await again.connect(new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider }));
    return again;
  }
}

async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content?.[0]?.text ?? "";
  if (res.isError) fail(`${name}: ${text}`);
  return JSON.parse(text);
}

const client = await connect();
if (mode === "cimd" && provider.saved.client?.client_id !== docURL) fail(`client id ${provider.saved.client?.client_id}, want the document URL`);
const { tools } = await client.listTools();
if (!tools.some((t) => t.name === "brain_query")) fail("tools/list lacks brain_query");
const wings = await call(client, "brain_wings", {});
const people = wings.wings.find((w) => w.wing === "people-ops");
if (!people || !people.capabilities.includes("curate")) fail(`carol (group people-team) should curate people-ops: ${JSON.stringify(wings)}`);
step(`tools/list: ${tools.length} tools; brain_wings: ${wings.wings.map((w) => w.wing).join(", ")}`);

// Refresh: spoil the access token so the next call is refused, which makes
// the SDK redeem the refresh token; then call again.
const before = provider.saved.tokens.refresh_token;
provider.saved.tokens = { ...provider.saved.tokens, access_token: "spoiled" };
const q = await call(client, "brain_query", { query: "incident", limit: 3 });
if (provider.refreshes !== 1 || provider.saved.tokens.refresh_token === before) fail("the refresh token was not rotated by a refresh");
step(`refreshed; brain_query after refresh: ${q.hits.length} hits`);
await client.close();
redirect.close();
docServer?.close();
console.log(`signin e2e (${mode}): ok in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
process.exit(0);
