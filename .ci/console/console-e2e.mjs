// The curators' console in a real headless Chromium (Debian's, driven by
// playwright-core) against a running `brainstem dev`:
//  - the curator's day as alice: sign in at the dev IdP, open the payments
//    inbox, edit a note's slug, hall and title and promote it, find it in
//    search, open it and its history, restore an older version, look at the
//    diff, archive a note, sign out; her cookie replayed afterwards is refused;
//  - bob's view: people-ops pages answer exactly as missing pages, payments
//    shows no promote or archive form, and a forged promote POST (his own
//    CSRF token, from his own page) is refused by the shard's capability check;
//  - the attack notes of gateway/console/testdata/attacks.txt written through
//    the console's form and opened: no script runs (a window flag any
//    injected script would set stays unset, and no CSP violation is
//    reported, both read in the page), no element keeps an event handler,
//    no link keeps another scheme;
//  - forged requests: a cross-site and a same-site form post from another
//    origin, a same-origin post without the CSRF token;
//  - axe-core on every page: no serious or critical violation;
//  - screenshots of the pages for docs/console.md.
//
// Usage: node console-e2e.mjs <console-url> <attacks.txt> <screenshot-dir>
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const [consoleURL, attacksFile, shotDir] = process.argv.slice(2);
if (!consoleURL || !attacksFile || !shotDir) { console.error("usage: console-e2e.mjs <console-url> <attacks.txt> <screenshot-dir>"); process.exit(2); }
const origin = new URL(consoleURL).origin;
fs.mkdirSync(shotDir, { recursive: true });
const t0 = Date.now();
function fail(msg) { console.error("FAIL:", msg); process.exit(1); }
function step(msg) { console.log(`  ${((Date.now() - t0) / 1000).toFixed(1)}s ${msg}`); }
const u = (p) => new URL(p, consoleURL).toString();


const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

