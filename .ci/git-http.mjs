// A company's git host on loopback, for .ci/plugin.sh: Git's smart HTTP
// protocol (which the shallow clone of `claude plugin marketplace add`
// needs), served by `git http-backend` as CGI for the bare repositories under
// ROOT. Read-only: pushes are refused. Usage: node git-http.mjs ROOT PORT
import http from 'node:http';
import {spawn} from 'node:child_process';

const root = process.argv[2];
const port = Number(process.argv[3]);
http.createServer((req, res) => {
  const u = new URL(req.url, 'http://127.0.0.1');
  if (u.pathname.endsWith('/git-receive-pack') || u.searchParams.get('service') === 'git-receive-pack') {
    res.writeHead(403).end('read-only\n');
    return;
  }
  const cgi = spawn('git', ['http-backend'], {
    env: {
      ...process.env,
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      REQUEST_METHOD: req.method,
      PATH_INFO: decodeURIComponent(u.pathname),
      QUERY_STRING: u.search.slice(1),
      CONTENT_TYPE: req.headers['content-type'] || '',
      HTTP_CONTENT_ENCODING: req.headers['content-encoding'] || '',
      GIT_PROTOCOL: req.headers['git-protocol'] || '',
      REMOTE_ADDR: '127.0.0.1',
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  req.pipe(cgi.stdin);
  let head = Buffer.alloc(0);
  let started = false;
  cgi.stdout.on('data', (chunk) => {
    if (started) {
      res.write(chunk);
      return;
    }
    // The CGI answer: header lines, an empty line, the body.
    head = Buffer.concat([head, chunk]);
    let end = head.indexOf('\r\n\r\n');
    let sep = 4;
    if (end < 0) {
      end = head.indexOf('\n\n');
      sep = 2;
    }
    if (end < 0) return;
    let status = 200;
    for (const line of head.subarray(0, end).toString().split(/\r?\n/)) {
      const i = line.indexOf(':');
      if (i < 0) continue;
      const [k, v] = [line.slice(0, i).trim(), line.slice(i + 1).trim()];
      if (k.toLowerCase() === 'status') status = parseInt(v, 10);
      else res.setHeader(k, v);
    }
    res.writeHead(status);
    res.write(head.subarray(end + sep));
    started = true;
  });
  cgi.on('close', () => {
    if (!started) res.writeHead(502);
    res.end();
  });
}).listen(port, '127.0.0.1', () => console.log('serving'));
