// Drives a running `brainstem dev` with the official TypeScript MCP SDK:
// initialize, tools/list, every tool, and a cross-wing query.
// Usage: node sdk-e2e.mjs <mcp-url> <token>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "brainstem-ci-sdk", version: "1.0.0" });
await client.connect(transport);

function fail(msg) { console.error("FAIL:", msg); process.exit(1); }

async function call(name, args, wantError = false) {
  const res = await client.callTool({ name, arguments: args });
  const text = res.content?.[0]?.text ?? "";
  if (!!res.isError !== wantError) fail(`${name} ${JSON.stringify(args)} -> isError=${res.isError}: ${text}`);
  return JSON.parse(text);
}

const { tools } = await client.listTools();
const names = new Set(tools.map((t) => t.name));
for (const t of ["brain_query", "brain_get", "brain_list", "brain_links", "brain_pending", "brain_write",
  "brain_update", "brain_ingest_raw", "session_log", "brain_promote", "brain_wings"]) {
  if (!names.has(t)) fail(`tools/list lacks ${t}`);
}

const wings = await call("brain_wings", {});
if (wings.wings.length !== 3) fail(`wings: ${JSON.stringify(wings)}`);
const q = await call("brain_query", { query: "incident retry" });
if (q.hits.length === 0 || q.wings.length < 2) fail(`cross-wing query: ${JSON.stringify(q)}`);
const list = await call("brain_list", { wing: "platform", limit: 3 });
const id = list.notes[0].id;
const note = await call("brain_get", { id });
if (note.id !== id) fail(`brain_get ${id}`);
await call("brain_links", { id });
const w = await call("brain_write", { wing: "platform", hall: "hypotheses", title: "SDK smoke hypothesis", body: "Written by the TypeScript SDK." });
await call("brain_update", { id: w.id, body: "Updated by the SDK.", reason: "ci", expected_hash: w.content_hash });
await call("brain_update", { id: w.id, body: "Stale.", reason: "ci", expected_hash: w.content_hash }, true);
await call("brain_ingest_raw", { wing: "platform", dry_run: true, pages: [{ hall: "sources", title: "SDK page", body: "x" }] });
await call("session_log", { wing: "platform", session: "ci-sdk", entry: { step: 1 } });
const pending = await call("brain_pending", { wing: "platform" });
if (pending.pending.length > 0) {
  await call("brain_promote", { wing: "platform", name: pending.pending[0].name, hall: "facts" });
}
await call("brain_get", { id: "nowhere/facts/nothing" }, true);
await client.close();
console.log(`sdk e2e: ${tools.length} tools, every tool called, ${q.hits.length} cross-wing hits from ${q.wings.join(", ")}`);
