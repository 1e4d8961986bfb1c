// POST /embed (issue 5, "Embeddings"): who may call it, malformed requests, the 8,000-code-point cut, the
// prefix each model family asks for, the service failing (502) or missing (503), and /health's embed field.
// The services are the scripted Ollama / LM Studio (tests/fakes); which model gets picked is in
// embed-choice.test.mjs.

import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import {
  local, web, own, request, pairCli, pairApp, freshOrigin, sleep, poll,
  assertError, assertSilent, assertCors,
  ollamaFake, lmStudioFake, stopEnginesAndFakes, embedEngine, embed, received, assertEmbedded, embedAndCheck, healthEmbed,
  OLLAMA_NOMIC, LMS_NOMIC, BGE_QUERY,
} from './helpers.mjs';

const T = { timeout: 60000 };
const cleanup = stopEnginesAndFakes;

/** An engine with the default Ollama fake (llama3.2, nomic-embed-text, qwen2.5-coder). */
async function ollamaEngine(opts = {}) {
  const srv = await ollamaFake(opts.fake);
  const eng = await embedEngine({ ollama: srv, ...opts.engine });
  return { srv, eng };
}

describe('embed: callers', T, () => {
  afterEach(cleanup);

  it('a connected page embeds with its token: {model, vectors} in order, with CORS', async () => {
    const { srv, eng } = await ollamaEngine();
    const origin = freshOrigin('embed');
    const { token } = await pairCli(eng, origin);
    const r = await embed(eng, { texts: ['one', 'two', 'three'] }, { origin, token });
    assertEmbedded(r, OLLAMA_NOMIC, ['search_document: one', 'search_document: two', 'search_document: three']);
    assertCors(r, origin);
    const [call] = srv.embedCalls();
    assert.equal(call.body.model, OLLAMA_NOMIC);
    assert.deepEqual(call.body.input, ['search_document: one', 'search_document: two', 'search_document: three']);
  });

  it('a page without a valid token gets 401 not_paired, and the service is not called', async () => {
    const { srv, eng } = await ollamaEngine();
    const origin = freshOrigin('embed');
    const { token } = await pairCli(eng, origin);
    const body = { texts: ['secret page text'] };
    for (const [what, o, t] of [
      ['no token', origin, undefined],
      ['a wrong token', origin, 'A'.repeat(43)],
      ['a malformed token', origin, 'x'],
      ['another origin\'s token', freshOrigin('thief'), token],
    ]) {
      const r = await embed(eng, body, { origin: o, token: t });
      assertError(r, 401, { code: 'not_paired' });
      assert.equal(srv.embedCalls().length, 0, what);
    }
  });

  it('a local process embeds without a token; the engine\'s own page may not (403)', async () => {
    const { srv, eng } = await ollamaEngine();
    assertEmbedded(await embed(eng, { texts: ['local'] }), OLLAMA_NOMIC, ['search_document: local']);
    assertError(await own(eng, '/embed', { body: { texts: ['x'] } }), 403, { error: 'not allowed for this caller' });
    assert.equal(srv.embedCalls().length, 1);
  });

  it('app mode: silence for an unknown page, embeddings for a connected one', async () => {
    const srv = await ollamaFake();
    const eng = await embedEngine({ ollama: srv, app: true });
    assertSilent(await embed(eng, { texts: ['x'] }, { origin: freshOrigin('stranger') }), 'POST /embed from an unknown page');
    assertSilent(await embed(eng, { texts: ['x'] }, { origin: freshOrigin('stranger'), token: 'A'.repeat(43) }), 'with a made-up token');
    assert.equal(srv.embedCalls().length, 0);
    const origin = freshOrigin('app');
    const { token } = await pairApp(eng, origin);
    const r = await embed(eng, { texts: ['hello'] }, { origin, token });
    assertEmbedded(r, OLLAMA_NOMIC, ['search_document: hello']);
    assertCors(r, origin);
  });
});

