// Which embedding model a page gets (issue 5, "Embeddings"): discovery on Ollama and LM Studio, the provider
// order, loopback only, the discovery cache, the visitor's choice in config.json (watched while the engine runs)
// and the `leuria embed` command. The /embed route itself is in embed.test.mjs.

import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  runCli, poll, sleep,
  assertError,
  ollamaFake, lmStudioFake, stopEnginesAndFakes, embedEngine, embed, provider, embedAndCheck, assertEmbedded, healthEmbed, waitHealthEmbed,
  readConfig, replaceConfig,
  OLLAMA_NOMIC, LMS_NOMIC,
} from './helpers.mjs';

const T = { timeout: 60000 };
const cleanup = stopEnginesAndFakes;
const LLAMA = { name: 'llama3.2:latest', family: 'llama', capabilities: ['completion', 'tools'] };
const MXBAI = 'mxbai-embed-large:latest';
const LMS_LLM = { id: 'qwen2.5-7b-instruct', type: 'llm', state: 'loaded' };

/** The model /embed uses now (its answer's model), or the error code. */
async function modelInUse(eng) {
  const r = await embed(eng, { texts: ['probe'] });
  if (r.status === 200) return r.json.model;
  return `${r.status} ${r.json?.code ?? r.body}`;
}

/** Asserts both /embed and /health name `model`. */
async function assertModel(eng, model) {
  assert.equal(await modelInUse(eng), model, '/embed');
  assert.equal(await healthEmbed(eng), model, '/health embed');
}

async function assertNoEmbedder(eng, msg) {
  assertError(await embed(eng, { texts: ['x'] }), 503, { code: 'no_embedder' });
  assert.equal(await healthEmbed(eng), undefined, msg);
}

describe('embed discovery: Ollama', T, () => {
  afterEach(cleanup);

  it('lists /api/tags at the root (the /v1 of baseUrl stripped), shows models with {model}, embeds with /api/embed', async () => {
    const srv = await ollamaFake();
    const eng = await embedEngine({ ollama: srv });
    await embedAndCheck(eng, srv, OLLAMA_NOMIC, ['a', 'b'], ['search_document: a', 'search_document: b']);
    assert.ok(srv.count('GET', '/api/tags') >= 1, 'GET /api/tags');
    assert.equal(srv.count('GET', '/v1/api/tags'), 0);
    const shows = srv.requests.filter((r) => r.method === 'POST' && r.path === '/api/show');
    assert.ok(shows.some((r) => r.body?.model === OLLAMA_NOMIC), `POST /api/show {"model":"${OLLAMA_NOMIC}"}: ${JSON.stringify(shows.map((r) => r.body))}`);
    for (const s of shows) assert.equal(typeof s.body.model, 'string', JSON.stringify(s.body));
    const [call] = srv.embedCalls();
    assert.equal(call.path, '/api/embed');
    assert.ok(Array.isArray(call.body.input), 'input is an array');
  });

  it('a baseUrl without /v1 works too', async () => {
    const srv = await ollamaFake();
    const eng = await embedEngine({ ollama: srv.root });
    await assertModel(eng, OLLAMA_NOMIC);
  });

  const detection = [
    ['capabilities include "embedding"', [LLAMA, { name: 'custom-model:latest', family: 'llama', capabilities: ['embedding'] }], 'custom-model:latest'],
    ['no capabilities field, family nomic-bert (an older Ollama)', [{ ...LLAMA, noCapabilities: true }, { name: 'old-one:latest', family: 'nomic-bert', noCapabilities: true }], 'old-one:latest'],
    ['no capabilities field, "bert" among families', [{ ...LLAMA, noCapabilities: true }, { name: 'fam:latest', family: 'jina', families: ['jina', 'bert'], noCapabilities: true }], 'fam:latest'],
    ['no capabilities field, "embed" in the name', [{ ...LLAMA, noCapabilities: true }, { name: 'my-embedder:latest', family: 'llama', noCapabilities: true }], 'my-embedder:latest'],
    ['the first of two embedding models in listing order', [LLAMA, MXBAI, OLLAMA_NOMIC], MXBAI],
  ];
  for (const [what, models, expected] of detection) {
    it(`an embedding model when ${what}`, async () => {
      const srv = await ollamaFake({ models });
      const eng = await embedEngine({ ollama: srv });
      await assertModel(eng, expected);
    });
  }

  it('not an embedding model: capabilities without "embedding" (even a bert family or an "embed" name), or no sign at all', async () => {
    const srv = await ollamaFake({
      models: [
        { name: 'fake-embed:latest', family: 'nomic-bert', capabilities: ['completion'], embeds: true },
        { name: 'llama3.2:latest', family: 'llama', noCapabilities: true, embeds: true },
      ],
    });
    const eng = await embedEngine({ ollama: srv });
    await assertNoEmbedder(eng);
    assert.equal(srv.embedCalls().length, 0);
  });
});

