// The cascade: which provider answers a request, and NoProviderError when none can.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLeuria, NoProviderError } from '../dist/leuria.js';
import { scripted, quiet, deferred } from './scripted-provider.mjs';

async function answeredBy(ai, request) {
  const run = ai.chat(request);
  await run.text();
  return run.provider;
}

test('the first ready provider answers, in the order given', async () => {
  const a = scripted({ id: 'a', status: 'unavailable' });
  const b = scripted({ id: 'b' });
  const c = scripted({ id: 'c' });
  const ai = createLeuria(quiet({ providers: [a, b, c] }));
  assert.equal(await answeredBy(ai, { prompt: 'hi' }), 'b');
  assert.equal(c.log.chats.length, 0);
  ai.destroy();
});

test('tools need the tools capability', async () => {
  const plain = scripted({ id: 'plain', capabilities: ['chat'] });
  const tooled = scripted({ id: 'tooled', capabilities: ['chat', 'tools'] });
  const ai = createLeuria(quiet({ providers: [plain, tooled] }));
  const tools = [{ name: 't', execute: () => 1 }];
  assert.equal(await answeredBy(ai, { prompt: 'hi', tools }), 'tooled');
  assert.equal(await answeredBy(ai, { prompt: 'hi', tools: [] }), 'plain');
  ai.destroy();
});

test('attachments and image parts need the images capability', async () => {
  const plain = scripted({ id: 'plain' });
  const eyes = scripted({ id: 'eyes', capabilities: ['chat', 'images'] });
  const ai = createLeuria(quiet({ providers: [plain, eyes] }));
  assert.equal(await answeredBy(ai, { prompt: 'look', attachments: [{ mimeType: 'image/png', data: 'AAAA' }] }), 'eyes');
  const messages = [{ role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', data: 'AAAA', mimeType: 'image/png' }] }];
  assert.equal(await answeredBy(ai, { messages }), 'eyes');
  ai.destroy();
});

test('a schema needs structured output or tools', async () => {
  const plain = scripted({ id: 'plain', reply: '{}' });
  const tooled = scripted({ id: 'tooled', capabilities: ['chat', 'tools'], reply: '{}' });
  const structured = scripted({ id: 'structured', capabilities: ['chat', 'structured'], reply: '{}' });
  const schema = { type: 'object' };
  let ai = createLeuria(quiet({ providers: [plain, tooled, structured] }));
  assert.equal(await answeredBy(ai, { prompt: 'x', schema }), 'tooled');
  ai.destroy();
  ai = createLeuria(quiet({ providers: [plain, structured, tooled] }));
  assert.equal(await answeredBy(ai, { prompt: 'x', schema }), 'structured');
  ai.destroy();
});

test('localOnly skips providers that are not on the device', async () => {
  const site = scripted({ id: 'server', locality: 'site' });
  const cloud = scripted({ id: 'cloud', locality: 'visitor-cloud' });
  const device = scripted({ id: 'browser', locality: 'device' });
  const ai = createLeuria(quiet({ providers: [site, cloud, device] }));
  assert.equal(await answeredBy(ai, { prompt: 'x' }), 'server');
  assert.equal(await answeredBy(ai, { prompt: 'x', localOnly: true }), 'browser');
  ai.destroy();
});

test('provider: an id or a list uses exactly those, in that order', async () => {
  const a = scripted({ id: 'a' });
  const b = scripted({ id: 'b' });
  const c = scripted({ id: 'c' });
  const ai = createLeuria(quiet({ providers: [a, b, c] }));
  assert.equal(await answeredBy(ai, { prompt: 'x', provider: 'c' }), 'c');
  assert.equal(await answeredBy(ai, { prompt: 'x', provider: ['c', 'b'] }), 'c');
  b.set({ status: 'unavailable' });
  await ai.detect();
  await assert.rejects(ai.chat({ prompt: 'x', provider: ['b'] }).text(), NoProviderError);
  ai.destroy();
});

test('provider: an unknown id fails the run with a clear Error', async () => {
  const ai = createLeuria(quiet({ providers: [scripted({ id: 'a' })] }));
  await assert.rejects(ai.chat({ prompt: 'x', provider: 'nope' }).text(), /Unknown provider "nope".*a/);
  ai.destroy();
});

test('providers after bridge wait while bridge is not ready', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect', capabilities: [] });
  const server = scripted({ id: 'server', locality: 'site' });
  const ai = createLeuria(quiet({ providers: [bridge, server] }));
  const error = await ai.chat({ prompt: 'x' }).text().catch((e) => e);
  assert.ok(error instanceof NoProviderError);
  assert.deepEqual(error.choices, ['server']);
  assert.equal(error.actionable, 'bridge');
  assert.equal(server.log.chats.length, 0);
  ai.destroy();
});

test('providers listed before bridge are never held back', async () => {
  const first = scripted({ id: 'first' });
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect' });
  const ai = createLeuria(quiet({ providers: [first, bridge] }));
  assert.equal(await answeredBy(ai, { prompt: 'x' }), 'first');
  ai.destroy();
});

test('fallback: "auto" lets the others answer at once', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect' });
  const server = scripted({ id: 'server', locality: 'site' });
  const ai = createLeuria(quiet({ providers: [bridge, server], fallback: 'auto' }));
  assert.equal(await answeredBy(ai, { prompt: 'x' }), 'server');
  ai.destroy();
});