describe('embed: malformed requests get 400', T, () => {
  afterEach(cleanup);

  it('bad bodies, texts and kinds; the service is never called', async () => {
    const { srv, eng } = await ollamaEngine();
    assertError(await local(eng, '/embed', { method: 'POST', body: '{"texts": [' }), 400, { error: 'Invalid JSON body' });
    assertError(await local(eng, '/embed', { method: 'POST', body: 'texts=a', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }), 400);
    assertError(await local(eng, '/embed', { method: 'POST' }), 400); // an empty body counts as {}: texts missing
    const bad = [
      {}, { texts: 'a' }, { texts: null }, { texts: { 0: 'a' } }, { texts: 3 }, { texts: [1] }, { texts: ['a', 2] },
      { texts: ['a', null] }, { texts: [['a']] }, { texts: [{ text: 'a' }] }, { texts: ['a', true] },
      { texts: Array(257).fill('t') },
      { texts: ['a'], kind: 'passage' }, { texts: ['a'], kind: 'Query' }, { texts: ['a'], kind: '' }, { texts: ['a'], kind: 1 },
      { texts: ['a'], kind: ['query'] }, [], ['a'], 'a', 42,
    ];
    for (const body of bad) {
      const r = await local(eng, '/embed', { method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });
      assertError(r, 400);
      assert.ok(!r.json.code, `no code on a 400: ${r.body}`);
    }
    assert.equal(srv.embedCalls().length, 0, 'nothing reached the service');
  });

  it('exactly 256 texts are fine; an empty list answers [] without calling the service', async () => {
    const { srv, eng } = await ollamaEngine();
    const empty = await embed(eng, { texts: [] });
    assertEmbedded(empty, OLLAMA_NOMIC, []);
    assert.equal(srv.embedCalls().length, 0, 'no call for no texts');
    const texts = Array.from({ length: 256 }, (_, i) => `text ${i}`);
    await embedAndCheck(eng, srv, OLLAMA_NOMIC, texts, texts.map((t) => `search_document: ${t}`));
  });
});

describe('embed: each text is cut to 8,000 code points, before the prefix', T, () => {
  afterEach(cleanup);

  it('Ollama (nomic): accents, emoji and a text that already has the prefix', async () => {
    const { srv, eng } = await ollamaEngine();
    const D = 'search_document: ';
    const cases = [
      ['é'.repeat(9000), D + 'é'.repeat(8000)],
      ['a'.repeat(7999) + '😀😀', D + 'a'.repeat(7999) + '😀'],
      ['😀'.repeat(8000), D + '😀'.repeat(8000)],
      ['e\u0301'.repeat(4001), D + 'e\u0301'.repeat(4000)],
      [D + 'x'.repeat(9000), D + 'x'.repeat(8000 - D.length)],
      ['short', D + 'short'],
    ];
    await embedAndCheck(eng, srv, OLLAMA_NOMIC, cases.map((c) => c[0]), cases.map((c) => c[1]));
    await embedAndCheck(eng, srv, OLLAMA_NOMIC, ['ü'.repeat(8001)], ['search_query: ' + 'ü'.repeat(8000)], { kind: 'query' });
  });

  it('LM Studio (e5): CJK text and a query', async () => {
    const model = 'text-embedding-multilingual-e5-large';
    const srv = await lmStudioFake({ models: [{ id: 'qwen2.5-7b-instruct', type: 'llm', state: 'loaded' }, { id: model, type: 'embeddings' }] });
    const eng = await embedEngine({ lmstudio: srv });
    const cjk = '日本語'.repeat(3000);
    const cut = [...cjk].slice(0, 8000).join('');
    await embedAndCheck(eng, srv, model, [cjk, '🎉'.repeat(8005)], ['query: ' + cut, 'query: ' + '🎉'.repeat(8000)], { kind: 'query' });
    await embedAndCheck(eng, srv, model, [cjk], ['passage: ' + cut]);
  });
});