describe('embed discovery: LM Studio', T, () => {
  afterEach(cleanup);

  it('type "embeddings" from /api/v0/models, loaded ones first; an llm with "embed" in its id is not one', async () => {
    const srv = await lmStudioFake({
      models: [
        { id: 'embed-chat-llm', type: 'llm', state: 'loaded' },
        { id: LMS_NOMIC, type: 'embeddings', state: 'not-loaded' },
        { id: 'text-embedding-bge-m3', type: 'embeddings', state: 'loaded' },
      ],
    });
    const eng = await embedEngine({ lmstudio: srv });
    await embedAndCheck(eng, srv, 'text-embedding-bge-m3', ['a'], ['a']);
    assert.ok(srv.count('GET', '/api/v0/models') >= 1);
    assert.equal(srv.embedCalls()[0].path, '/v1/embeddings');
    assert.ok(Array.isArray(srv.embedCalls()[0].body.input));
    srv.setModels([{ id: 'embed-chat-llm', type: 'llm', state: 'loaded' }]);
    const eng2 = await embedEngine({ lmstudio: srv });
    await assertNoEmbedder(eng2, 'an llm is not an embedding model, whatever its id');
  });

  it('without /api/v0 (404): ids containing "embed" from /v1/models', async () => {
    const srv = await lmStudioFake({ noV0: true });
    const eng = await embedEngine({ lmstudio: srv });
    await assertModel(eng, LMS_NOMIC);
    assert.ok(srv.count('GET', '/api/v0/models') >= 1 && srv.count('GET', '/v1/models') >= 1);
  });

  it('without /api/v0, answered 200 {"error":"Unexpected endpoint…"} as real LM Studio does: /v1/models too', async () => {
    const srv = await lmStudioFake({ noV0: '200' });
    const eng = await embedEngine({ lmstudio: srv });
    await assertModel(eng, LMS_NOMIC);
  });
});