test('chooseInstead lets the picked provider answer, and null clears the pick', async () => {
  const bridge = scripted({ id: 'bridge', status: 'unavailable' });
  const browser = scripted({ id: 'browser' });
  const server = scripted({ id: 'server', locality: 'site' });
  const ai = createLeuria(quiet({ providers: [bridge, browser, server] }));
  ai.chooseInstead('server');
  assert.equal(await answeredBy(ai, { prompt: 'x' }), 'server', 'browser is still held back: only the pick answers');
  ai.chooseInstead(null);
  await assert.rejects(ai.chat({ prompt: 'x' }).text(), NoProviderError);
  assert.throws(() => ai.chooseInstead('nope'), /Unknown provider/);
  ai.chooseInstead('server');
  ai.destroy();
  const next = createLeuria(quiet({ providers: [bridge, browser, server] }));
  assert.equal(next.getState().chosen, null, 'the pick lasts for one instance (this page) only');
  next.destroy();
});

test('choices list held-back providers that are ready or that a click would download', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect' });
  const browser = scripted({ id: 'browser', status: 'needs-action', action: 'download' });
  const server = scripted({ id: 'server', locality: 'site' });
  const broken = scripted({ id: 'broken', status: 'unavailable' });
  const ai = createLeuria(quiet({ providers: [bridge, browser, server, broken] }));
  const error = await ai.chat({ prompt: 'x' }).text().catch((e) => e);
  assert.deepEqual(error.choices, ['browser', 'server']);
  assert.equal(error.actionable, 'bridge', 'held-back providers are choices, not the action');
  assert.match(error.message, /Connect/);
  ai.destroy();
});

test('a run cancelled right away never reaches a provider', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria(quiet({ providers: [a] }));
  const run = ai.chat({ prompt: 'x' });
  run.cancel();
  await assert.rejects(run.text(), { name: 'AbortError' });
  assert.equal(a.log.detects + a.log.chats.length, 0);
  ai.destroy();
});

test('a provider named in the request never waits for bridge', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect' });
  const server = scripted({ id: 'server', locality: 'site' });
  const ai = createLeuria(quiet({ providers: [bridge, server] }));
  assert.equal(await answeredBy(ai, { prompt: 'x', provider: 'server' }), 'server');
  ai.destroy();
});

test('once bridge is ready, it answers first and nothing is held back', async () => {
  const bridge = scripted({ id: 'bridge', capabilities: ['chat', 'tools'] });
  const server = scripted({ id: 'server', locality: 'site', capabilities: ['chat', 'images'] });
  const ai = createLeuria(quiet({ providers: [bridge, server] }));
  assert.equal(await answeredBy(ai, { prompt: 'x' }), 'bridge');
  // bridge can't see images: server answers, as bridge being ready lifts the hold.
  assert.equal(await answeredBy(ai, { prompt: 'x', attachments: [{ mimeType: 'image/png', data: 'AA' }] }), 'server');
  ai.destroy();
});

test('NoProviderError lists needs, a plain reason per provider, choices and actionable', async () => {
  const bridge = scripted({ id: 'bridge', label: 'Your AI', status: 'needs-action', action: 'connect', capabilities: [] });
  const browser = scripted({ id: 'browser', status: 'needs-action', action: 'download', capabilities: ['chat', 'structured'] });
  const server = scripted({ id: 'server', locality: 'site', capabilities: ['chat', 'tools'] });
  const ai = createLeuria(quiet({ providers: [bridge, browser, server] }));
  const tools = [{ name: 't', execute: () => 1 }];
  const error = await ai.chat({ prompt: 'x', tools }).text().catch((e) => e);
  assert.ok(error instanceof NoProviderError);
  assert.equal(error.name, 'NoProviderError');
  assert.deepEqual(error.needs, ['chat', 'tools']);
  assert.deepEqual(error.choices, ['server'], 'browser has no tools, so it is no choice for this request');
  assert.equal(error.actionable, 'bridge');
  assert.deepEqual(error.reasons.map((r) => [r.id, r.state]), [['bridge', 'needs-action'], ['browser', 'needs-action'], ['server', 'ready']]);
  assert.equal(error.reasons[0].label, 'Your AI');
  assert.match(error.reasons[0].reason, /connected/);
  assert.match(error.reasons[2].reason, /chooses it instead/);
  for (const { reason } of error.reasons) assert.ok(reason.length > 5 && !/undefined/.test(reason));
  assert.match(error.message, /Connect/);
  ai.destroy();
});

