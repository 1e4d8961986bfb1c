// bridge()'s guards: the engine URL it accepts, pairing only from the visitor's action, a site the
// desktop app revoked (silent, so it looks like "not running"), a 401 for a token another tab has
// already replaced, embeddings in batches of the engine's limit, and its ownAI mark.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadBridge } from './build-bridge.mjs';
import { URL0, KEY, scriptedFetch, attachedBridge } from './bridge-fakes.mjs';

let B;
before(async () => {
  B = await loadBridge();
});

const HEALTH = { leuria: '0.2.0', ok: true, agent: 'Claude Code', approvals: 'app', paired: true };
const attached = (options) => attachedBridge(B, options);

describe('bridge({ url })', () => {
  it('takes only http://127.0.0.1:<port> and http://localhost:<port> (a trailing slash is fine)', async () => {
    for (const [url, base] of [
      [undefined, 'http://127.0.0.1:19570'],
      ['http://127.0.0.1:19570', 'http://127.0.0.1:19570'],
      ['http://127.0.0.1:8080/', 'http://127.0.0.1:8080'],
      ['http://localhost:65535', 'http://localhost:65535'],
      ['http://localhost:1/', 'http://localhost:1'],
    ]) {
      const store = B.memoryStorage();
      store.setItem(`leuria:token:${base}`, 'T0K');
      const f = scriptedFetch(() => ({ json: HEALTH }));
      const p = B.bridge({ url, storage: store, fetch: f.fetch });
      assert.equal((await p.detect()).status, 'ready', String(url));
      assert.equal(f.requests[0].url, `${base}/health`);
    }
  });

  it('anything else is a TypeError at bridge() time', () => {
    for (const url of [
      'https://127.0.0.1:19570', 'http://127.0.0.1', 'http://localhost', 'http://127.0.0.1:0', 'http://127.0.0.1:65536',
      'http://127.0.0.1:019570', 'http://127.0.0.2:19570', 'http://[::1]:19570', 'http://evil.example:19570',
      'http://127.0.0.1:19570.evil.example', 'http://127.0.0.1:19570@evil.example', 'http://user@127.0.0.1:19570',
      'http://127.0.0.1:19570/api', 'http://127.0.0.1:19570?x=1', 'http://127.0.0.1:19570//', 'ws://127.0.0.1:19570',
      ' http://127.0.0.1:19570', 'HTTP://LOCALHOST:19570', '//127.0.0.1:19570', '', 19570, {},
    ]) {
      assert.throws(() => B.bridge({ url }), (e) => e instanceof TypeError && /http:\/\/127\.0\.0\.1:<port> or http:\/\/localhost:<port>/.test(e.message), String(url));
    }
  });

  it('is the visitor\'s own AI (ownAI)', () => {
    assert.equal(B.bridge().ownAI, true);
  });
});

describe('bridge().connect() and the visitor\'s action', () => {
  const saved = {};
  let links;
  before(() => {
    for (const k of ['navigator', 'document']) saved[k] = Object.getOwnPropertyDescriptor(globalThis, k);
    links = [];
    // Just enough of a document for openLink: the links it clicks are recorded.
    const element = () => ({ style: {}, click() { links.push(this.href); }, remove() {} });
    Object.defineProperty(globalThis, 'document', { value: { createElement: element, body: { appendChild() {} } }, configurable: true, writable: true });
  });
  after(() => {
    for (const [k, d] of Object.entries(saved)) {
      if (d) Object.defineProperty(globalThis, k, d);
      else delete globalThis[k];
    }
  });
  const activation = (isActive) => Object.defineProperty(globalThis, 'navigator', { value: { userActivation: { isActive } }, configurable: true, writable: true });

  it('outside a click (userActivation inactive): no link, no claim, and plain words', async () => {
    activation(false);
    links.length = 0;
    const f = scriptedFetch(() => assert.fail('no request'));
    const { p, updates } = attached({ fetch: f.fetch, storage: 'memory' });
    await p.connect();
    assert.deepEqual(links, []);
    assert.equal(f.requests.length, 0);
    const last = updates.at(-1);
    assert.equal(last.status, 'needs-action');
    assert.equal(last.action, 'connect');
    assert.equal(last.detail, 'Click the connect button to connect your AI.');
    assert.deepEqual(await p.detect(), last, 'detect keeps saying it');
  });

  it('inside a click (userActivation active): the link opens and the claim starts', async () => {
    activation(true);
    links.length = 0;
    const f = scriptedFetch(() => ({ json: { status: 'denied' } }));
    const { p } = attached({ fetch: f.fetch, storage: 'memory' });
    await p.connect();
    assert.equal(links.length, 1);
    assert.match(links[0], /^leuria:\/\/connect\?/);
    assert.equal(f.requests[0].path, '/connect/claim');
  });

  it('a site revoked in the app (silent /health): unavailable with connect offered; a click pairs again and the new token replaces the old', async () => {
    activation(true);
    links.length = 0;
    const store = B.memoryStorage();
    store.setItem(KEY, 'OLD');
    let claimed = false;
    const f = scriptedFetch((req) => {
      if (req.path === '/connect/claim') return (claimed = true), { json: { status: 'allowed', token: 'NEW' } };
      // The app engine is silent to a revoked site: no readable answer for the old token.
      if (req.path === '/health') return req.headers.Authorization === 'Bearer NEW' ? { json: HEALTH } : 'unreadable';
      return { status: 404, json: { error: 'Not found' } };
    });
    const { p, updates } = attached({ fetch: f.fetch, storage: store });
    const r = await p.detect();
    assert.equal(r.status, 'unavailable');
    assert.equal(r.action, 'connect');
    assert.equal(r.detail, "Leuria isn't running, or no longer knows this site.");
    assert.equal(store.getItem(KEY), 'OLD', 'kept: Leuria may just not be running');

    const done = p.connect();
    assert.equal(links.length, 1, 'a new link');
    assert.match((await p.detect()).detail, /Waiting/, 'waiting, even with the old token');
    await done;
    assert.ok(claimed);
    assert.equal(store.getItem(KEY), 'NEW');
    assert.equal(updates.at(-1).status, 'ready');
    assert.equal((await p.detect()).status, 'ready');
  });
});