describe('embed discovery: providers', T, () => {
  afterEach(cleanup);

  it('configured providers in file order: Ollama first, or LM Studio first', async () => {
    const ollama = await ollamaFake();
    const lmstudio = await lmStudioFake();
    const a = await embedEngine({ providers: [provider('ollama', 'ollama', ollama.url), provider('lmstudio', 'lmstudio', lmstudio.url)] });
    await assertModel(a, OLLAMA_NOMIC);
    const b = await embedEngine({ providers: [provider('lmstudio', 'lmstudio', lmstudio.url), provider('ollama', 'ollama', ollama.url)] });
    await assertModel(b, LMS_NOMIC);
  });

  it('skips providers without an embedding model; custom ids of kind ollama / lmstudio count', async () => {
    const chatOnly = await ollamaFake({ models: [LLAMA] });
    const lms = await lmStudioFake({ models: [LMS_LLM, { id: 'text-embedding-bge-m3' }] });
    const ollama = await ollamaFake();
    const eng = await embedEngine({
      providers: [provider('chat-box', 'ollama', chatOnly.url), provider('second-lms', 'lmstudio', lms.url), provider('ollama', 'ollama', ollama.url)],
    });
    await assertModel(eng, 'text-embedding-bge-m3');
    assert.ok(chatOnly.count('GET', '/api/tags') >= 1, 'the first provider was asked');
  });

  it('a provider that is not on this computer is never contacted (503 at once)', async () => {
    const eng = await embedEngine({
      ollama: 'http://192.0.2.1:1/v1',
      providers: [provider('lan', 'ollama', 'http://10.255.255.1:11434/v1'), provider('far', 'lmstudio', 'http://example.invalid:1234/v1')],
    });
    const t0 = Date.now();
    await assertNoEmbedder(eng);
    assert.ok(Date.now() - t0 < 2500, `took ${Date.now() - t0} ms: the engine tried to reach a remote service`);
  });

  // The strongest check: a service this machine serves on its own network address (not loopback) with an
  // embedding model, configured with that address, gets no request at all, even when chosen.
  const lanIp = Object.values(os.networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
  it('a service at this machine\'s network address is not local: never contacted, even when chosen', { skip: !lanIp && 'no non-loopback IPv4 address' }, async () => {
    const ollama = await ollamaFake({ host: lanIp });
    const lmstudio = await lmStudioFake({ host: lanIp });
    const eng = await embedEngine({ ollama, lmstudio, config: { embed: { provider: 'ollama', model: OLLAMA_NOMIC } } });
    await assertNoEmbedder(eng);
    assert.deepEqual([...ollama.requests, ...lmstudio.requests].map((r) => `${r.method} ${r.path}`), []);
  });

  it('a remote provider listed first is skipped for the local one', async () => {
    const ollama = await ollamaFake();
    const eng = await embedEngine({ providers: [provider('lan', 'ollama', 'http://192.0.2.1:11434/v1')], ollama });
    const t0 = Date.now();
    await assertModel(eng, OLLAMA_NOMIC);
    assert.ok(Date.now() - t0 < 2500, `took ${Date.now() - t0} ms`);
  });

  it('an OpenAI-compatible provider is never used, even on loopback with an embedding model', async () => {
    const srv = await ollamaFake();
    const lms = await lmStudioFake();
    const eng = await embedEngine({ providers: [provider('compat', 'openai', srv.url), provider('compat2', 'openai', lms.url)] });
    await assertNoEmbedder(eng);
    assert.deepEqual(srv.requests.map((r) => `${r.method} ${r.path}`), [], 'the ollama-like server was not contacted');
    assert.deepEqual(lms.requests.map((r) => `${r.method} ${r.path}`), [], 'the LM-Studio-like server was not contacted');
  });

  it('loopback means any 127.x address and localhost', async () => {
    const other = await ollamaFake({ host: '127.0.0.2' });
    const eng = await embedEngine({ ollama: other });
    await assertModel(eng, OLLAMA_NOMIC);
    const lms = await lmStudioFake();
    const eng2 = await embedEngine({ lmstudio: `http://localhost:${lms.port}/v1` });
    await assertModel(eng2, LMS_NOMIC);
  });
});

describe('embed discovery: the cache', T, () => {
  afterEach(cleanup);

  it('lists once within 10 s by default', async () => {
    const srv = await ollamaFake();
    const eng = await embedEngine({ ollama: srv });
    for (let i = 0; i < 3; i++) await embedAndCheck(eng, srv, OLLAMA_NOMIC, [`t${i}`], [`search_document: t${i}`]);
    await healthEmbed(eng);
    assert.equal(srv.count('GET', '/api/tags'), 1);
  });

  it('requests arriving together on a cold engine share one discovery', async () => {
    const srv = await ollamaFake();
    const eng = await embedEngine({ ollama: srv });
    const all = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => embed(eng, { texts: [`c${i}`] })),
      healthEmbed(eng),
    ]);
    all.slice(0, 6).forEach((r, i) => assertEmbedded(r, OLLAMA_NOMIC, [`search_document: c${i}`]));
    assert.equal(all[6], OLLAMA_NOMIC);
    assert.equal(srv.count('GET', '/api/tags'), 1);
  });

  it('embedCacheMs shortens it: a new first model shows after it expires', async () => {
    const srv = await ollamaFake({ models: [LLAMA, OLLAMA_NOMIC] });
    const eng = await embedEngine({ ollama: srv, timings: { embedCacheMs: 300 } });
    await assertModel(eng, OLLAMA_NOMIC);
    srv.setModels([LLAMA, MXBAI, OLLAMA_NOMIC]);
    assert.equal(await modelInUse(eng), OLLAMA_NOMIC, 'still cached');
    assert.ok(await waitHealthEmbed(eng, MXBAI, { timeoutMs: 3000 }), '/health moves to the new first model');
    assert.equal(await modelInUse(eng), MXBAI);
    const n = srv.count('GET', '/api/tags');
    await sleep(450);
    await modelInUse(eng);
    assert.ok(srv.count('GET', '/api/tags') > n, 'listed again after the cache expired');
  });
});