test('NoProviderError names missing capabilities and routing in its reasons', async () => {
  const plain = scripted({ id: 'plain' });
  const site = scripted({ id: 'site', locality: 'site', capabilities: ['chat', 'images'] });
  const ai = createLeuria(quiet({ providers: [plain, site] }));
  const error = await ai.chat({ prompt: 'x', localOnly: true, attachments: [{ mimeType: 'image/png', data: 'AA' }] }).text().catch((e) => e);
  assert.ok(error instanceof NoProviderError);
  assert.deepEqual(error.needs, ['chat', 'images']);
  assert.match(error.reasons[0].reason, /images/);
  assert.match(error.reasons[1].reason, /device/);
  assert.equal(error.actionable, null);
  assert.deepEqual(error.choices, []);
  const named = await ai.chat({ prompt: 'x', provider: 'site', localOnly: true }).text().catch((e) => e);
  assert.match(named.reasons[0].reason, /asked for/);
  ai.destroy();
});

test('actionable: a click would fix a provider that needs a download', async () => {
  const browser = scripted({ id: 'browser', status: 'needs-action', action: 'download', capabilities: ['chat'] });
  const ai = createLeuria(quiet({ providers: [browser] }));
  const error = await ai.chat({ prompt: 'x' }).text().catch((e) => e);
  assert.equal(error.actionable, 'browser');
  ai.destroy();
});

test('a request made right after createLeuria waits for the first detection', async () => {
  const gate = deferred();
  const bridge = scripted({ id: 'bridge', detectGate: gate.promise });
  const server = scripted({ id: 'server', locality: 'site' });
  const ai = createLeuria({ providers: [bridge, server], closeOnUnload: false, watchMs: 0 });
  assert.equal(ai.getState().providers[0].status, 'detecting');
  const run = ai.chat({ prompt: 'x' });
  setTimeout(() => gate.resolve(), 10);
  await run.text();
  assert.equal(run.provider, 'bridge');
  ai.destroy();
});

test('with autoDetect: false, a request detects the providers it needs on demand', async () => {
  const a = scripted({ id: 'a', status: 'unavailable' });
  const b = scripted({ id: 'b' });
  const c = scripted({ id: 'c' });
  const ai = createLeuria(quiet({ providers: [a, b, c] }));
  assert.equal(ai.getState().providers[0].status, 'unknown');
  assert.equal(await answeredBy(ai, { prompt: 'x' }), 'b');
  assert.deepEqual([a.log.detects, b.log.detects, c.log.detects], [1, 1, 0]);
  ai.destroy();
});

test('a provider that keeps reporting "detecting" is waited for once, not forever', async () => {
  const odd = scripted({ id: 'odd', status: 'detecting' });
  const ok = scripted({ id: 'ok' });
  const ai = createLeuria(quiet({ providers: [odd, ok] }));
  assert.equal(await answeredBy(ai, { prompt: 'x' }), 'ok');
  ai.destroy();
});

test('bridge holds back embeddings only when it offers them', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect', offers: ['chat'] });
  const server = scripted({ id: 'server', locality: 'site', offers: ['chat', 'embed'], capabilities: ['chat', 'embed'], embeds: true });
  const ai = createLeuria(quiet({ providers: [bridge, server] }));
  assert.equal((await ai.embed(['a'])).provider, 'server');
  await assert.rejects(ai.chat({ prompt: 'x' }).text(), NoProviderError);
  ai.destroy();
});

test('createLeuria rejects duplicate ids, bad providers and bad options', () => {
  assert.throws(() => createLeuria({ providers: [scripted({ id: 'a' }), scripted({ id: 'a' })] }), /Two providers have the id "a"/);
  assert.throws(() => createLeuria({}), /providers/);
  assert.throws(() => createLeuria({ providers: [{ id: 'x' }] }), /detect\(\) and chat\(\)/);
  assert.throws(() => createLeuria({ providers: [], fallback: 'never' }), /fallback/);
});

test('with no providers every request fails with NoProviderError', async () => {
  const ai = createLeuria(quiet({ providers: [] }));
  const error = await ai.chat({ prompt: 'x' }).text().catch((e) => e);
  assert.ok(error instanceof NoProviderError);
  assert.deepEqual(error.reasons, []);
  ai.destroy();
});
