// Embeddings (issue 5) for the leuria end-to-end tests: hermetic providers.json lists, engines with the
// scripted Ollama / LM Studio servers (tests/fakes/ollama-server.mjs, lmstudio-server.mjs), /embed calls and
// their checks. This module owns the set of embedding fakes started by the tests (closed by closeFakes).
//
// Hermetic: every providers.json written here names both built-in ids "ollama" and "lmstudio", so the engine
// never probes the real 127.0.0.1:11434 / :1234. An id a test does not point at a fake goes to a closed port.

import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { startEngine, stopAll } from './engine.mjs';
import { local, web } from './http.mjs';
import { closedPort, assertJsonType, poll } from './checks.mjs';
import { startOllamaServer, fakeVector } from '../../fakes/ollama-server.mjs';
import { startLmStudioServer } from '../../fakes/lmstudio-server.mjs';

export { fakeVector };

export const OLLAMA_NOMIC = 'nomic-embed-text:latest';
export const LMS_NOMIC = 'text-embedding-nomic-embed-text-v1.5';
export const BGE_QUERY = 'Represent this sentence for searching relevant passages: ';

const fakes = [];

/** A scripted Ollama (opts of startOllamaServer), closed by closeFakes. */
export async function ollamaFake(opts) {
  const s = await startOllamaServer(opts);
  fakes.push(s);
  return s;
}

/** A scripted LM Studio (opts of startLmStudioServer), closed by closeFakes. */
export async function lmStudioFake(opts) {
  const s = await startLmStudioServer(opts);
  fakes.push(s);
  return s;
}

export async function closeFakes() {
  await Promise.all(fakes.splice(0).map((s) => s.close()));
}

/** afterEach of the embedding tests: every engine, then every fake. */
export async function stopEnginesAndFakes() {
  try {
    await stopAll();
  } finally {
    await closeFakes();
  }
}

/** A provider entry of providers.json. */
export function provider(id, kind, baseUrl, name = id) {
  return { id, kind, name, baseUrl };
}

/** A base URL nothing listens on. */
export async function deadUrl() {
  return `http://127.0.0.1:${await closedPort()}/v1`;
}

/** `providers` plus dead "ollama" / "lmstudio" entries for the built-in ids it doesn't name (after it). */
export async function hermetic(providers) {
  const out = [...providers];
  for (const [id, kind] of [['lmstudio', 'lmstudio'], ['ollama', 'ollama']]) {
    if (!out.some((p) => p.id === id)) out.push(provider(id, kind, await deadUrl(), `Dead ${id}`));
  }
  return out;
}

/**
 * An engine for the embedding tests.
 *   ollama / lmstudio  a fake (or a base URL) for the built-in ids; absent: a closed port
 *   providers          entries placed before those two (file order is the discovery order), e.g. provider(...)
 *   after              entries placed after them
 *   config             config.json content (not written when absent)
 *   plus startEngine's app, devPairing, timings, args, home
 */
export async function embedEngine({ ollama, lmstudio, providers = [], after = [], config, ...rest } = {}) {
  const urlOf = (x) => (typeof x === 'string' ? x : x.url);
  const list = [...providers];
  if (ollama) list.push(provider('ollama', 'ollama', urlOf(ollama), 'Ollama'));
  if (lmstudio) list.push(provider('lmstudio', 'lmstudio', urlOf(lmstudio), 'LM Studio'));
  list.push(...after);
  const files = { 'providers.json': { providers: await hermetic(list) } };
  if (config !== undefined) files['config.json'] = config;
  return startEngine({ ...rest, files });
}

/** POST /embed; from a web page when `origin` is given (with `token` if any), else from a local process. */
export function embed(eng, body, { origin, token, timeoutMs = 10000 } = {}) {
  if (origin) return web(eng, origin, '/embed', { method: 'POST', body, token, timeoutMs });
  return local(eng, '/embed', { method: 'POST', body, timeoutMs });
}

/** Every text the fake received in embed calls from index `from` of its embed calls on, in order. */
export function received(srv, from = 0) {
  return srv.embedCalls().slice(from).flatMap((r) => (typeof r.body?.input === 'string' ? [r.body.input] : r.body?.input ?? []));
}

/**
 * Assert a 200 {model, vectors} whose vectors are the fake's vectors for `sent` (the texts as the service
 * received them) from `model`.
 */
export function assertEmbedded(res, model, sent, dims = 8) {
  const ctx = `response: ${res.status} ${res.body.slice(0, 500)}`;
  assert.equal(res.status, 200, ctx);
  assertJsonType(res);
  assert.deepEqual(Object.keys(res.json).sort(), ['model', 'vectors'], ctx);
  assert.equal(res.json.model, model, ctx);
  assert.deepEqual(res.json.vectors, sent.map((t) => fakeVector(model, t, dims)), ctx);
}

/** Call /embed and check both what the service received and what came back. */
export async function embedAndCheck(eng, srv, model, texts, expectedInputs, opts = {}) {
  const from = srv.embedCalls().length;
  const body = { texts };
  if (opts.kind !== undefined) body.kind = opts.kind;
  const res = await embed(eng, body, opts);
  assertEmbedded(res, model, expectedInputs, opts.dims);
  assert.deepEqual(received(srv, from), expectedInputs, 'what the service received');
  for (const call of srv.embedCalls().slice(from)) assert.equal(call.body.model, model, 'the model asked for');
  return res;
}

/** GET /health's embed field (local, or from a page with its token). */
export async function healthEmbed(eng, { origin, token } = {}) {
  const r = origin ? await web(eng, origin, '/health', { token }) : await local(eng, '/health');
  assert.equal(r.status, 200, r.body);
  return r.json.embed;
}

/** Poll /health until its embed field equals `expected` (undefined: absent); returns whether it did. */
export async function waitHealthEmbed(eng, expected, { timeoutMs = 3000, ...who } = {}) {
  return poll(async () => (await healthEmbed(eng, who)) === expected, { timeoutMs, intervalMs: 50 });
}

/** Read LEURIA_HOME/config.json (undefined when missing). */
export async function readConfig(home) {
  try {
    return JSON.parse(await fsp.readFile(path.join(home, 'config.json'), 'utf8'));
  } catch (e) {
    if (e.code === 'ENOENT') return undefined;
    throw e;
  }
}

/** Replace LEURIA_HOME/config.json atomically (write a temp file, rename over). */
export async function replaceConfig(home, config) {
  const tmp = path.join(home, `.config.json.${process.pid}.tmp`);
  await fsp.writeFile(tmp, JSON.stringify(config, null, 2), { mode: 0o600 });
  await fsp.rename(tmp, path.join(home, 'config.json'));
}