describe('embed choice: config.json "embed"', T, () => {
  afterEach(cleanup);

  it('{provider, model} picks that model over the first one found', async () => {
    const ollama = await ollamaFake({ models: [LLAMA, OLLAMA_NOMIC, MXBAI] });
    const lmstudio = await lmStudioFake();
    const eng = await embedEngine({ ollama, lmstudio, config: { embed: { provider: 'ollama', model: MXBAI } } });
    await assertModel(eng, MXBAI);
    const eng2 = await embedEngine({ ollama, lmstudio, config: { embed: { provider: 'lmstudio', model: LMS_NOMIC } } });
    await assertModel(eng2, LMS_NOMIC);
  });

  it('a chosen model that the provider lists is used even if it does not look like an embedding model', async () => {
    const srv = await ollamaFake({ models: [{ ...LLAMA, embeds: true }, OLLAMA_NOMIC] });
    const eng = await embedEngine({ ollama: srv, config: { embed: { provider: 'ollama', model: 'llama3.2:latest' } } });
    await embedAndCheck(eng, srv, 'llama3.2:latest', ['hello'], ['hello']);
    assert.equal(await healthEmbed(eng), 'llama3.2:latest');
  });

  for (const [what, choice] of [
    ['a model the provider does not list', { provider: 'ollama', model: 'gone:latest' }],
    ['an unknown provider', { provider: 'nowhere', model: OLLAMA_NOMIC }],
    ['a provider that is not local', { provider: 'lan', model: OLLAMA_NOMIC }],
    ['an OpenAI-compatible provider', { provider: 'compat', model: OLLAMA_NOMIC }],
  ]) {
    it(`falls back to the first model found for ${what}`, async () => {
      const ollama = await ollamaFake({ models: [LLAMA, MXBAI, OLLAMA_NOMIC] });
      const eng = await embedEngine({
        ollama, config: { embed: choice },
        after: [provider('lan', 'ollama', 'http://192.0.2.1:11434/v1'), provider('compat', 'openai', ollama.url)],
      });
      await assertModel(eng, MXBAI);
    });
  }

  it('is read again while the engine runs: off, a choice, automatic', async () => {
    const ollama = await ollamaFake({ models: [LLAMA, OLLAMA_NOMIC, MXBAI] });
    const eng = await embedEngine({ ollama, config: { agent: 'claude' } });
    await assertModel(eng, OLLAMA_NOMIC);
    await replaceConfig(eng.home, { agent: 'claude', embed: 'off' });
    assert.ok(await poll(async () => (await modelInUse(eng)) === '503 no_embedder', { timeoutMs: 2000, intervalMs: 50 }), 'off takes effect at once');
    assert.equal(await healthEmbed(eng), undefined);
    await fsp.writeFile(path.join(eng.home, 'config.json'), JSON.stringify({ agent: 'claude', embed: { provider: 'ollama', model: MXBAI } }));
    assert.ok(await poll(async () => (await modelInUse(eng)) === MXBAI, { timeoutMs: 2000, intervalMs: 50 }), 'a choice written in place');
    await replaceConfig(eng.home, { agent: 'claude' });
    assert.ok(await waitHealthEmbed(eng, OLLAMA_NOMIC, { timeoutMs: 2000 }), 'back to the first model found');
  });

  it('a config.json created while the engine runs', async () => {
    const ollama = await ollamaFake();
    const eng = await embedEngine({ ollama });
    await assertModel(eng, OLLAMA_NOMIC);
    await replaceConfig(eng.home, { embed: 'off' });
    assert.ok(await poll(async () => (await modelInUse(eng)) === '503 no_embedder', { timeoutMs: 2000, intervalMs: 50 }));
  });
});