// Every page records CSP violations in the page itself, before any of its
// own content runs (an init script is the browser's, not the page's: CSP
// does not apply to it).
async function newUser() {
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  await ctx.addInitScript(() => {
    window.__violations = [];
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__violations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sample || ""}`);
    });
  });
  const page = await ctx.newPage();
  page.consoleErrors = [];
  page.on("console", (m) => { if (m.type() === "error") page.consoleErrors.push(m.text()); });
  return { ctx, page };
}

// checkPage is run on every page: no script ran, no CSP violation, no
// event handler or other-scheme link in the DOM, and axe-core reports no
// serious or critical violation.
const axeChecked = new Set();
async function checkPage(page, label) {
  const state = await page.evaluate(() => ({
    pwned: window.__pwned,
    violations: window.__violations || [],
    handlers: [...document.querySelectorAll("*")].flatMap((e) => [...e.attributes].filter((a) => a.name.toLowerCase().startsWith("on")).map((a) => `${e.tagName} ${a.name}`)),
    badLinks: [...document.querySelectorAll("[href],[src],[action],[formaction]")].map((e) => e.getAttribute("href") || e.getAttribute("src") || e.getAttribute("action") || e.getAttribute("formaction"))
      .filter((v) => { try { return !["http:", "https:", "mailto:"].includes(new URL(v, location.href).protocol); } catch { return true; } }),
    scripts: document.scripts.length,
    frames: document.querySelectorAll("iframe, object, embed, svg, img").length,
  }));
  if (state.pwned !== undefined) fail(`${label}: an injected script ran (window.__pwned = ${state.pwned})`);
  if (state.violations.length) fail(`${label}: CSP violations: ${state.violations.join(" | ")}`);
  if (state.handlers.length) fail(`${label}: event handlers in the DOM: ${state.handlers.join(", ")}`);
  if (state.badLinks.length) fail(`${label}: links to other schemes: ${state.badLinks.join(", ")}`);
  if (state.scripts || state.frames) fail(`${label}: ${state.scripts} scripts and ${state.frames} frames/objects/images/svg in the page`);
  const cspErrors = page.consoleErrors.filter((m) => /Content Security Policy|Refused to/i.test(m));
  if (cspErrors.length) fail(`${label}: the browser refused something: ${cspErrors.join(" | ")}`);
  const key = label.replace(/ .*/, "");
  if (!axeChecked.has(key)) {
    axeChecked.add(key);
    await page.evaluate(axeSource); // DevTools evaluation: not subject to the page's CSP
    const res = await page.evaluate(async () => {
      const r = await window.axe.run(document, { resultTypes: ["violations"] });
      return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
    });
    const bad = res.filter((v) => v.impact === "serious" || v.impact === "critical");
    if (bad.length) fail(`${label}: axe-core: ${JSON.stringify(bad)}`);
    step(`${label}: axe-core ${res.length ? `minor only: ${res.map((v) => `${v.id}(${v.impact})`).join(", ")}` : "clean"}`);
  }
}

async function go(page, p, label, status = 200) {
  const resp = await page.goto(u(p));
  if (resp.status() !== status) fail(`${label}: GET ${p} answered ${resp.status()}, want ${status}: ${(await page.textContent("body")).slice(0, 300)}`);
  await checkPage(page, label);
  return resp;
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(shotDir, `${name}.png`), fullPage: true });
}

// clickAndWait submits a form or follows a link and returns the answer of
// the navigation it causes.
async function clickAndWait(page, selector) {
  const [resp] = await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.click(selector)]);
  return resp;
}

async function signIn(page, email, groups) {
  await page.goto(u("login"));
  await page.waitForSelector("input[name=email]", { timeout: 15000 });
  await page.fill("input[name=email]", email);
  await page.fill("input[name=groups]", groups);
  await Promise.all([page.waitForURL(consoleURL, { timeout: 15000 }), page.click("button[type=submit]")]);
  if (!(await page.textContent("header")).includes(email)) fail(`${email}: the console does not show who is signed in`);
  await checkPage(page, "home");
  step(`${email} signed in at the dev IdP`);
}

// ---------------------------------------------------------------- alice
const alice = await newUser();
const a = alice.page;
await signIn(a, "alice@example.com", "");
const signinCookie = (await alice.ctx.cookies()).find((c) => c.name === "brainstem-console-signin");
const lifetime = signinCookie ? signinCookie.expires - Date.now() / 1000 : 0;
if (!signinCookie || !signinCookie.httpOnly || signinCookie.sameSite !== "Lax" || signinCookie.secure || signinCookie.path !== "/" ||
  lifetime <= 0 || lifetime > 3600 + 60) fail(`the sign-in cookie: ${JSON.stringify(signinCookie)}`);
step(`sign-in cookie: HttpOnly, SameSite=Lax, not Secure on loopback http, expires in ${Math.round(lifetime)} s`);
await shot(a, "home");

await go(a, "w/payments", "wing");
await shot(a, "wing");
await clickAndWait(a, "main a[href$='/w/payments/inbox']");
await checkPage(a, "inbox");
if (!(await a.textContent("main")).includes("Black Friday ledger throughput numbers")) fail("the payments inbox lacks its notes");
await shot(a, "inbox");
await clickAndWait(a, "text=Black Friday ledger throughput numbers");
await checkPage(a, "inboxnote");
await shot(a, "inbox-note");
await a.fill("#title", "Black Friday 2026 ledger throughput");
await a.selectOption("#hall", "sources");
await a.fill("#slug", "black-friday-2026-throughput");
let resp = await clickAndWait(a, "form.promote button[type=submit]");
if (!a.url().endsWith("/console/n/payments/sources/black-friday-2026-throughput") || resp.status() !== 200) fail(`promote landed at ${a.url()} (${resp.status()})`);
await checkPage(a, "note");
if (!(await a.textContent("main")).includes("promoted_by")) fail("the promoted note shows no promoted_by");
step("promoted the inbox note with a new slug, hall and title");

await go(a, "search", "search");
await a.fill("#q", "black friday throughput");
await a.check("input[name=scope][value=all]");
await clickAndWait(a, "form.search button[type=submit]");
await checkPage(a, "search results");
await shot(a, "search");
await clickAndWait(a, "ol.hits a[href$='/n/payments/sources/black-friday-2026-throughput']");
await checkPage(a, "note found");
await shot(a, "note");
await clickAndWait(a, "main a[href$='/history']");
await checkPage(a, "history");
const versions = await a.locator("table.history tbody tr").count();
if (versions < 2) fail(`the promoted note has ${versions} versions in its history`);
await shot(a, "history");
step(`history: ${versions} versions`);
await clickAndWait(a, "table.history a[href*='/diff?from=']");
await checkPage(a, "diff");
await shot(a, "diff");
await a.goBack();
await a.fill("form.restore >> nth=0 >> input[name=reason]", "the inbox wording was better");
resp = await clickAndWait(a, "form.restore >> nth=0 >> button[type=submit]");
if (resp.status() !== 200 || !a.url().includes("/n/payments/sources/black-friday-2026-throughput")) fail(`restore landed at ${a.url()} (${resp.status()})`);
await checkPage(a, "note restored");
await go(a, "n/payments/sources/black-friday-2026-throughput/history", "history restored");
if (!(await a.textContent("table.history")).includes("the inbox wording was better")) fail("the history lacks the restore");
step("restored an older version");

await go(a, "n/payments/facts/chargeback-lifecycle-and-deadlines", "note to archive");
await a.fill("form.archive input[name=reason]", "superseded by the card networks' 2027 rules");
await clickAndWait(a, "form.archive button[type=submit]");
if (!a.url().endsWith("/console/w/payments/archive")) fail(`archive landed at ${a.url()}`);
await checkPage(a, "archive");
if (!(await a.textContent("main")).includes("superseded by the card networks")) fail("the archive does not list the note");
await shot(a, "archive");
await go(a, "n/payments/facts/chargeback-lifecycle-and-deadlines", "archived note", 404);
step("archived a note; it is in the archive and its page is gone");

// The attack notes, written through the form and opened.
const attacks = fs.readFileSync(attacksFile, "utf8").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#")).map((l) => JSON.parse(l));
await go(a, "w/payments/new", "new");
await shot(a, "new");
for (const at of attacks) {
  await go(a, "w/payments/new", "new again");
  await a.fill("#title", at.title);
  await a.fill("#body", at.body);
  await a.fill("#tags", (at.tags || []).join(","));
  await a.selectOption("#hall", "facts");
  await a.fill("#slug", `attack-${at.name}`);
  await a.uncheck("input[name=inbox]");
  resp = await clickAndWait(a, "form.new button[type=submit]");
  if (resp.status() !== 200 || !a.url().endsWith(`/n/payments/facts/attack-${at.name}`)) fail(`attack ${at.name}: landed at ${a.url()} (${resp.status()})`);
  // Hover and focus everything in the note, in case a handler survived.
  for (const el of await a.locator("article.note *").all()) { await el.hover({ force: true, timeout: 1000 }).catch(() => {}); }
  await checkPage(a, `attack ${at.name}`);
  if (at.name === "svg-script") await shot(a, "attack-note");
}
// Two of them through the inbox too: the inbox list, the review page.
for (const at of attacks.filter((x) => x.name === "html-in-title" || x.name === "event-handler-img")) {
  await go(a, "w/payments/new", "new again");
  await a.fill("#title", at.title);
  await a.fill("#body", at.body);
  await a.fill("#slug", `inbox-attack-${at.name}`);
  resp = await clickAndWait(a, "form.new button[type=submit]");
  if (resp.status() !== 200 || !a.url().endsWith(`/w/payments/inbox/inbox-attack-${at.name}`)) fail(`inbox attack ${at.name}: landed at ${a.url()} (${resp.status()})`);
  await checkPage(a, `inboxnote attack ${at.name}`);
}
await go(a, "w/payments/inbox", "inbox with attacks");
await go(a, "w/payments", "wing with attacks");
await go(a, "search?q=window+pwned&scope=all", "search with attacks");
step(`${attacks.length} attack notes rendered with no script running and no CSP violation`);

// Forged requests: a page of another origin posts a promote form.
const target = "w/payments/inbox/2026-11-25-chargeback-evidence-automation";
const attacker = http.createServer((req, res) => {
  res.writeHead(200, { "Content-Type": "text/html" }).end(`<!doctype html><html lang="en"><title>evil</title><body>
<form method="post" action="${u(target + "/promote")}"><input name="hall" value="decisions"><input name="csrf" value="guess"></form>
<script>document.forms[0].submit()</script></body></html>`);
});
await new Promise((r) => attacker.listen(0, "127.0.0.1", r));
const port = attacker.address().port;
for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
  const [r] = await Promise.all([
    a.waitForResponse((x) => x.url().endsWith("/promote"), { timeout: 15000 }),
    a.goto(`http://${host}/`),
  ]);
  await a.waitForLoadState("load");
  if (r.status() !== 403 && r.status() !== 401) fail(`a form posted from http://${host} was answered ${r.status()}`);
  step(`a form posted from http://${host} (${host.startsWith("127") ? "same-site" : "cross-site"}) refused: ${r.status()}`);
}
attacker.close();
// A same-origin form without the CSRF token.
await go(a, target, "inbox note for forgery");
const [noCSRF] = await Promise.all([a.waitForNavigation(), a.evaluate((action) => {
  const f = document.createElement("form");
  f.method = "post"; f.action = action;
  f.innerHTML = '<input name="hall" value="decisions">';
  document.body.append(f); f.submit();
}, u(target + "/promote"))]);
if (noCSRF.status() !== 403) fail(`a form without the CSRF token was answered ${noCSRF.status()}`);
await go(a, "w/payments/inbox", "inbox after forgeries");
if (!(await a.textContent("main")).includes("Automate chargeback evidence packs")) fail("a forged request promoted the note");
step("a same-origin form without the CSRF token refused: 403; the note is still in the inbox");

