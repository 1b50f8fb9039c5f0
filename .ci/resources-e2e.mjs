// Drives a running `brainstem dev` with the official TypeScript MCP SDK:
// resources (list every page, read, the template), prompts (list, get, a
// refused argument) and change notifications (list_changed, and
// resources/updated of a subscribed note), as alice and as bob, on one
// protocol revision (the SDK speaks 2025-11-25 and older; 2025-06-18 is
// pinned by rewriting the initialize request's protocolVersion).
// Usage: node resources-e2e.mjs <mcp-url> <alice-token> <bob-token> <protocol-version>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, aliceToken, bobToken, version] = process.argv.slice(2);
function fail(msg) { console.error(`FAIL (${version}):`, msg); process.exit(1); }

// pinVersion is a fetch that asks initialize for `version`.
function pinVersion(input, init) {
  if (init?.body && typeof init.body === "string" && init.body.includes('"initialize"')) {
    const msg = JSON.parse(init.body);
    if (msg.method === "initialize") {
      msg.params.protocolVersion = version;
      init = { ...init, body: JSON.stringify(msg) };
    }
  }
  return fetch(input, init);
}

async function connect(token) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } }, fetch: pinVersion,
  });
  const client = new Client({ name: "brainstem-ci-resources", version: "1.0.0" });
  await client.connect(transport);
  if (transport.protocolVersion !== version) fail(`negotiated ${transport.protocolVersion}, not ${version}`);
  return client;
}

async function listAll(client) {
  const uris = [];
  let cursor, pages = 0;
  do {
    const res = await client.listResources(cursor ? { cursor } : {});
    pages++;
    for (const r of res.resources) {
      if (r.mimeType !== "text/markdown" || !r.title) fail(`resource ${JSON.stringify(r)}`);
      uris.push(r.uri);
    }
    cursor = res.nextCursor;
  } while (cursor && pages < 100);
  return { uris, pages };
}

const alice = await connect(aliceToken);
const bob = await connect(bobToken);
const caps = alice.getServerCapabilities();
if (!caps.resources?.listChanged || !caps.resources?.subscribe || !caps.prompts) fail(`capabilities ${JSON.stringify(caps)}`);

// Resources: alice every wing, bob never people-ops.
const a = await listAll(alice);
const b = await listAll(bob);
if (!a.uris.some((u) => u.startsWith("brain://people-ops/"))) fail("alice lists no people-ops note");
if (b.uris.some((u) => u.startsWith("brain://people-ops/"))) fail(`bob lists people-ops: ${b.uris.filter((u) => u.includes("people-ops"))}`);
if (!b.uris.some((u) => u.startsWith("brain://payments/")) || !b.uris.some((u) => u.startsWith("brain://platform/"))) fail("bob lacks payments or platform");

const secret = a.uris.find((u) => u.startsWith("brain://people-ops/"));
const read = await alice.readResource({ uri: secret });
if (read.contents.length !== 1 || !read.contents[0].text || read.contents[0].mimeType !== "text/markdown") fail(`read ${secret}: ${JSON.stringify(read)}`);
const errOf = async (p) => { try { await p; return null; } catch (e) { return e; } };
const hidden = await errOf(bob.readResource({ uri: secret }));
const missing = await errOf(bob.readResource({ uri: "brain://payments/facts/no-such-note" }));
if (!hidden || !missing || hidden.code !== missing.code ||
  hidden.message.replace(secret, "U") !== missing.message.replace("brain://payments/facts/no-such-note", "U")) {
  fail(`bob can tell a people-ops note (${hidden?.code} ${hidden?.message}) from a missing one (${missing?.code} ${missing?.message})`);
}
const bad = await errOf(alice.readResource({ uri: "brain://payments/../people-ops/facts/x" }));
if (!bad || bad.code !== -32602) fail(`a bad URI: ${bad?.code} ${bad?.message}`);
const { resourceTemplates } = await alice.listResourceTemplates();
if (resourceTemplates.length !== 1 || resourceTemplates[0].uriTemplate !== "brain://{wing}/{hall}/{slug}") fail(`templates ${JSON.stringify(resourceTemplates)}`);

// Prompts.
const names = async (c) => (await c.listPrompts()).prompts.map((p) => p.name).sort().join(",");
if (await names(alice) !== "capture_learnings,review_inbox,search_before_task") fail(`alice's prompts: ${await names(alice)}`);
if (await names(bob) !== "capture_learnings,search_before_task") fail(`bob's prompts: ${await names(bob)}`);
const p = await alice.getPrompt({ name: "review_inbox", arguments: { wing: "payments" } });
if (!p.messages[0].content.text.includes('brain_pending with {"wing": "payments"}')) fail(`review_inbox: ${JSON.stringify(p)}`);
const s = await bob.getPrompt({ name: "search_before_task", arguments: { task: "rotate the webhook certificate" } });
if (!s.messages[0].content.text.includes('"rotate the webhook certificate"')) fail(`search_before_task: ${JSON.stringify(s)}`);
const refused = await errOf(alice.getPrompt({ name: "review_inbox", arguments: { wing: "payments", limit: "7" } }));
if (!refused || refused.code !== -32602 || !refused.message.includes("limit must be one of")) fail(`a bad argument: ${refused?.code} ${refused?.message}`);

// A change notification: bob listens on his session's GET stream, alice
// writes to platform, which bob reads.
let heard;
const notified = new Promise((resolve) => { heard = resolve; });
bob.setNotificationHandler(ResourceListChangedNotificationSchema, () => heard(Date.now()));
const start = Date.now();
const w = await alice.callTool({ name: "brain_write", arguments: { wing: "platform", hall: "facts", title: `Resources smoke ${version} ${start}`, body: "A change.\n" } });
if (w.isError) fail(`brain_write: ${w.content[0].text}`);
const at = await Promise.race([notified, new Promise((r) => setTimeout(() => r(0), 2000))]);
if (!at) fail("no notifications/resources/list_changed within 2 s of a write");

// resources/updated: alice subscribes to a platform note, bob (a platform
// writer) updates it.
const watched = "brain://platform/decisions/use-quic-for-internal-rpc";
let updated;
const gotUpdate = new Promise((resolve) => { updated = resolve; });
alice.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { if (n.params.uri === watched) updated(Date.now()); });
await alice.subscribeResource({ uri: watched });
const ustart = Date.now();
const u = await bob.callTool({ name: "brain_update", arguments: { id: "platform/decisions/use-quic-for-internal-rpc", body: `QUIC (${version} ${ustart}).\n`, reason: "ci: resources/updated" } });
if (u.isError) fail(`brain_update: ${u.content[0].text}`);
const uat = await Promise.race([gotUpdate, new Promise((r) => setTimeout(() => r(0), 2000))]);
if (!uat) fail(`no notifications/resources/updated for ${watched} within 2 s of its update`);
await alice.close();
await bob.close();
console.log(`resources e2e ${version}: alice ${a.uris.length} resources in ${a.pages} pages, bob ${b.uris.length} (no people-ops); prompts ok; list_changed ${at - start} ms after a write, resources/updated ${uat - ustart} ms after an update`);
