// Serves one client ID metadata document over https until killed, for
// clients whose document URL must be local in CI (no internet).
// Usage: node metadata-doc.mjs <https-url> <cert.pem> <key.pem> <client-name> <redirect-uri>...
import fs from "node:fs";
import https from "node:https";

const [docURL, cert, key, name, ...redirects] = process.argv.slice(2);
const body = JSON.stringify({
  client_id: docURL, client_name: name, redirect_uris: redirects, token_endpoint_auth_method: "none",
  grant_types: ["authorization_code", "refresh_token"], response_types: ["code"],
});
https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
  res.writeHead(200, { "Content-Type": "application/json" }).end(body);
}).listen(Number(new URL(docURL).port), "127.0.0.1", () => console.log("serving", docURL));