// Sign out, then replay the cookie in another browser.
const stolen = await alice.ctx.cookies();
await go(a, "", "home before sign-out");
await clickAndWait(a, "form.signout button[type=submit]");
if (!a.url().endsWith("/console/signed-out")) fail(`sign-out landed at ${a.url()}`);
await checkPage(a, "signed-out");
await shot(a, "signed-out");
const thief = await newUser();
await thief.ctx.addCookies(stolen);
resp = await thief.page.goto(u("w/payments/inbox"));
if (resp.status() !== 401 || (await thief.page.textContent("main")).includes("Automate chargeback")) fail(`a cookie replayed after sign-out: ${resp.status()}`);
await checkPage(thief.page, "replayed");
step("signed out; the cookie replayed afterwards is refused: 401");

// ---------------------------------------------------------------- bob
const bob = await newUser();
const b = bob.page;
await signIn(b, "bob@example.com", "");
for (const [hidden, missing] of [["w/people-ops", "w/no-such-wing"], ["w/people-ops/inbox", "w/no-such-wing/inbox"],
  ["n/people-ops/facts/leave-policy-summary", "n/payments/facts/no-such-note"],
  ["w/people-ops/inbox/2026-11-21-on-call-swap-etiquette", "w/payments/inbox/no-such-note"]]) {
  const r1 = await b.goto(u(hidden));
  const h1 = await b.content();
  await checkPage(b, "not-found");
  const r2 = await b.goto(u(missing));
  const h2 = await b.content();
  if (r1.status() !== 404 || r2.status() !== 404 || h1 !== h2) fail(`bob: ${hidden} (${r1.status()}) is not answered as ${missing} (${r2.status()})`);
}
await shot(b, "not-found");
step("bob: people-ops pages are answered exactly as missing pages");
await go(b, "w/payments/inbox/2026-11-18-psp-timeout-tuning", "inboxnote bob");
if (await b.locator("form.promote, form.archive, button:has-text('Promote')").count()) fail("bob sees promote or archive forms in payments");
await shot(b, "inbox-note-reader");
const [forged] = await Promise.all([b.waitForNavigation(), b.evaluate((action) => {
  const f = document.createElement("form");
  f.method = "post"; f.action = action;
  f.innerHTML = `<input name="csrf" value="${document.querySelector("input[name=csrf]").value}"><input name="hall" value="decisions">`;
  document.body.append(f); f.submit();
}, u("w/payments/inbox/2026-11-18-psp-timeout-tuning/promote"))]);
const forgedText = await b.textContent("main");
if (forged.status() !== 403 || !/forbidden/i.test(forgedText) || !/curate/i.test(forgedText)) fail(`bob's forged promote: ${forged.status()}: ${forgedText.slice(0, 300)}`);
await checkPage(b, "refused");
step(`bob: no promote form; a forged promote POST is refused by the shard: ${forgedText.replace(/\s+/g, " ").slice(0, 160)}`);

await browser.close();

console.log(`console e2e: ok in ${((Date.now() - t0) / 1000).toFixed(1)}s (${axeChecked.size} kinds of page checked with axe-core)`);
process.exit(0);