describe('embed choice: leuria embed', T, () => {
  afterEach(cleanup);

  const cli = async (eng, args) => {
    const r = await runCli(['embed', ...args], { home: eng.home, timeoutMs: 15000 });
    assert.doesNotMatch(r.stderr, /AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:/, `leuria embed ${args.join(' ')}`);
    assert.equal(r.signal, null, `leuria embed ${args.join(' ')} died: ${r.stderr}`);
    return r;
  };
  const assertRefused = (r, what) => {
    assert.equal(r.timedOut, false, what);
    assert.equal(r.code, 1, `${what}: exit code; stdout ${r.stdout} stderr ${r.stderr}`);
    const lines = r.stderr.split('\n').filter((l) => l.trim());
    assert.equal(lines.length, 1, `${what}: one sentence on stderr, got ${JSON.stringify(r.stderr)}`);
    assert.match(lines[0], /\w+ \w+/, what);
  };
  // The listing's format is free; it must name the model pages get on a line that says so
  // ("Pages get: …", "in use", …), and no other embedding model on that line.
  const IN_USE = /pages get|in use|using|current/i;
  const assertInUse = (out, model, others) => {
    const lines = out.split('\n').filter((l) => IN_USE.test(l));
    assert.ok(lines.some((l) => l.includes(model) && others.every((o) => !l.includes(o))), `${model} shown as in use:\n${out}`);
  };

  async function setup() {
    const ollama = await ollamaFake({ models: [LLAMA, OLLAMA_NOMIC, MXBAI] });
    const lmstudio = await lmStudioFake();
    const eng = await embedEngine({
      ollama, lmstudio, config: { agent: 'claude' },
      after: [provider('compat', 'openai', ollama.url), provider('lan', 'ollama', 'http://192.0.2.1:11434/v1')],
    });
    return { ollama, lmstudio, eng };
  }

  it('embed --help', async () => {
    const r = await runCli(['embed', '--help']);
    assert.equal(r.code, 0, r.stderr);
    for (const w of ['use', 'off', 'auto']) assert.match(r.stdout, new RegExp(`\\b${w}\\b`));
  });

  it('lists the embedding models found and the one in use', async () => {
    const { eng } = await setup();
    const r = await cli(eng, []);
    assert.equal(r.code, 0, r.stderr);
    for (const m of [OLLAMA_NOMIC, MXBAI, LMS_NOMIC]) assert.ok(r.stdout.includes(m), `lists ${m}:\n${r.stdout}`);
    for (const m of ['llama3.2:latest', 'qwen2.5-7b-instruct', 'qwen2-vl-2b-instruct']) assert.ok(!r.stdout.includes(m), `not ${m}:\n${r.stdout}`);
    assertInUse(r.stdout, OLLAMA_NOMIC, [MXBAI, LMS_NOMIC]);
    for (const m of [OLLAMA_NOMIC, MXBAI, LMS_NOMIC]) {
      assert.doesNotMatch(r.stdout, new RegExp(`${m.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[A-Za-z0-9]`), `${m} runs into the next column:\n${r.stdout}`);
    }
  });

  it('use <provider> <model> saves the choice; the running engine follows; the list shows it', async () => {
    const { eng } = await setup();
    await assertModel(eng, OLLAMA_NOMIC);
    const r = await cli(eng, ['use', 'lmstudio', LMS_NOMIC]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(await readConfig(eng.home), { agent: 'claude', embed: { provider: 'lmstudio', model: LMS_NOMIC } });
    assert.ok(await waitHealthEmbed(eng, LMS_NOMIC), 'the running engine picked the choice up');
    assert.equal(await modelInUse(eng), LMS_NOMIC);
    const list = await cli(eng, []);
    assertInUse(list.stdout, LMS_NOMIC, [OLLAMA_NOMIC, MXBAI]);
  });

  it('use refuses a provider that is not a local Ollama or LM Studio', async () => {
    const { eng } = await setup();
    const before = await readConfig(eng.home);
    for (const [id, what] of [['compat', 'an OpenAI-compatible provider'], ['lan', 'an Ollama on the network'], ['nowhere', 'an unknown provider']]) {
      assertRefused(await cli(eng, ['use', id, OLLAMA_NOMIC]), what);
    }
    assert.deepEqual(await readConfig(eng.home), before, 'config.json unchanged');
    await assertModel(eng, OLLAMA_NOMIC);
  });

  it('off turns embeddings off, auto removes the choice', async () => {
    const { eng } = await setup();
    assert.equal((await cli(eng, ['use', 'ollama', MXBAI])).code, 0);
    assert.ok(await waitHealthEmbed(eng, MXBAI));
    const off = await cli(eng, ['off']);
    assert.equal(off.code, 0, off.stderr);
    assert.deepEqual(await readConfig(eng.home), { agent: 'claude', embed: 'off' });
    assert.ok(await poll(async () => (await modelInUse(eng)) === '503 no_embedder', { timeoutMs: 2000, intervalMs: 50 }));
    assert.equal(await healthEmbed(eng), undefined);
    const shown = await cli(eng, []);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /\boff\b/i, 'the list says embeddings are off');
    for (const l of shown.stdout.split('\n').filter((x) => IN_USE.test(x))) {
      for (const m of [OLLAMA_NOMIC, MXBAI, LMS_NOMIC]) assert.ok(!l.includes(m), `no model in use when off: ${l}`);
    }
    const auto = await cli(eng, ['auto']);
    assert.equal(auto.code, 0, auto.stderr);
    assert.deepEqual(await readConfig(eng.home), { agent: 'claude' });
    assert.ok(await waitHealthEmbed(eng, OLLAMA_NOMIC), 'back to the first model found');
    assert.equal(await modelInUse(eng), OLLAMA_NOMIC);
  });
});

