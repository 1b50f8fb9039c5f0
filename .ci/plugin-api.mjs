// A stand-in for the Anthropic Messages API on loopback, for .ci/plugin.sh
// only: it answers every model request with the text "ok" (streamed or not),
// so that the Claude Code CLI runs a whole turn (UserPromptSubmit, Stop) and a
// /compact (PreCompact, then SessionStart with source "compact") without the
// internet. It checks nothing the model would do; the plugin's hooks are what
// the step looks at. Usage: node plugin-api.mjs PORT [LOG]; LOG receives
// each request body that asks for a model's answer, one a line.
import fs from 'node:fs';
import http from 'node:http';

const port = Number(process.argv[2]);
const log = process.argv[3];
http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    const path = new URL(req.url, 'http://127.0.0.1').pathname;
    if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
      res.writeHead(200, {'content-type': 'application/json'}).end('{"input_tokens":10}');
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/messages') {
      res.writeHead(404, {'content-type': 'application/json'})
        .end('{"type":"error","error":{"type":"not_found_error","message":"not served here"}}');
      return;
    }
    if (log) fs.appendFileSync(log, body.replace(/\n/g, ' ') + '\n');
    let stream = false;
    let model = 'claude-sonnet-4-5';
    try {
      const j = JSON.parse(body);
      stream = Boolean(j.stream);
      model = j.model || model;
    } catch {
      // an unreadable body still gets an answer; the step checks the hooks
    }
    const message = {
      id: 'msg_plugin_ci', type: 'message', role: 'assistant', model, content: [],
      stop_reason: null, stop_sequence: null, usage: {input_tokens: 10, output_tokens: 1},
    };
    if (!stream) {
      res.writeHead(200, {'content-type': 'application/json'})
        .end(JSON.stringify({...message, content: [{type: 'text', text: 'ok'}], stop_reason: 'end_turn'}));
      return;
    }
    res.writeHead(200, {'content-type': 'text/event-stream', 'cache-control': 'no-cache'});
    const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({type, ...data})}\n\n`);
    event('message_start', {message});
    event('content_block_start', {index: 0, content_block: {type: 'text', text: ''}});
    event('content_block_delta', {index: 0, delta: {type: 'text_delta', text: 'ok'}});
    event('content_block_stop', {index: 0});
    event('message_delta', {delta: {stop_reason: 'end_turn', stop_sequence: null}, usage: {output_tokens: 1}});
    event('message_stop', {});
    res.end();
  });
}).listen(port, '127.0.0.1', () => console.log('serving'));
