// The Node relay baseline, standing in for the original engine's architecture, written the simplest
// idiomatic way (no tuning), as a first Node implementation would be:
//
//   node bench/baselines/node-relay.mjs PORT UPSTREAM_PORT     prints "listening on <port>"
//   BENCH_ACP_AGENT='["cmd","arg",…]' node bench/baselines/node-relay.mjs PORT 0   (the ACP routes only)
//
// Routes:
//   GET /llm?prompt=TEXT   the page's event stream of one turn on an OpenAI-compatible upstream: POST
//                          /v1/chat/completions (stream: true) on 127.0.0.1:UPSTREAM_PORT, each
//                          `data:` line parsed, its delta's content sent on as the engine sends it
//                          (`event: chunk` / `data: <JSON string>`), between `turn_start` and
//                          `turn_completed {text, durationMs}` (src/adapters/web/session_codec.cpp).
//   GET /acp/stream        spawns the agent (BENCH_ACP_AGENT), `initialize` + `session/new` with the
//                          official ACP SDK (@agentclientprotocol/sdk), then `event: ready {id}`; the
//                          stream stays open and carries the session's turns; closing it kills the agent.
//   POST /acp/<id>/prompt  {prompt}: `session/prompt`; each `agent_message_chunk` becomes a `chunk`
//                          event (`agent_thought_chunk` a `thought`), the answer `turn_completed`.
//   anything else          relayed as bytes (request → http.request → pipe), as scenario 8 holds idle
//                          streams through it.
//
// Like an event-emitting engine, the translating routes write each event as it comes and do not wait
// for a slow reader (res.write's return is not looked at): the upstream is never paused by a stalled
// page, what the page does not read piles up here (scenario 9 shows it). The byte relay's pipe() does
// pause its upstream.
import { spawn } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import { Readable, Writable } from 'node:stream';
import { client, methods, ndJsonStream } from '@agentclientprotocol/sdk';

const [port = 0, upstreamPort = 0] = process.argv.slice(2).map(Number);
const agentCommand = process.env.BENCH_ACP_AGENT ? JSON.parse(process.env.BENCH_ACP_AGENT) : null;
if (!upstreamPort && !agentCommand) {
  console.error('usage: node-relay.mjs PORT UPSTREAM_PORT (or BENCH_ACP_AGENT=[cmd,…] node-relay.mjs PORT 0)');
  process.exit(2);
}

const sse = (res, event, data) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
const openEvents = (res) => {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.flushHeaders();
};

function relayLlm(req, res, prompt) {
  openEvents(res);
  const started = Date.now();
  let text = '';
  sse(res, 'turn_start', null);
  const up = http.request(
    { host: '127.0.0.1', port: upstreamPort, method: 'POST', path: '/v1/chat/completions', headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' } },
    (upRes) => {
      let buf = '';
      upRes.setEncoding('utf8');
      upRes.on('data', (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '[DONE]') {
            sse(res, 'turn_completed', { text, durationMs: Date.now() - started });
            res.end();
            return;
          }
          const content = JSON.parse(data).choices?.[0]?.delta?.content;
          if (content) {
            text += content;
            sse(res, 'chunk', content);
          }
        }
      });
    },
  );
  up.on('error', (e) => {
    sse(res, 'failed', e.message);
    res.end();
  });
  res.on('close', () => up.destroy());
  up.end(JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: prompt }], stream: true }));
}

const acpSessions = new Map();  // our id -> {conn, sessionId, res, text, started}
let nextId = 0;

async function acpStream(req, res) {
  openEvents(res);
  const agentProc = spawn(agentCommand[0], agentCommand.slice(1), { stdio: ['pipe', 'pipe', 'inherit'], cwd: os.tmpdir() });
  const id = String(++nextId);
  const s = { res, text: '', started: 0 };
  const app = client()
    .onNotification(methods.client.session.update, ({ params }) => {
      const u = params.update;
      if (u.sessionUpdate === 'agent_message_chunk' && u.content.type === 'text') {
        s.text += u.content.text;
        sse(res, 'chunk', u.content.text);
      } else if (u.sessionUpdate === 'agent_thought_chunk' && u.content.type === 'text') {
        sse(res, 'thought', u.content.text);
      }
    })
    .onRequest(methods.client.session.requestPermission, () => ({ outcome: { outcome: 'cancelled' } }));
  s.conn = app.connect(ndJsonStream(Writable.toWeb(agentProc.stdin), Readable.toWeb(agentProc.stdout)));
  res.on('close', () => {
    acpSessions.delete(id);
    s.conn.close();
    agentProc.kill();
  });
  try {
    await s.conn.agent.request(methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    ({ sessionId: s.sessionId } = await s.conn.agent.request(methods.agent.session.new, { cwd: os.tmpdir(), mcpServers: [] }));
  } catch (e) {
    sse(res, 'failed', e.message);
    return res.end();
  }
  acpSessions.set(id, s);
  sse(res, 'ready', { id });
}

async function acpPrompt(req, res, id) {
  const s = acpSessions.get(id);
  let raw = '';
  for await (const d of req) raw += d;
  if (!s) {
    res.writeHead(404, { 'Content-Type': 'application/json' });
    return res.end('{"error":"no such session"}');
  }
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ sessionId: id, status: 'running' }));
  s.text = '';
  s.started = Date.now();
  sse(s.res, 'turn_start', null);
  try {
    await s.conn.agent.request(methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: 'text', text: JSON.parse(raw).prompt }] });
    sse(s.res, 'turn_completed', { text: s.text, durationMs: Date.now() - s.started });
  } catch (e) {
    sse(s.res, 'failed', e.message);
  }
}

function relayBytes(req, res) {
  const up = http.request(
    { host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers: req.headers },
    (upRes) => {
      res.writeHead(upRes.statusCode, upRes.headers);
      res.flushHeaders();  // an SSE client needs the headers before the first event
      upRes.pipe(res);
    },
  );
  up.on('error', () => res.destroy());
  res.on('close', () => up.destroy());  // the client left: let the upstream go too
  req.pipe(up);
}

const server = http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  if (req.method === 'GET' && u.pathname === '/llm' && upstreamPort) return relayLlm(req, res, u.searchParams.get('prompt') || '');
  if (agentCommand && req.method === 'GET' && u.pathname === '/acp/stream') return acpStream(req, res);
  const m = /^\/acp\/([^/]+)\/prompt$/.exec(u.pathname);
  if (agentCommand && req.method === 'POST' && m) return acpPrompt(req, res, m[1]);
  if (upstreamPort) return relayBytes(req, res);
  res.writeHead(404).end();
});
server.listen(port, '127.0.0.1', () => console.log(`listening on ${server.address().port}`));