describe('bridge(): a 401 for a token already replaced', () => {
  it('keeps the token another tab stored meanwhile', async () => {
    const store = B.memoryStorage();
    store.setItem(KEY, 'T1');
    const f = scriptedFetch(async (req) => {
      // While this request is on its way, another tab pairs again.
      if (req.headers.Authorization === 'Bearer T1') {
        store.setItem(KEY, 'T2');
        return { status: 401, json: { error: 'This site is not connected to Leuria', code: 'not_paired' } };
      }
      if (req.path === '/health') return { json: HEALTH };
      return { json: { model: 'm', vectors: [[1]] } };
    });
    const { p, updates } = attached({ fetch: f.fetch, storage: store });
    await assert.rejects(p.embed(['a'], { kind: 'query', signal: new AbortController().signal }), (e) => e.code === 'not_connected');
    assert.equal(store.getItem(KEY), 'T2');
    assert.ok(!updates.some((u) => /no longer knows/.test(u.detail ?? '')), 'not reported as forgotten');
    assert.deepEqual(await p.embed(['a'], { kind: 'query', signal: new AbortController().signal }), { model: 'm', vectors: [[1]] });

    // The same on /health (paired: false for the old token): the new one is checked instead.
    store.setItem(KEY, 'T1');
    const g = scriptedFetch((req) => {
      if (req.headers.Authorization === 'Bearer T1') return store.setItem(KEY, 'T2'), { json: { ...HEALTH, paired: false } };
      return { json: HEALTH };
    });
    const q = attached({ fetch: g.fetch, storage: store }).p;
    assert.equal((await q.detect()).status, 'ready');
    assert.equal(store.getItem(KEY), 'T2');
  });

  it('an event stream refused with 401 forgets only the token it carried', async () => {
    const store = B.memoryStorage();
    store.setItem(KEY, 'T1');
    let unpaired = 0;
    const f = scriptedFetch(() => (store.setItem(KEY, 'T2'), { status: 401, json: { error: 'no', code: 'not_paired' } }));
    const tokens = new B.TokenStore(store, URL0);
    const engine = new B.Engine({ provider: 'bridge', url: URL0, fetch: f.fetch, tokens, onUnpaired: () => unpaired++ });
    await assert.rejects(engine.open('/session/s1/stream', new AbortController().signal), (e) => e.code === 'not_connected');
    assert.equal(store.getItem(KEY), 'T2');
    assert.equal(unpaired, 0);
    // With no newer token, it is forgotten.
    const g = scriptedFetch(() => ({ status: 401, json: { error: 'no', code: 'not_paired' } }));
    const engine2 = new B.Engine({ provider: 'bridge', url: URL0, fetch: g.fetch, tokens, onUnpaired: () => unpaired++ });
    await assert.rejects(engine2.open('/session/s1/stream', new AbortController().signal), (e) => e.code === 'not_connected');
    assert.equal(store.getItem(KEY), null);
    assert.equal(unpaired, 1);
  });
});

describe('bridge().embed() in batches', () => {
  function embedding(modelFor = () => 'nomic') {
    const store = B.memoryStorage();
    store.setItem(KEY, 'T0K');
    let batch = 0;
    const f = scriptedFetch((req) => {
      const { texts } = req.body;
      if (texts.length > 256) return { status: 400, json: { error: 'At most 256 texts' } };
      return { json: { model: modelFor(batch++), vectors: texts.map((t) => [Number(t)]) } };
    });
    return { f, ...attached({ fetch: f.fetch, storage: store }) };
  }
  const signal = new AbortController().signal;

  it('splits lists over 256 texts into batches of 256, and keeps the vectors in order', async () => {
    const { p, f } = embedding();
    const texts = Array.from({ length: 600 }, (_, i) => String(i));
    const out = await p.embed(texts, { kind: 'document', signal });
    assert.deepEqual(f.requests.map((r) => r.body.texts.length), [256, 256, 88]);
    assert.ok(f.requests.every((r) => r.body.kind === 'document'));
    assert.equal(out.model, 'nomic');
    assert.deepEqual(out.vectors, texts.map((t) => [Number(t)]));
    f.requests.length = 0;
    assert.equal((await p.embed(texts.slice(0, 256), { kind: 'query', signal })).vectors.length, 256);
    assert.equal(f.requests.length, 1);
  });

  it('a model that changes between batches fails in plain words', async () => {
    const { p } = embedding((i) => (i === 0 ? 'nomic' : 'bge'));
    await assert.rejects(p.embed(Array.from({ length: 300 }, (_, i) => String(i)), { kind: 'query', signal }), (e) => {
      assert.equal(e.name, 'ProviderError');
      assert.equal(e.code, 'model_changed');
      assert.equal(e.message, 'The local model changed while processing this. Try again.');
      assert.match(e.detail, /bge/);
      return true;
    });
  });
});
