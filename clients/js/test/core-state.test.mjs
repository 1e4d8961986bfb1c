// getState() / subscribe(): an immutable snapshot that fits React's useSyncExternalStore.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLeuria } from '../dist/leuria.js';
import { scripted, quiet, deferred, tick } from './scripted-provider.mjs';

test('the snapshot is the same object until something changes, then a new one', async () => {
  const a = scripted({ id: 'a', status: 'needs-action', action: 'connect' });
  const ai = createLeuria(quiet({ providers: [a] }));
  const first = ai.getState();
  assert.equal(ai.getState(), first);
  await ai.detect();
  const second = ai.getState();
  assert.notEqual(second, first);
  assert.equal(ai.getState(), second);
  await ai.detect(); // same report: same snapshot
  assert.equal(ai.getState(), second);
  a.push({ status: 'ready' });
  assert.notEqual(ai.getState(), second);
  assert.equal(ai.getState().providers[0].status, 'ready');
  ai.destroy();
});

test('works as useSyncExternalStore(ai.subscribe, ai.getState): unbound, stable, notified', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria(quiet({ providers: [a] }));
  const { subscribe, getState } = ai; // React calls them unbound
  const seen = [];
  const unsubscribe = subscribe(() => seen.push(getState()));
  // useSyncExternalStore calls getSnapshot twice and compares: it must be the same object.
  assert.equal(getState(), getState());
  await ai.detect();
  assert.equal(seen.length >= 1, true);
  assert.equal(seen.at(-1), getState());
  assert.equal(getState().active, 'a');
  unsubscribe();
  const count = seen.length;
  a.push({ status: 'unavailable' });
  assert.equal(seen.length, count);
  ai.destroy();
});

test('the snapshot is deeply frozen', async () => {
  const ai = createLeuria(quiet({ providers: [scripted({ id: 'a', capabilities: ['chat', 'tools'] })] }));
  await ai.detect();
  const state = ai.getState();
  assert.ok(Object.isFrozen(state));
  assert.ok(Object.isFrozen(state.providers));
  assert.ok(Object.isFrozen(state.providers[0]));
  assert.ok(Object.isFrozen(state.providers[0].capabilities));
  assert.ok(Object.isFrozen(state.providers[0].offers));
  assert.ok(Object.isFrozen(state.alternatives));
  assert.throws(() => state.providers.push({}), TypeError);
  ai.destroy();
});

test('every ProviderState field is there: unknown at first, detecting during the first detection', async () => {
  const gate = deferred();
  const a = scripted({
    id: 'a', label: 'Alpha', locality: 'visitor-cloud', offers: ['chat', 'embed'], detectGate: gate.promise,
    status: 'downloading', capabilities: ['chat'], model: 'Nano', action: 'download', progress: 0.25, detail: 'Downloading.', embedModel: 'e5',
  });
  const quietAi = createLeuria(quiet({ providers: [scripted({ id: 'q' })] }));
  assert.equal(quietAi.getState().providers[0].status, 'unknown');
  quietAi.destroy();

  const ai = createLeuria({ providers: [a], closeOnUnload: false, watchMs: 0 });
  assert.deepEqual(ai.getState().providers[0], { id: 'a', label: 'Alpha', locality: 'visitor-cloud', offers: ['chat', 'embed'], status: 'detecting', capabilities: [] });
  gate.resolve();
  await ai.detect();
  assert.deepEqual(ai.getState().providers[0], {
    id: 'a', label: 'Alpha', locality: 'visitor-cloud', offers: ['chat', 'embed'], status: 'downloading', capabilities: ['chat'],
    model: 'Nano', action: 'download', progress: 0.25, detail: 'Downloading.', embedModel: 'e5',
  });
  ai.destroy();
});

test('later detections keep the status until the answer arrives', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria(quiet({ providers: [a] }));
  await ai.detect();
  const pending = ai.detect();
  assert.equal(ai.getState().providers[0].status, 'ready');
  await pending;
  ai.destroy();
});

