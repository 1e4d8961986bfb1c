// bridge() against a scripted fetch: what it sends (and doesn't) before and after pairing, the claim
// loop's outcomes, /health, embed errors, and the event stream's reconnect with replay skipping.
// The real engine, in a real browser, is tested in tests/e2e/sdk-bridge*.test.mjs.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { loadBridge } from './build-bridge.mjs';
import { URL0, KEY, scriptedFetch, attachedBridge } from './bridge-fakes.mjs';

let B;
before(async () => {
  B = await loadBridge();
});

const attached = (options) => attachedBridge(B, options);

const HEALTH = { leuria: '0.1.0', ok: true, agent: 'Claude Code', approvals: 'page', paired: true, embed: 'nomic-embed-text:latest' };

describe('bridge(): before pairing', () => {
  it('detect() with no token sends nothing and offers connect', async () => {
    const f = scriptedFetch(() => assert.fail('no request may reach the engine'));
    const { p } = attached({ fetch: f.fetch, storage: 'memory' });
    const r = await p.detect();
    assert.equal(r.status, 'needs-action');
    assert.equal(r.action, 'connect');
    assert.deepEqual(r.capabilities, []);
    assert.equal(f.requests.length, 0);
    assert.equal(p.id, 'bridge');
    assert.equal(p.label, 'Your AI');
    assert.equal(p.locality, 'device');
    assert.deepEqual([...p.offers], ['chat', 'embed']);
  });

  it('chat() and embed() with no token reject with not_connected, without a request', async () => {
    const f = scriptedFetch(() => assert.fail('no request'));
    const { p } = attached({ fetch: f.fetch, storage: 'memory' });
    await assert.rejects(p.embed(['x'], { kind: 'query', signal: new AbortController().signal }), (e) => e.code === 'not_connected' && e.provider === 'bridge');
    const ctl = new AbortController();
    const request = { messages: [{ role: 'user', content: 'hi' }], tools: [], callTool: async () => ({ ok: false, error: 'x' }), maxTurns: 10, signal: ctl.signal, emit() {} };
    await assert.rejects(p.chat(request), (e) => e.code === 'not_connected');
    assert.equal(f.requests.length, 0);
  });
});

