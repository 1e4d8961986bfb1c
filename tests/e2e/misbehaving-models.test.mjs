// Misbehaving model servers (issue 7): an OpenAI-compatible server and Ollama (its /v1 layer, what the
// engine's model door speaks) that stall before or during an answer, or send garbage: an HTML page
// with 200, broken SSE, Ollama's native NDJSON, a chunk cut short, chunked framing broken or a size line
// that never ends (http/body_decoder.cpp), a body that ends without saying it
// is done, a tool-call index that isn't an integer, an HTML error page, an error inside a 200 stream
// (llama.cpp's `error:` line, an `event: error`), an error body of several lines. Each turn ends with a plain
// error within the engine's timeouts (modelStallMs), the engine keeps no extra descriptor, and the
// next session on the same engine is answered.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startEngine, stopAll, startSessionTurn, sleep } from './helpers.mjs';
import { assertNoLeftovers, assertServes, fdCount } from './lib/proc.mjs';
import { startOpenAiServer } from '../fakes/openai-server.mjs';
import { startOllamaServer } from '../fakes/ollama-server.mjs';

const STALL_MS = 2000;
const sse = (obj) => `data: ${JSON.stringify(obj)}\n\n`;
const chunk = (delta, finish = null) => sse({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] });

// What the server does for the misbehaving turn (a description as openai-server.mjs takes it), the
// error the page must get, and whether it must come quickly (garbage) or after the stall.
const CASES = [
  { name: 'stalls mid-stream', d: { text: 'This answer stops in the middle.', stallAfter: 2 }, error: /^Fake's answer broke off: The server stopped answering$/, stall: true },
  { name: 'never sends the head of its answer', d: { hang: true }, error: /^Fake at http:\/\/127\.0\.0\.1:\d+\/v1 did not answer \(No answer: .+\)$/, stall: true },
  { name: 'answers 200 with an HTML page', d: { rawBody: '<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>\n' }, error: /^Fake did not answer with a stream of completions \(it sent a web page\)\. Is http:\/\/127\.0\.0\.1:\d+\/v1 an OpenAI-compatible address\?$/ },
  { name: 'answers 200 with broken SSE', d: { rawBody: 'data: {not json\n\nevent: nonsense\ndata: [[[\n\n: comment\n\n', contentType: 'text/event-stream' }, error: /^Fake did not answer with a stream of completions \(it sent text in another format\)\./ },
  { name: "answers with Ollama's native NDJSON", d: { rawBody: '{"model":"llama3.2","message":{"role":"assistant","content":"Hi"},"done":false}\n{"model":"llama3.2","done":true}\n', contentType: 'application/x-ndjson' }, error: /^Fake did not answer with a stream of completions \(it sent JSON, not server-sent events\)\./ },
  { name: 'cuts a chunk short', d: { rawSocket: `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n80\r\n${chunk({ content: 'Hel' }).slice(0, 40)}` }, error: /^Fake's answer broke off: partial message$/ },
  { name: 'breaks its chunked framing after a first token', d: { rawSocket: `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n${chunk({ content: 'Hel' }).length.toString(16)}\r\n${chunk({ content: 'Hel' })}\r\nzz\r\n` }, error: /^Fake's answer broke off: bad chunk$/ },
  { name: 'sends a chunk size line that never ends', d: { rawSocket: `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n5;x=${'y'.repeat(5000)}` }, error: /^Fake's answer broke off: header limit exceeded$/ },
  { name: 'ends its body without [DONE] or a finish_reason', d: { rawBody: chunk({ role: 'assistant', content: '' }) + chunk({ content: 'Half an ans' }), contentType: 'text/event-stream' }, error: /^Fake's answer ended before it was finished\.$/ },
  { name: 'answers 502 with an HTML error page', d: { rawBody: '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n</html>', status: 502 }, error: /^Fake answered HTTP 502: a web page instead of an answer$/ },
  // llama.cpp's server: HTTP 200, then its error as an `error:` line, not a `data:` one.
  { name: "sends llama.cpp's `error:` line inside a 200 stream", d: { rawBody: chunk({ role: 'assistant', content: '' }) + 'error: {"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}\n\n', contentType: 'text/event-stream' }, error: /^Fake reported an error: the request exceeds the available context size, try increasing it$/ },
  { name: 'sends an `event: error` with its message in the data line', d: { rawBody: 'event: error\ndata: {"message":"upstream overloaded","code":529}\n\n', contentType: 'text/event-stream' }, error: /^Fake reported an error: upstream overloaded$/ },
  // vLLM's error shape, its message on two lines: one line of words, not the JSON.
  { name: "answers 400 with vLLM's error object", d: { status: 400, errorBody: { object: 'error', message: 'too long\nsecond line', type: 'BadRequestError', param: null, code: 400 } }, error: /^Fake answered HTTP 400: too long second line$/ },
  { name: "answers 422 with FastAPI's detail", d: { status: 422, errorBody: { detail: [{ loc: ['body', 'messages'], msg: 'field required', type: 'missing' }] } }, error: /^Fake answered HTTP 422: field required$/ },
];

/** The page's plain error: one short line of words, not JSON, not a stack. */
function assertPlain(msg) {
  assert.equal(typeof msg, 'string');
  assert.ok(msg.length > 0 && msg.length < 300, JSON.stringify(msg));
  assert.ok(!/[\n\r]/.test(msg), `one line: ${JSON.stringify(msg)}`);
  assert.ok(!/^\s*[{[]/.test(msg), `plain words, not JSON: ${msg}`);
  assert.ok(!/[\uFFFD<>]/.test(msg), `no raw bytes or markup: ${msg}`);
}

for (const kind of ['openai', 'ollama']) {
  describe(`misbehaving model server (${kind})`, { timeout: 240000 }, () => {
    let srv;
    let eng;
    let baseline;
    let next = null; // the description for the next chat request; then back to a normal answer
    const respond = (body) => {
      const d = next;
      next = null;
      return d ?? { text: 'fine' };
    };

    const goodTurn = () => assertServes(eng);

    before(async () => {
      srv = kind === 'openai' ? await startOpenAiServer({ respond }) : await startOllamaServer({ chat: respond });
      const provider = { id: 'fake', kind, name: 'Fake', baseUrl: srv.url };
      eng = await startEngine({
        timings: { modelStallMs: STALL_MS },
        files: { 'config.json': { agent: 'llm:fake' }, 'providers.json': { providers: [provider] } },
      });
      await goodTurn();
      await sleep(300);
      baseline = { fds: fdCount(eng.proc.pid) };
    });
    after(async () => {
      try {
        await stopAll();
      } finally {
        await srv.close();
      }
    });

    for (const c of CASES) {
      it(`${c.name}: the turn fails with a plain error${c.stall ? ' after modelStallMs' : ''}, and the engine goes on`, async () => {
        next = c.d;
        const t0 = Date.now();
        const { api, id, stream } = await startSessionTurn(eng, { prompt: 'hello' });
        const f = await stream.waitFor('failed', STALL_MS + 15000);
        const ms = Date.now() - t0;
        assertPlain(f.data);
        assert.match(f.data, c.error);
        if (c.stall) assert.ok(ms >= STALL_MS - 200, `failed after ${ms} ms, before the stall bound`);
        else assert.ok(ms < STALL_MS + 5000, `garbage is recognised at once, not after the stall bound (${ms} ms)`);
        await stream.waitForEnd();
        assert.equal((await api.get(id)).json.status, 'failed');
        await assertNoLeftovers(eng.proc.pid, { baseline });
        await goodTurn();
        await assertNoLeftovers(eng.proc.pid, { baseline });
      });
    }

    it('"error": null in every chunk is no error: the turn completes', async () => {
      const withNull = (delta, finish = null) => sse({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }], error: null });
      next = { rawBody: withNull({ role: 'assistant', content: '' }) + withNull({ content: 'all good' }) + withNull({}, 'stop') + 'data: [DONE]\n\n', contentType: 'text/event-stream' };
      const { api, id, stream } = await startSessionTurn(eng, { prompt: 'hello' });
      const tc = await stream.waitFor('turn_completed', 15000);
      assert.equal(tc.data.text, 'all good');
      assert.equal((await api.close(id)).status, 200);
      await stream.waitForEnd();
      await goodTurn();
    });

    it('a tool-call index that is not an integer (1.5, 1e12) is dropped, not thrown: the turn completes', async () => {
      next = {
        rawBody: chunk({ role: 'assistant', content: '' }) +
          chunk({ tool_calls: [{ index: 1.5, id: 'x', type: 'function', function: { name: 'nope', arguments: '{}' } }] }) +
          chunk({ tool_calls: [{ index: 1e12, id: 'y', type: 'function', function: { name: 'nope', arguments: '{}' } }] }) +
          chunk({ content: 'still fine' }) + chunk({}, 'stop') + 'data: [DONE]\n\n',
        contentType: 'text/event-stream',
      };
      const { api, id, stream } = await startSessionTurn(eng, { prompt: 'hello' });
      const tc = await stream.waitFor('turn_completed', 15000);
      assert.equal(tc.data.text, 'still fine');
      assert.ok(!stream.names().includes('tool_call'), JSON.stringify(stream.names()));
      assert.equal((await api.close(id)).status, 200);
      await stream.waitForEnd();
      await assertNoLeftovers(eng.proc.pid, { baseline });
      await goodTurn();
    });
  });
}

// The model list a session starts with (GET /models): a hosted catalogue past 64 KB is read whole, and
// a refusal says what the server said, not that it has no model.
describe('the list of models', { timeout: 120000 }, () => {
  after(() => stopAll());

  const engineFor = async (srv) => startEngine({
    files: { 'config.json': { agent: 'llm:big' }, 'providers.json': { providers: [{ id: 'big', kind: 'openai', name: 'Big', baseUrl: srv.url }] } },
  });

  it('a list past 64 KB (OpenRouter-sized) is read whole: the session starts with its first model', async () => {
    const models = Array.from({ length: 4000 }, (_, i) => `vendor-${i}/a-model-with-a-long-name-${i}:free`);
    const srv = await startOpenAiServer({ models, respond: () => ({ text: 'from the first model' }) });
    try {
      const eng = await engineFor(srv);
      const { api, id, stream } = await startSessionTurn(eng, { prompt: 'hello' });
      const ev = await stream.waitFor((e) => e.event === 'turn_completed' || e.event === 'failed', 15000);
      assert.equal(ev.event, 'turn_completed', JSON.stringify(ev.data));
      assert.equal(ev.data.text, 'from the first model');
      const chat = srv.requests.find((r) => r.method === 'POST' && r.path === '/v1/chat/completions');
      assert.equal(chat.body.model, models[0]);
      await api.close(id);
    } finally {
      await srv.close();
    }
  });

  it('a list answered with 500 fails the start with the status and the server\'s message', async () => {
    const srv = await startOpenAiServer({ modelsStatus: 500, modelsErrorBody: { error: { message: 'catalogue\nunavailable' } } });
    try {
      const eng = await engineFor(srv);
      const { stream } = await startSessionTurn(eng, { prompt: 'hello' });
      const f = await stream.waitFor('failed', 15000);
      assertPlain(f.data);
      assert.match(f.data, /^Big answered HTTP 500 for its list of models at http:\/\/127\.0\.0\.1:\d+\/v1\/models: catalogue unavailable$/);
    } finally {
      await srv.close();
    }
  });
});
