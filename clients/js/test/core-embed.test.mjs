// ai.embed(): the cascade with the embed capability.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLeuria, NoProviderError, ProviderError } from '../dist/leuria.js';
import { scripted, quiet, tick } from './scripted-provider.mjs';

const embedder = (options) => scripted({ offers: ['chat', 'embed'], capabilities: ['chat', 'embed'], embeds: true, ...options });

test('embed picks the first provider with the embed capability', async () => {
  const chatOnly = scripted({ id: 'chat' });
  const noModel = embedder({ id: 'bridge', capabilities: ['chat'] });
  const server = embedder({ id: 'server', locality: 'site', embedModelName: 'text-embed' });
  const ai = createLeuria(quiet({ providers: [chatOnly, noModel, server] }));
  const result = await ai.embed(['hello', 'world!']);
  assert.deepEqual(result, { model: 'text-embed', vectors: [[5, 1], [6, 1]], provider: 'server' });
  assert.deepEqual(server.log.embeds[0].texts, ['hello', 'world!']);
  assert.equal(server.log.embeds[0].opts.kind, 'document', 'kind defaults to document');
  assert.ok(server.log.embeds[0].opts.signal instanceof AbortSignal);
  ai.destroy();
});

test('embed passes kind, and follows localOnly and provider', async () => {
  const server = embedder({ id: 'server', locality: 'site' });
  const device = embedder({ id: 'device' });
  const ai = createLeuria(quiet({ providers: [server, device] }));
  assert.equal((await ai.embed(['q'], { kind: 'query', localOnly: true })).provider, 'device');
  assert.equal(device.log.embeds[0].opts.kind, 'query');
  assert.equal((await ai.embed(['q'], { provider: ['device', 'server'] })).provider, 'device');
  assert.equal((await ai.embed(['q'])).provider, 'server');
  ai.destroy();
});

test('embed rejects with NoProviderError when nothing can embed', async () => {
  const bridge = embedder({ id: 'bridge', status: 'needs-action', action: 'connect', capabilities: [] });
  const chatOnly = scripted({ id: 'chat' });
  const ai = createLeuria(quiet({ providers: [bridge, chatOnly] }));
  const error = await ai.embed(['x']).catch((e) => e);
  assert.ok(error instanceof NoProviderError);
  assert.deepEqual(error.needs, ['embed']);
  assert.equal(error.actionable, 'bridge');
  assert.match(error.reasons[1].reason, /embeddings/);
  ai.destroy();
});

test('an empty list needs no call to the provider', async () => {
  const server = embedder({ id: 'server', embedModel: 'e5' });
  const ai = createLeuria(quiet({ providers: [server] }));
  assert.deepEqual(await ai.embed([]), { model: 'e5', vectors: [], provider: 'server' });
  assert.equal(server.log.embeds.length, 0);
  ai.destroy();
});

test('embed checks its input and the answer', async () => {
  const wrong = embedder({ id: 'wrong' });
  wrong.embed = async () => ({ model: 'm', vectors: [[1]] });
  const ai = createLeuria(quiet({ providers: [wrong] }));
  await assert.rejects(ai.embed('text'), /array of strings/);
  await assert.rejects(ai.embed([1]), /array of strings/);
  await assert.rejects(ai.embed(['a'], { kind: 'passage' }), /kind/);
  const error = await ai.embed(['a', 'b']).catch((e) => e);
  assert.ok(error instanceof ProviderError);
  assert.equal(error.code, 'bad_answer');
  ai.destroy();
});

test("the provider's embed errors reach the caller", async () => {
  const failing = embedder({ id: 'bridge', embedError: new ProviderError('bridge', 'no_embedder', 'No embedding model on this computer.') });
  const ai = createLeuria(quiet({ providers: [failing] }));
  await assert.rejects(ai.embed(['a']), { code: 'no_embedder' });
  ai.destroy();
});

test('the signal aborts an embed, even when the provider ignores it', async () => {
  const slow = embedder({ id: 'slow', embedHang: true });
  const ai = createLeuria(quiet({ providers: [slow] }));
  const controller = new AbortController();
  const pending = ai.embed(['a'], { signal: controller.signal });
  await tick(2);
  controller.abort();
  await assert.rejects(pending, { name: 'AbortError' });
  assert.equal(slow.log.embeds[0].opts.signal.aborted, true);
  const early = new AbortController();
  early.abort();
  await assert.rejects(ai.embed(['a'], { signal: early.signal }), { name: 'AbortError' });
  ai.destroy();
});

test('embed after destroy rejects with a clear Error, and destroy aborts embeds in flight', async () => {
  const slow = embedder({ id: 'slow', embedHang: true });
  const ai = createLeuria(quiet({ providers: [slow] }));
  const pending = ai.embed(['a']);
  await tick(2);
  ai.destroy();
  await assert.rejects(pending, { name: 'AbortError' });
  await assert.rejects(ai.embed(['a']), /destroyed/);
});
