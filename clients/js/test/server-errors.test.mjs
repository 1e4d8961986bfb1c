// server(): what goes wrong. HTTP errors in plain words, a cut stream, an unreachable server,
// cancelling, and the stream reader against chunks split anywhere.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAiServer } from '../../../tests/fakes/openai-server.mjs';
import { loadProviders } from './build-providers.mjs';
import { makeRequest } from './provider-request.mjs';

const { server, ProviderError, readEvents } = await loadProviders();

/** A ReadableStream giving `text` in the given pieces. */
function streamOf(pieces) {
  const enc = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const p of pieces) c.enqueue(typeof p === 'string' ? enc.encode(p) : p);
      c.close();
    },
  });
}

async function collect(stream) {
  const out = [];
  for await (const item of readEvents(stream)) out.push(item);
  return out;
}

describe('server() errors', () => {
  let srv;
  let script = [];
  let base = 0;
  before(async () => {
    srv = await startOpenAiServer({ respond: (body, i) => script[i - base] });
  });
  after(() => srv.close());
  const use = (steps) => {
    script = steps;
    base += srv.requests.filter((r) => r.path === '/v1/chat/completions').length;
    srv.requests.length = 0;
  };
  const url = () => `${srv.url}/chat/completions`;

  it('turns an HTTP error into a ProviderError in plain words, with the server\'s text as detail', async () => {
    use([{ status: 500, errorBody: { error: { message: 'upstream quota exceeded', type: 'server_error' } } }]);
    await assert.rejects(server({ url: url() }).chat(makeRequest().request), (e) => {
      assert.ok(e instanceof ProviderError);
      assert.equal(e.message, "This site's AI isn't available right now.");
      assert.equal(e.code, 'http_500');
      assert.equal(e.detail, 'upstream quota exceeded');
      assert.equal(e.provider, 'server');
      return true;
    });
  });

  it('reports a 401 the same way, with a plain-text body as detail', async () => {
    const keyed = await startOpenAiServer({ apiKey: 'secret' });
    try {
      await assert.rejects(server({ url: `${keyed.url}/chat/completions`, id: 'shop' }).chat(makeRequest().request), (e) => {
        assert.equal(e.code, 'http_401');
        assert.equal(e.provider, 'shop');
        assert.equal(e.detail, 'Incorrect API key provided');
        return true;
      });
      const ok = await server({ url: `${keyed.url}/chat/completions`, headers: () => ({ Authorization: 'Bearer secret' }) }).chat(makeRequest({ prompt: 'hi' }).request);
      assert.equal(ok.text, 'echo: hi');
    } finally {
      await keyed.close();
    }
    const fetchText = async () => new Response('Bad gateway, sorry', { status: 502 });
    await assert.rejects(server({ url: '/x', fetch: fetchText }).chat(makeRequest().request), { code: 'http_502', detail: 'Bad gateway, sorry' });
  });

  it('fails plainly when the stream is cut before the end', async () => {
    use([{ text: 'This answer will be cut somewhere in the middle', breakStream: true }]);
    const { request, texts } = makeRequest();
    await assert.rejects(server({ url: url() }).chat(request), (e) => {
      assert.ok(e instanceof ProviderError);
      assert.equal(e.code, 'failed');
      assert.match(e.message, /stopped before finishing/);
      return true;
    });
    assert.ok(texts().length > 0, 'the first pieces were streamed');
  });

  it('fails plainly when the server is unreachable', async () => {
    const gone = await startOpenAiServer();
    const deadUrl = `${gone.url}/chat/completions`;
    await gone.close();
    await assert.rejects(server({ url: deadUrl }).chat(makeRequest().request), { name: 'ProviderError', code: 'failed', message: "This site's AI isn't available right now." });
  });

  it('reports an error sent inside the stream', async () => {
    const fetchErr = async () => new Response('data: {"error":{"message":"model overloaded"}}\n\n', { status: 200, headers: { 'content-type': 'text/event-stream' } });
    await assert.rejects(server({ url: '/x', fetch: fetchErr }).chat(makeRequest().request), { code: 'failed', detail: 'model overloaded' });
  });

  it('aborts the fetch when the request is cancelled', async () => {
    use([{ text: 'a slow answer that takes a long time to stream out', chunkDelayMs: 100 }]);
    const controller = new AbortController();
    const { request, events } = makeRequest({ signal: controller.signal });
    const run = server({ url: url() }).chat(request);
    while (!events.some((e) => e.type === 'text')) await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    await assert.rejects(run, { name: 'AbortError' });
    const seen = events.length;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(events.length, seen, 'nothing is emitted after the abort');
  });

  it('rejects at once when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    let fetched = false;
    const spy = async () => { fetched = true; throw new Error('no'); };
    await assert.rejects(server({ url: '/x', fetch: spy }).chat(makeRequest({ signal: controller.signal }).request), { name: 'AbortError' });
    assert.equal(fetched, false);
  });

  it('accepts a stream that ends with a finish_reason but no [DONE]', async () => {
    const body = 'data: {"choices":[{"index":0,"delta":{"content":"fine"},"finish_reason":null}]}\n\n'
      + 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n';
    const f = async () => new Response(body, { status: 200 });
    const result = await server({ url: '/x', fetch: f }).chat(makeRequest().request);
    assert.equal(result.text, 'fine');
    assert.equal(result.reason, 'length');
  });
});

describe('readEvents', () => {
  const sse = 'data: {"a":1}\r\n\r\n: keep-alive comment\n\nevent: message\ndata: {"b":"é✓"}\n\ndata: [DONE]\n\ndata: {"after":true}\n\n';

  it('parses events however the chunks are split', async () => {
    const bytes = new TextEncoder().encode(sse);
    const expected = [{ done: false, data: { a: 1 } }, { done: false, data: { b: 'é✓' } }, { done: true }];
    assert.deepEqual(await collect(streamOf([sse])), expected);
    // One byte at a time: splits "\r\n", and the multi-byte characters.
    assert.deepEqual(await collect(streamOf([...bytes].map((b) => new Uint8Array([b])))), expected);
    for (const cut of [3, 7, 11, 17, 19, 20, 40]) {
      assert.deepEqual(await collect(streamOf([bytes.slice(0, cut), bytes.slice(cut)])), expected, `cut at ${cut}`);
    }
  });

  it('joins multi-line data, skips unreadable lines, and flushes an unterminated last event', async () => {
    const text = 'data: {"x":\ndata: 2}\n\ndata: not json\n\ndata: {"last":1}';
    assert.deepEqual(await collect(streamOf([text])), [{ done: false, data: { x: 2 } }, { done: false, data: { last: 1 } }]);
  });
});