describe('bridge(): connect', () => {
  it('claims (unreadable, pending, allowed), keeps the token, then checks /health with it', async () => {
    const store = B.memoryStorage();
    const f = scriptedFetch((req, i) => {
      if (req.path === '/connect/claim') return i === 0 ? 'unreadable' : i === 1 ? { json: { status: 'pending' } } : { json: { status: 'allowed', token: 'T0K' } };
      if (req.path === '/health') return { json: HEALTH };
      return { status: 404, json: { error: 'Not found' } };
    });
    const { p, updates, redetects } = attached({ fetch: f.fetch, storage: store, needs: { tools: true, effort: 'light' } });
    const done = p.connect();
    assert.equal(updates[0].status, 'needs-action');
    assert.match(updates[0].detail, /Waiting for you to allow this site in Leuria/);
    assert.equal((await p.detect()).detail, updates[0].detail, 'detect while waiting says the same');
    await done;
    const claims = f.requests.filter((r) => r.path === '/connect/claim');
    assert.equal(claims.length, 3);
    assert.match(claims[0].body.nonce, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(claims[0].body, { nonce: claims[0].body.nonce, app: 'Mug shop', needs: { tools: true, effort: 'light' } });
    assert.ok(claims.every((c) => c.body.nonce === claims[0].body.nonce && !c.headers.Authorization));
    assert.equal(store.getItem(KEY), 'T0K');
    const health = f.requests.find((r) => r.path === '/health');
    assert.equal(health.headers.Authorization, 'Bearer T0K');
    const last = updates.at(-1);
    assert.equal(last.status, 'ready');
    assert.equal(last.model, 'Claude Code');
    assert.equal(last.embedModel, 'nomic-embed-text:latest');
    assert.deepEqual(last.capabilities, ['chat', 'tools', 'agent', 'images', 'embed']);
    assert.equal(last.detail, undefined);
    assert.equal(redetects(), 0, "the core detects again after connect() itself");
  });

  for (const [name, answer, status, pattern] of [
    ['denied', { json: { status: 'denied' } }, 'needs-action', /wasn't allowed/],
    ['429', { status: 429, json: { error: 'Too many pairing requests' } }, 'needs-action', /Try again in a moment/],
    ['410', { status: 410, json: { error: 'expired' } }, 'needs-action', /took too long/],
  ]) {
    it(`a claim answered ${name} says so in plain words`, async () => {
      const f = scriptedFetch(() => answer);
      const { p, updates } = attached({ fetch: f.fetch, storage: 'memory' });
      await p.connect();
      const last = updates.at(-1);
      assert.equal(last.status, status);
      assert.equal(last.action, 'connect');
      assert.match(last.detail, pattern);
      assert.deepEqual(await p.detect(), last, 'detect keeps saying it');
    });
  }

  it('a 404 (another attempt took over) stops quietly', async () => {
    const f = scriptedFetch(() => ({ status: 404, json: { error: 'Unknown pairing request' } }));
    const { p, updates } = attached({ fetch: f.fetch, storage: 'memory' });
    await p.connect();
    assert.equal(f.requests.length, 1);
    assert.equal(updates.at(-1).status, 'needs-action');
    assert.doesNotMatch(updates.at(-1).detail, /Waiting/);
  });

  it('a second connect restarts with a new nonce; the first attempt stops', async () => {
    const f = scriptedFetch(async (req) => {
      await new Promise((r) => setTimeout(r, 20));
      return { json: { status: 'pending' } };
    });
    const { p } = attached({ fetch: f.fetch, storage: 'memory' });
    const first = p.connect();
    await new Promise((r) => setTimeout(r, 70));
    const second = p.connect();
    await first;
    const nonces = new Set(f.requests.map((r) => r.body.nonce));
    assert.equal(nonces.size, 2);
    await p.disconnect();
    await second;
  });

  it('the claim loop gives up when nothing readable comes back', async () => {
    const f = scriptedFetch(() => 'unreadable');
    const engine = new B.Engine({ provider: 'bridge', url: URL0, fetch: f.fetch, tokens: new B.TokenStore('memory', URL0), onUnpaired() {} });
    const loop = new B.ClaimLoop(engine, { nonce: 'n'.repeat(43) }, { giveUpMs: 120, retryMs: 30, requestMs: 1000 });
    const t0 = Date.now();
    const outcome = await loop.run();
    assert.equal(outcome.kind, 'no_answer');
    assert.ok(Date.now() - t0 >= 120);
    assert.ok(f.requests.length >= 3 && f.requests.length <= 6, `${f.requests.length} claims`);
  });
});

describe('bridge(): connected', () => {
  function connected(handler) {
    const store = B.memoryStorage();
    store.setItem(KEY, 'T0K');
    const f = scriptedFetch(handler);
    return { store, f, ...attached({ fetch: f.fetch, storage: store }) };
  }

  it('/health paired:false forgets the token and offers connect again', async () => {
    const { p, store, updates } = connected(() => ({ json: { ...HEALTH, paired: false, embed: undefined } }));
    const r = await p.detect();
    assert.equal(r.status, 'needs-action');
    assert.equal(r.action, 'connect');
    assert.match(r.detail, /no longer knows this site/);
    assert.equal(store.getItem(KEY), null);
    assert.equal(updates.at(-1).status, 'needs-action');
  });

  it('a 401 not_paired anywhere forgets the token', async () => {
    const { p, store, updates } = connected(() => ({ status: 401, json: { error: 'This site is not connected to Leuria', code: 'not_paired' } }));
    await assert.rejects(p.embed(['a'], { kind: 'document', signal: new AbortController().signal }), (e) => e.code === 'not_connected' && /isn't connected/.test(e.message) && /not connected to Leuria/.test(e.detail));
    assert.equal(store.getItem(KEY), null);
    assert.equal(updates.at(-1).status, 'needs-action');
    assert.equal((await p.detect()).status, 'needs-action');
  });

  it('/health with no answer within 1.5 s: unavailable, token kept, and connect offered (a revoked site looks the same)', async () => {
    const { p, store } = connected((req) => new Promise((_, reject) => req.signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')))));
    const t0 = Date.now();
    const r = await p.detect();
    const ms = Date.now() - t0;
    assert.ok(ms >= 1400 && ms < 3000, `${ms} ms`);
    assert.equal(r.status, 'unavailable');
    assert.equal(r.detail, "Leuria isn't running, or no longer knows this site.");
    assert.equal(r.action, 'connect');
    assert.equal(store.getItem(KEY), 'T0K');
  });

  it('embed: vectors; 503 no_embedder and 502 as plain ProviderErrors', async () => {
    let mode = 'ok';
    const { p, f } = connected((req) => {
      if (mode === 'ok') return { json: { model: 'm', vectors: [[1, 2]] } };
      if (mode === '503') return { status: 503, json: { error: 'No local embedding model is available', code: 'no_embedder' } };
      return { status: 502, json: { error: 'Ollama at 127.0.0.1:11434 failed: 500' } };
    });
    const signal = new AbortController().signal;
    assert.deepEqual(await p.embed(['a'], { kind: 'query', signal }), { model: 'm', vectors: [[1, 2]] });
    assert.deepEqual(f.requests[0].body, { texts: ['a'], kind: 'query' });
    assert.equal(f.requests[0].headers.Authorization, 'Bearer T0K');
    mode = '503';
    await assert.rejects(p.embed(['a'], { kind: 'query', signal }), (e) => e.code === 'no_embedder' && !/503|no_embedder/.test(e.message) && /503/.test(e.detail));
    mode = '502';
    await assert.rejects(p.embed(['a'], { kind: 'query', signal }), (e) => e.code === 'failed' && !/502|Ollama/.test(e.message) && /Ollama/.test(e.detail));
  });

  it('disconnect() forgets the token', async () => {
    const { p, store, updates } = connected(() => ({ json: HEALTH }));
    assert.equal((await p.detect()).status, 'ready');
    await p.disconnect();
    assert.equal(store.getItem(KEY), null);
    assert.equal(updates.at(-1).status, 'needs-action');
    assert.equal((await p.detect()).detail, 'Connect Leuria to use your own AI on this site.');
  });
});

describe('SessionStream', () => {
  const sse = (events) => events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('');

  /** A body that sends `text` and then fails (a dropped connection) or ends. */
  function body(text, { drop = false } = {}) {
    return new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(text));
        if (drop) setTimeout(() => c.error(new TypeError('network error')), 10);
        else c.close();
      },
    });
  }

  function fakeEngine(responses) {
    const opened = [];
    return {
      opened,
      forget() {},
      async open(path) {
        opened.push(path);
        const next = responses.shift();
        if (!next) throw new B.ProviderError('bridge', 'not_running', 'x');
        return next;
      },
    };
  }

  it('reopens a dropped stream and skips the replayed text by its length', async () => {
    const engine = fakeEngine([
      new Response(body(sse([['webmcp_ready', {}], ['turn_start', null], ['chunk', 'Hel'], ['chunk', 'lo w']]), { drop: true })),
      // The replay: webmcp_ready, then the turn's chunks so far, merged differently.
      new Response(body(sse([['webmcp_ready', {}], ['chunk', 'Hello'], ['chunk', ' world'], ['chunk', '!'], ['turn_completed', { text: 'Hello world!' }], ['completed', null]]))),
    ]);
    const events = [];
    let lost = null;
    const stream = new B.SessionStream(engine, 'bridge', 's1', { onEvent: (n, d) => events.push([n, d]), onLost: (e) => (lost = e) });
    await stream.open();
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal(lost, null);
    assert.deepEqual(engine.opened, ['/session/s1/stream', '/session/s1/stream']);
    const chunks = events.filter(([n]) => n === 'chunk').map(([, d]) => d);
    assert.deepEqual(chunks, ['Hel', 'lo w', 'orld', '!']);
    assert.equal(chunks.join(''), 'Hello world!');
    assert.deepEqual(events.at(-1), ['completed', null]);
  });

  it('a session gone on reopen (404) is lost at once, in plain words', async () => {
    const engine = fakeEngine([
      new Response(body(sse([['turn_start', null], ['chunk', 'a']]), { drop: true })),
      new Response(JSON.stringify({ error: 'Unknown session' }), { status: 404 }),
    ]);
    let lost = null;
    const stream = new B.SessionStream(engine, 'bridge', 's2', { onEvent() {}, onLost: (e) => (lost = e) });
    await stream.open();
    await new Promise((r) => setTimeout(r, 900));
    assert.ok(lost, 'lost');
    assert.match(lost.message, /connection to Leuria was lost/);
    assert.match(lost.detail, /404 Unknown session/);
    stream.close();
  });
});