test('active, pending and alternatives while the visitor has not connected', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect' });
  const browser = scripted({ id: 'browser', status: 'needs-action', action: 'download' });
  const server = scripted({ id: 'server', locality: 'site' });
  const offline = scripted({ id: 'offline', status: 'unavailable' });
  const ai = createLeuria(quiet({ providers: [bridge, browser, server, offline] }));
  await ai.detect();
  let state = ai.getState();
  assert.equal(state.active, null);
  assert.equal(state.pending, 'bridge');
  assert.deepEqual(state.alternatives, ['browser', 'server']);
  assert.equal(state.chosen, null);

  ai.chooseInstead('server');
  state = ai.getState();
  assert.equal(state.active, 'server');
  assert.equal(state.pending, 'bridge', 'the visitor can still bring their own AI back');
  assert.equal(state.chosen, 'server');
  assert.deepEqual(state.alternatives, ['browser']);

  bridge.push({ status: 'ready', action: undefined });
  state = ai.getState();
  assert.equal(state.active, 'bridge');
  assert.equal('action' in state.providers[0], false, 'a field pushed as undefined is cleared');
  assert.equal(state.pending, null);
  assert.deepEqual(state.alternatives, []);
  ai.destroy();
});

test('fallback: "auto" has no alternatives: the fallback is active', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect' });
  const server = scripted({ id: 'server', locality: 'site' });
  const ai = createLeuria(quiet({ providers: [bridge, server], fallback: 'auto' }));
  await ai.detect();
  const state = ai.getState();
  assert.equal(state.active, 'server');
  assert.equal(state.pending, 'bridge');
  assert.deepEqual(state.alternatives, []);
  ai.destroy();
});

test('pending is only a provider before the active one', async () => {
  const first = scripted({ id: 'first' });
  const later = scripted({ id: 'later', status: 'needs-action', action: 'download' });
  const ai = createLeuria(quiet({ providers: [first, later] }));
  await ai.detect();
  assert.equal(ai.getState().active, 'first');
  assert.equal(ai.getState().pending, null);
  ai.destroy();
});

test('embedder and embedPending follow the embed capability', async () => {
  const bridge = scripted({ id: 'bridge', offers: ['chat', 'embed'], status: 'needs-action', action: 'connect', embeds: true });
  const server = scripted({ id: 'server', locality: 'site', offers: ['chat', 'embed'], capabilities: ['chat', 'embed'], embeds: true });
  const ai = createLeuria(quiet({ providers: [bridge, server], fallback: 'auto' }));
  await ai.detect();
  assert.equal(ai.getState().embedder, 'server');
  assert.equal(ai.getState().embedPending, 'bridge');
  bridge.push({ status: 'ready', capabilities: ['chat'] });
  assert.equal(ai.getState().embedder, 'server', 'ready, but without a local embedding model');
  assert.equal(ai.getState().embedPending, null);
  bridge.push({ capabilities: ['chat', 'embed'], embedModel: 'nomic' });
  assert.equal(ai.getState().embedder, 'bridge');
  ai.destroy();
});

test('ctx.update pushes a change at any time, and a push with nothing new changes nothing', async () => {
  const a = scripted({ id: 'a', status: 'needs-action', action: 'download' });
  const ai = createLeuria(quiet({ providers: [a] }));
  await ai.detect();
  let calls = 0;
  ai.subscribe(() => calls++);
  a.push({ status: 'downloading', progress: 0.5 });
  assert.equal(calls, 1);
  assert.equal(ai.getState().providers[0].progress, 0.5);
  const before = ai.getState();
  a.push({ progress: 0.5 });
  assert.equal(calls, 1);
  assert.equal(ai.getState(), before);
  a.push({ progress: 7 });
  assert.equal(ai.getState().providers[0].progress, 1, 'progress is kept between 0 and 1');
  ai.destroy();
});

test('a listener that throws does not stop the others', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria(quiet({ providers: [a] }));
  const original = console.error;
  const logged = [];
  console.error = (e) => logged.push(e);
  try {
    let second = 0;
    ai.subscribe(() => {
      throw new Error('listener bug');
    });
    ai.subscribe(() => second++);
    await ai.detect(); // unknown → detecting → ready: two changes
    assert.equal(second, 2);
    assert.equal(logged.length, 2);
  } finally {
    console.error = original;
  }
  ai.destroy();
});

test('the same listener subscribed twice is two subscriptions', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria(quiet({ providers: [a] }));
  let calls = 0;
  const listener = () => calls++;
  await ai.detect();
  const off1 = ai.subscribe(listener);
  ai.subscribe(listener);
  a.push({ model: 'M' });
  assert.equal(calls, 2);
  off1();
  a.push({ model: 'N' });
  assert.equal(calls, 3);
  ai.destroy();
});

test('fields a provider reports outside the contract never reach the page', async () => {
  const a = scripted({ id: 'a' });
  a.set({ secret: 'token', status: 'ready' });
  const ai = createLeuria(quiet({ providers: [a] }));
  await ai.detect();
  assert.equal('secret' in ai.getState().providers[0], false);
  await tick();
  ai.destroy();
});
