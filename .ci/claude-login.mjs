// The Claude Code CLI signs in to a running `brainstem dev` through the
// gateway's authorization server: `claude mcp login --no-browser` (under a
// pty, which it needs) prints the authorization URL; a headless Chromium
// allows the gateway's consent page and signs in at the development IdP;
// the CLI receives the code on its loopback callback and must exit 0.
// Usage: CLAUDE=<binary> node claude-login.mjs <server-name> <email>
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const [name, email] = process.argv.slice(2);
const clean = (s) => s.replace(/\x1b\][^\x07]*\x07/g, "").replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "");
const login = spawn("script", ["-qfec", `${process.env.CLAUDE} mcp login ${name} --no-browser`, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] });
let out = "";
login.stdout.on("data", (d) => { out += d; });
login.stderr.on("data", (d) => { out += d; });
const exited = new Promise((r) => login.on("exit", (code) => r(code)));
function fail(msg) {
  console.error("FAIL (claude mcp login):", msg, "\n" + clean(out).split("\n").map((l) => "  | " + l).join("\n"));
  login.kill();
  process.exit(1);
}
let authURL;
for (let i = 0; i < 300 && !authURL; i++) {
  // Only a whole line: output arrives in chunks and may end mid-URL.
  const m = clean(out).match(/(https?:\/\/\S+\/authorize\?\S+)\n/);
  if (m) authURL = m[1];
  else await new Promise((r) => setTimeout(r, 100));
}
if (!authURL) fail("no authorization URL within 30 s");
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "brainstem-chromium-"));
const ctx = await chromium.launchPersistentContext(dir, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const page = await ctx.newPage();
await page.goto(authURL);
const body = (await page.textContent("body")) || "";
if (!/Allow .* to use your team brain/.test(body)) fail(`no consent page at ${page.url()}: ${body.replace(/\s+/g, " ").slice(0, 400)}`);
await page.click("button[value=allow]");
await page.waitForSelector("input[name=email]", { timeout: 15000 });
await page.fill("input[name=email]", email);
await page.click("button[type=submit]");
const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 30000))]);
await ctx.close();
fs.rmSync(dir, { recursive: true, force: true });
if (code !== 0) fail(`exit ${code}`);
console.log("claude mcp login: ok");
process.exit(0);