describe('embed: the prefix each model family asks for', T, () => {
  afterEach(cleanup);
  const llama = { name: 'llama3.2:latest', family: 'llama', capabilities: ['completion'] };
  const emb = (name, family = 'bert') => ({ name, family, capabilities: ['embedding'] });
  // [service, model (fake entry), query prefix, document prefix]
  const cases = [
    ['ollama', emb(OLLAMA_NOMIC, 'nomic-bert'), 'search_query: ', 'search_document: '],
    ['ollama', emb('mxbai-embed-large:latest'), BGE_QUERY, ''],
    ['ollama', emb('snowflake-arctic-embed:latest'), BGE_QUERY, ''],
    ['ollama', emb('bge-large:latest'), BGE_QUERY, ''],
    ['ollama', emb('bge-m3:latest', 'bert'), '', ''],
    ['ollama', emb('jeffh/intfloat-multilingual-e5-large:f16', 'xlm-roberta'), 'query: ', 'passage: '],
    ['ollama', emb('e5-mistral:7b', 'llama'), 'query: ', 'passage: '],
    ['ollama', emb('all-minilm:latest'), '', ''],
    ['lmstudio', { id: LMS_NOMIC }, 'search_query: ', 'search_document: '],
    ['lmstudio', { id: 'intfloat/e5-base-v2', type: 'embeddings' }, 'query: ', 'passage: '],
    ['lmstudio', { id: 'text-embedding-multilingual-e5-large', type: 'embeddings' }, 'query: ', 'passage: '],
    ['lmstudio', { id: 'text-embedding-bge-small-en-v1.5', type: 'embeddings' }, BGE_QUERY, ''],
    ['lmstudio', { id: 'text-embedding-bge-m3', type: 'embeddings' }, '', ''],
    ['lmstudio', { id: 'text-embedding-mxbai-embed-large-v1' }, BGE_QUERY, ''],
    ['lmstudio', { id: 'text-embedding-snowflake-arctic-embed-l-v2.0' }, BGE_QUERY, ''],
    ['lmstudio', { id: 'text-embedding-granite-embedding-278m-multilingual' }, '', ''],
  ];
  for (const [service, entry, q, d] of cases) {
    const model = entry.name ?? entry.id;
    it(`${service} ${model}: query ${JSON.stringify(q)}, document ${JSON.stringify(d)}`, async () => {
      const srv = service === 'ollama'
        ? await ollamaFake({ models: [llama, entry] })
        : await lmStudioFake({ models: [{ id: 'qwen2.5-7b-instruct', type: 'llm', state: 'loaded' }, entry] });
      const eng = await embedEngine({ [service]: srv });
      await embedAndCheck(eng, srv, model, ['mugs', 'plates'], [d + 'mugs', d + 'plates']);
      await embedAndCheck(eng, srv, model, ['mugs'], [d + 'mugs'], { kind: 'document' });
      await embedAndCheck(eng, srv, model, ['blue mug', q + 'red mug'], [q + 'blue mug', q + 'red mug'], { kind: 'query' });
      if (d) await embedAndCheck(eng, srv, model, [d + 'already'], [d + 'already'], { kind: 'document' });
      if (q) await embedAndCheck(eng, srv, model, [d + 'x'], [q + d + 'x'], { kind: 'query' });
    });
  }
});

describe('embed: the service fails (502) and the engine discovers again', T, () => {
  afterEach(cleanup);

  it('Ollama: 500, garbage, a vector missing, the connection dropped', async () => {
    const { srv, eng } = await ollamaEngine();
    await embedAndCheck(eng, srv, OLLAMA_NOMIC, ['ok'], ['search_document: ok']);
    for (const mode of ['error500', 'garbage', 'wrongCount', 'close']) {
      srv.embedMode = mode;
      const r = await embed(eng, { texts: ['a', 'b'] });
      assertError(r, 502);
      assert.notEqual(r.json.code, 'no_embedder', mode);
      srv.embedMode = 'ok';
      const tags = srv.count('GET', '/api/tags');
      await embedAndCheck(eng, srv, OLLAMA_NOMIC, ['again'], ['search_document: again']);
      assert.ok(srv.count('GET', '/api/tags') > tags, `after the ${mode} failure the engine listed the models again`);
    }
    assert.equal((await local(eng, '/health')).status, 200);
  });

  it('LM Studio: garbage and a vector missing', async () => {
    const srv = await lmStudioFake();
    const eng = await embedEngine({ lmstudio: srv });
    for (const mode of ['garbage', 'wrongCount', 'error500']) {
      srv.embedMode = mode;
      assertError(await embed(eng, { texts: ['a', 'b'] }), 502);
      srv.embedMode = 'ok';
      const lists = srv.count('GET', '/api/v0/models');
      await embedAndCheck(eng, srv, LMS_NOMIC, ['a'], ['search_document: a']);
      assert.ok(srv.count('GET', '/api/v0/models') > lists, `after ${mode}, discovered again`);
    }
  });

  it('a model that vanished after discovery: 502 once, then the next model found', async () => {
    const srv = await ollamaFake({ models: ['llama3.2:latest', OLLAMA_NOMIC, 'mxbai-embed-large:latest'] });
    const eng = await embedEngine({ ollama: srv });
    await embedAndCheck(eng, srv, OLLAMA_NOMIC, ['x'], ['search_document: x']);
    srv.setModels(['llama3.2:latest', 'mxbai-embed-large:latest']);
    assertError(await embed(eng, { texts: ['x'] }), 502);
    await embedAndCheck(eng, srv, 'mxbai-embed-large:latest', ['x'], ['x']);
    assert.equal(await healthEmbed(eng), 'mxbai-embed-large:latest');
  });

  it('a service that never answers does not block the engine, and the engine still stops cleanly', async () => {
    const { srv, eng } = await ollamaEngine({ fake: { embed: 'hang' } });
    const pending = embed(eng, { texts: ['x'] }, { timeoutMs: 60000 }).then((r) => r, (e) => e);
    assert.ok(await poll(() => srv.embedCalls().length === 1, { timeoutMs: 5000 }), 'the engine called the service');
    const h = await local(eng, '/health', { timeoutMs: 1000 });
    assert.equal(h.status, 200);
    assert.equal(h.json.embed, OLLAMA_NOMIC);
    await sleep(100);
    await eng.stop(); // throws if the engine needed SIGKILL
    const r = await pending;
    assert.ok(r instanceof Error || r.status >= 500, `the pending request ended: ${r.status ?? r.message}`);
  });
});

