// The device flow (RFC 8628) end to end against a running `brainstem dev`:
// `brainstem login --device` runs as a process (the client on a computer
// without a browser) and prints a URL and a code; a real headless Chromium
// (the user's browser on another computer) opens the URL, first types a
// wrong code (refused), then the printed one, checks that the approval
// page names the client and the computer, approves, and signs in at the
// development IdP; the login process's polls then receive the tokens.
// Finally `brainstem token` prints the stored access token and the
// official TypeScript SDK lists the tools and calls brain_wings with it.
//
// Usage: node device-e2e.mjs <mcp-url> <brainstem-binary> <config-dir>
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { chromium } from "playwright-core";

const [mcpURL, bin, configDir] = process.argv.slice(2);
const t0 = Date.now();
function fail(msg) { console.error("FAIL (device):", msg); process.exit(1); }
function step(msg) { console.log(`  ${((Date.now() - t0) / 1000).toFixed(1)}s ${msg}`); }
const env = { ...process.env, XDG_CONFIG_HOME: configDir, HOME: configDir };

// The client: brainstem login --device, its output read as it comes.
const login = spawn(bin, ["login", "--device", mcpURL], { env, stdio: ["ignore", "pipe", "pipe"] });
let out = "";
login.stdout.on("data", (d) => { out += d; });
login.stderr.on("data", (d) => { out += d; });
const exited = new Promise((resolve) => login.on("exit", (code) => resolve(code)));
const printed = await new Promise((resolve) => {
  const iv = setInterval(() => {
    const code = out.match(/^ {2}([B-Z]{4}-[B-Z]{4})$/m);
    const url = out.match(/open\n\n {2}(\S+)\n/);
    if (code && url && out.includes("Waiting up to")) { clearInterval(iv); resolve({ code: code[1], url: url[1] }); }
  }, 50);
  setTimeout(() => { clearInterval(iv); resolve(null); }, 15000);
});
if (!printed) fail(`brainstem login --device printed no URL and code:\n${out}`);
if (!out.includes(`${printed.url}?user_code=${printed.code}`)) fail(`no verification_uri_complete printed:\n${out}`);
step(`brainstem login --device printed ${printed.url} and the code ${printed.code}`);

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

  // A wrong code first: refused, and the form is shown again.
  await page.goto(printed.url);
  await page.fill("input[name=user_code]", "BCDF-GHJK");
  await page.click("button[type=submit]");
  await page.waitForLoadState();
  let body = await page.textContent("body");
  if (!body.includes("No sign-in request has this code")) fail(`a wrong code was not refused: ${body.slice(0, 300)}`);
  step("a wrong code typed into the page is refused");

  // The printed code, typed as a user might (lower case, no dash).
  await page.fill("input[name=user_code]", printed.code.replace("-", "").toLowerCase());
  await page.click("button[type=submit]");
  await page.waitForSelector("button[value=allow]", { timeout: 15000 }).catch(async (e) => {
    fail(`no approval page (${e.message.split("\n")[0]}): ${(await page.textContent("body")).slice(0, 300)}; console: ${blocked.join(" | ")}`);
  });
  body = await page.textContent("body");
  for (const want of ["Brainstem CLI (brainstem login --device)", `host ${os.hostname()}`, "127.0.0.1", printed.code, "started this sign-in yourself"]) {
    if (!body.includes(want)) fail(`the approval page does not show ${JSON.stringify(want)}: ${body.slice(0, 600)}`);
  }
  step("approval page names the client, the computer (host, address) and the code; allowing");
  await page.click("button[value=allow]");
  await page.waitForSelector("input[name=email]", { timeout: 15000 }).catch(async (e) => {
    fail(`no IdP login form after the approval (${e.message.split("\n")[0]}); at ${page.url()}: ${(await page.textContent("body")).slice(0, 300)}; console: ${blocked.join(" | ")}`);
  });
  step("IdP login form shown; signing in as carol@example.com (groups people-team)");
  await page.fill("input[name=email]", "carol@example.com");
  await page.fill("input[name=groups]", "people-team");
  await page.click("button[type=submit]");
  await page.waitForFunction(() => document.body && document.body.innerText.includes("Approved"), null, { timeout: 15000 }).catch(async () => {
    fail(`no approval result page: ${(await page.textContent("body")).slice(0, 300)}`);
  });
  if (blocked.length) fail(`the browser blocked a step: ${blocked.join(" | ")}`);
  step("the browser shows the approval");

  // The code is single use: typed again in a fresh page, it finds nothing.
  const again = await ctx.newPage();
  await again.goto(printed.url);
  await again.fill("input[name=user_code]", printed.code);
  await again.click("button[type=submit]");
  await again.waitForLoadState();
  if (!(await again.textContent("body")).includes("No sign-in request has this code")) fail("a used code was accepted again");
  step("the used code typed again is refused");
} finally {
  await ctx.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 60000))]);
if (code !== 0) { login.kill(); fail(`brainstem login --device exited ${code}:\n${out}`); }
if (!out.includes(`Signed in to ${mcpURL} as carol@example.com.`)) fail(`login output:\n${out}`);
step("brainstem login --device received the tokens and stored them");

const token = execFileSync(bin, ["token", mcpURL], { env }).toString().trim();
const client = new Client({ name: "brainstem-ci-device", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(mcpURL), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
const { tools } = await client.listTools();
if (!tools.some((t) => t.name === "brain_query")) fail("tools/list lacks brain_query");
const res = await client.callTool({ name: "brain_wings", arguments: {} });
if (res.isError) fail(`brain_wings: ${res.content?.[0]?.text}`);
const wings = JSON.parse(res.content[0].text);
const people = wings.wings.find((w) => w.wing === "people-ops");
if (!people || !people.capabilities.includes("curate")) fail(`carol (group people-team) should curate people-ops: ${JSON.stringify(wings)}`);
step(`the stored token works at /mcp: ${tools.length} tools; brain_wings: ${wings.wings.map((w) => w.wing).join(", ")}`);
await client.close();
console.log(`device flow e2e: ok in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
process.exit(0);