describe('embed: no model (503 no_embedder)', T, () => {
  afterEach(cleanup);

  const assertNone = async (eng) => {
    assertError(await embed(eng, { texts: ['x'] }), 503, { code: 'no_embedder' });
    assertError(await embed(eng, { texts: [] }), 503, { code: 'no_embedder' });
    assert.equal(await healthEmbed(eng), undefined, '/health has no embed');
  };

  it('no service running', async () => {
    const eng = await embedEngine();
    await assertNone(eng);
    const origin = freshOrigin('none');
    const { token } = await pairCli(eng, origin);
    assertError(await embed(eng, { texts: ['x'] }, { origin, token }), 503, { code: 'no_embedder' });
    assert.equal(await healthEmbed(eng, { origin, token }), undefined);
  });

  it('services with chat models only', async () => {
    const ollama = await ollamaFake({ models: ['llama3.2:latest', { name: 'qwen2.5-coder:7b', capabilities: ['completion', 'insert'] }] });
    const lmstudio = await lmStudioFake({ models: [{ id: 'qwen2.5-7b-instruct', type: 'llm', state: 'loaded' }, { id: 'qwen2-vl-2b-instruct', type: 'vlm' }] });
    const eng = await embedEngine({ ollama, lmstudio });
    await assertNone(eng);
    assert.equal(ollama.embedCalls().length + lmstudio.embedCalls().length, 0);
  });

  it('the only service fails to list its models', async () => {
    const ollama = await ollamaFake({ list: 'error500' });
    const eng = await embedEngine({ ollama });
    await assertNone(eng);
  });

  it('embeddings turned off ("embed": "off"), with models available', async () => {
    const ollama = await ollamaFake();
    const lmstudio = await lmStudioFake();
    const eng = await embedEngine({ ollama, lmstudio, config: { embed: 'off' } });
    await assertNone(eng);
    assert.equal(ollama.embedCalls().length + lmstudio.embedCalls().length, 0);
  });
});

describe('embed: GET /health names the model', T, () => {
  afterEach(cleanup);

  it('Ollama: for a connected page and local callers, not for pages without a valid token', async () => {
    const { eng } = await ollamaEngine();
    const origin = freshOrigin('health');
    const { token } = await pairCli(eng, origin);
    assert.equal(await healthEmbed(eng, { origin, token }), OLLAMA_NOMIC);
    assert.equal(await healthEmbed(eng), OLLAMA_NOMIC);
    for (const who of [{ origin }, { origin, token: 'A'.repeat(43) }, { origin: freshOrigin('other'), token }]) {
      const r = await web(eng, who.origin, '/health', { token: who.token });
      assert.equal(r.json.paired, false);
      assert.equal('embed' in r.json, false, `no embed for ${JSON.stringify(who)}: ${r.body}`);
    }
  });

  it('LM Studio: the id as LM Studio lists it; /embed answers the same name', async () => {
    const srv = await lmStudioFake();
    const eng = await embedEngine({ lmstudio: srv });
    const origin = freshOrigin('health');
    const { token } = await pairCli(eng, origin);
    assert.equal(await healthEmbed(eng, { origin, token }), LMS_NOMIC);
    assert.equal((await embed(eng, { texts: ['x'] }, { origin, token })).json.model, LMS_NOMIC);
  });

  it('a service that does not answer its listing keeps /health within the clients\' 1.5 s', async () => {
    // The protocol's clients give /health 1.5 s and then treat Leuria as not running.
    const ollama = await ollamaFake({ list: 'hang' });
    const eng = await embedEngine({ ollama });
    const r = await local(eng, '/health', { timeoutMs: 15000 });
    assert.equal(r.status, 200);
    assert.ok(r.ms < 1500, `GET /health took ${r.ms} ms while Ollama's /api/tags hung`);
  });

  it('an app engine answers /health with embed to a connected page', async () => {
    const srv = await ollamaFake();
    const eng = await embedEngine({ ollama: srv, app: true });
    const origin = freshOrigin('apph');
    const { token } = await pairApp(eng, origin);
    assert.equal(await healthEmbed(eng, { origin, token }), OLLAMA_NOMIC);
    const r = await request(eng, { path: '/health' });
    assert.equal(r.json.embed, OLLAMA_NOMIC, 'local callers too');
  });
});
