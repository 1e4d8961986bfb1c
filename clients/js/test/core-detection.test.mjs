// Detection, page events, connect/disconnect and the page's lifecycle, with a fake window and
// document (this file runs in its own process under node --test).
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createLeuria } from '../dist/leuria.js';
import { scripted, quiet, tick, deferred } from './scripted-provider.mjs';

let page;
beforeEach(() => {
  page = new EventTarget();
  globalThis.window = page;
  globalThis.document = { visibilityState: 'visible' };
});

const fire = (type, props = {}) => page.dispatchEvent(Object.assign(new Event(type), props));

test('attach(ctx) is called once, before the first detect, at creation', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria({ providers: [a], watchMs: 0 });
  assert.equal(a.log.attached, 1);
  assert.deepEqual(a.log.order.slice(0, 2), ['attach', 'detect']);
  await ai.detect();
  assert.equal(a.log.attached, 1);
  ai.destroy();
});

test('autoDetect: false detects nothing on its own; ai.detect() checks by hand', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria({ providers: [a], autoDetect: false, watchMs: 5 });
  fire('focus');
  await tick(20);
  assert.equal(a.log.detects, 0);
  await ai.detect();
  assert.equal(a.log.detects, 1);
  assert.equal(ai.getState().providers[0].status, 'ready');
  ai.destroy();
});

test('regaining focus detects again', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria({ providers: [a], watchMs: 0 });
  await ai.detect();
  const before = a.log.detects;
  a.set({ status: 'unavailable' });
  fire('focus');
  await tick();
  assert.equal(a.log.detects, before + 1);
  assert.equal(ai.getState().providers[0].status, 'unavailable');
  ai.destroy();
});

test('every watchMs while the page is visible, not while hidden', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria({ providers: [a], watchMs: 10 });
  await tick(55);
  const visibleCount = a.log.detects;
  assert.ok(visibleCount >= 3, `detected ${visibleCount} times`);
  document.visibilityState = 'hidden';
  await tick(15);
  const hiddenStart = a.log.detects;
  await tick(40);
  assert.equal(a.log.detects, hiddenStart);
  ai.destroy();
});

test('the default watch is every 5 s: nothing more in the first moments', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria({ providers: [a] });
  await tick(30);
  assert.equal(a.log.detects, 1);
  ai.destroy();
});

test('a detect that throws makes the provider unavailable, with a plain detail', async () => {
  const original = console.error;
  console.error = () => {};
  try {
    const a = scripted({ id: 'a', detectError: new TypeError('x is not a function') });
    const ai = createLeuria(quiet({ providers: [a] }));
    await ai.detect();
    const state = ai.getState().providers[0];
    assert.equal(state.status, 'unavailable');
    assert.equal(state.detail, "Couldn't be checked.");
    ai.destroy();
  } finally {
    console.error = original;
  }
});

test("a detect that throws a ProviderError shows the error's plain words", async () => {
  const { ProviderError } = await import('../dist/leuria.js');
  const a = scripted({ id: 'a', detectError: new ProviderError('a', 'not_running', "Leuria isn't running.") });
  const ai = createLeuria(quiet({ providers: [a] }));
  await ai.detect();
  assert.equal(ai.getState().providers[0].detail, "Leuria isn't running.");
  ai.destroy();
});

test('concurrent detects of one provider are not started twice; focus and the watch join the one in flight', async () => {
  const gate = deferred();
  const a = scripted({ id: 'a', detectGate: gate.promise });
  const ai = createLeuria({ providers: [a], watchMs: 5 });
  await tick();
  fire('focus');
  fire('focus');
  await tick(20);
  assert.equal(a.log.detects, 1, 'the detect at creation is still in flight');
  document.visibilityState = 'hidden'; // the watch stops, so nothing new starts after it
  gate.resolve();
  await tick();
  assert.equal(a.log.detects, 1);
  assert.equal(a.log.maxDetectsInFlight, 1);
  ai.destroy();
});

test('ai.detect() while a detect is in flight runs one more after it: the answer is never older than the call', async () => {
  const gate = deferred();
  const a = scripted({ id: 'a', detectGate: gate.promise });
  const ai = createLeuria({ providers: [a], watchMs: 0 });
  await tick();
  assert.equal(a.log.detects, 1, 'the detect at creation is in flight');
  // The visitor revokes the site in Leuria while that detect is on its way; the page then checks.
  a.set({ status: 'unavailable', detail: 'Revoked.' });
  const first = ai.detect();
  const second = ai.detect();
  gate.resolve();
  await Promise.all([first, second]);
  assert.equal(a.log.detects, 2, 'both calls share the one detect after the one in flight');
  assert.equal(a.log.maxDetectsInFlight, 1);
  assert.equal(ai.getState().providers[0].status, 'unavailable');
  ai.destroy();
});

test('ctx.redetect() schedules a detect; one in flight is followed by a fresh one', async () => {
  const gate = deferred();
  const a = scripted({ id: 'a', detectGate: gate.promise });
  const ai = createLeuria(quiet({ providers: [a] }));
  const running = ai.detect();
  a.redetect();
  await tick();
  a.set({ model: 'New model' });
  gate.resolve();
  await running;
  await tick();
  assert.equal(a.log.detects, 2);
  assert.equal(a.log.maxDetectsInFlight, 1);
  assert.equal(ai.getState().providers[0].model, 'New model');
  ai.destroy();
});

test('connect() calls provider.connect synchronously, then detects again', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect', connectable: true });
  const ai = createLeuria(quiet({ providers: [bridge] }));
  await ai.detect();
  assert.equal(ai.getState().pending, 'bridge');
  const done = ai.connect();
  assert.equal(bridge.log.connects, 1, 'inside the click, before any await');
  await done;
  assert.equal(ai.getState().providers[0].status, 'ready');
  assert.equal(ai.getState().active, 'bridge');
  ai.destroy();
});

test('connect(id) runs that provider action; without id, never a held-back one', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect', connectable: true });
  const browser = scripted({ id: 'browser', status: 'needs-action', action: 'download', connectable: true });
  const ai = createLeuria(quiet({ providers: [bridge, browser] }));
  await ai.detect();
  await ai.connect('browser');
  assert.equal(browser.log.connects, 1);
  assert.equal(bridge.log.connects, 0);
  assert.equal(ai.getState().providers[1].status, 'ready');
  ai.destroy();

  const held = scripted({ id: 'bridge', status: 'unavailable', connectable: true });
  const download = scripted({ id: 'browser', status: 'needs-action', action: 'download', connectable: true });
  const other = createLeuria(quiet({ providers: [held, download] }));
  await other.detect();
  assert.equal(other.getState().pending, null, 'held back: an alternative, not the pending action');
  await assert.rejects(other.connect(), /No AI needs a visitor action/);
  assert.equal(download.log.connects, 0, "a plain connect() doesn't start the browser model's download");
  other.destroy();

  const first = scripted({ id: 'first' });
  const after = scripted({ id: 'after', status: 'needs-action', action: 'connect', connectable: true });
  const third = createLeuria(quiet({ providers: [first, after] }));
  await third.detect();
  assert.equal(third.getState().pending, null, 'after the active one: not pending');
  await third.connect();
  assert.equal(after.log.connects, 1, 'still the first chat provider needing the visitor');
  third.destroy();
});

test('connect() rejects clearly when there is nothing to do, and passes on a failed connect', async () => {
  const ready = scripted({ id: 'a' });
  const noConnect = scripted({ id: 'b', status: 'needs-action', action: 'connect' });
  const failing = scripted({ id: 'c', status: 'needs-action', action: 'connect', connectable: true, connectError: new Error('No answer from Leuria.') });
  const ai = createLeuria(quiet({ providers: [ready, noConnect, failing] }));
  await assert.rejects(ai.connect(), /No AI needs a visitor action/);
  await ai.detect();
  await assert.rejects(ai.connect('b'), /nothing to connect/);
  await assert.rejects(ai.connect('zzz'), /Unknown provider/);
  const before = failing.log.detects;
  await assert.rejects(ai.connect('c'), /No answer from Leuria/);
  assert.equal(failing.log.detects, before + 1, 'detected again after the failed connect');
  ai.destroy();
});

test('disconnect() defaults to the bridge, else the active provider, and detects again', async () => {
  const bridge = scripted({ id: 'bridge', connectable: true });
  const ai = createLeuria(quiet({ providers: [bridge] }));
  await ai.detect();
  await ai.disconnect();
  assert.equal(bridge.log.disconnects, 1);
  assert.equal(ai.getState().providers[0].status, 'needs-action');
  ai.destroy();

  const other = scripted({ id: 'other', connectable: true });
  const ai2 = createLeuria(quiet({ providers: [other] }));
  await ai2.detect();
  await ai2.disconnect();
  assert.equal(other.log.disconnects, 1);
  await assert.rejects(createLeuria(quiet({ providers: [] })).disconnect(), /No AI to disconnect/);
  ai2.destroy();
});

test('pagehide closes conversations and destroys providers with keepalive', async () => {
  const bridge = scripted({ id: 'bridge', sessions: true });
  const ai = createLeuria({ providers: [bridge], watchMs: 0 });
  const convo = ai.conversation();
  await convo.send('hi').text();
  fire('pagehide');
  assert.deepEqual(bridge.log.sessionCloses, [{ keepalive: true }]);
  assert.deepEqual(bridge.log.destroyed, [{ keepalive: true }]);
  // Restored from the back/forward cache: the conversation goes on with a new session.
  fire('pageshow', { persisted: true });
  await convo.send('again').text();
  assert.equal(bridge.log.sessions.length, 2);
  ai.destroy();
});

test('closeOnUnload: false ignores pagehide', async () => {
  const bridge = scripted({ id: 'bridge', sessions: true });
  const ai = createLeuria({ providers: [bridge], watchMs: 0, closeOnUnload: false });
  await ai.conversation().send('hi').text();
  fire('pagehide');
  assert.deepEqual(bridge.log.sessionCloses, []);
  assert.deepEqual(bridge.log.destroyed, []);
  ai.destroy();
});

test('destroy() stops timers and listeners, destroys providers without keepalive', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria({ providers: [a], watchMs: 5 });
  await tick(12);
  ai.destroy();
  assert.deepEqual(a.log.destroyed, [{ keepalive: false }]);
  const count = a.log.detects;
  fire('focus');
  fire('pagehide');
  await tick(25);
  assert.equal(a.log.detects, count);
  assert.deepEqual(a.log.destroyed, [{ keepalive: false }]);
  ai.destroy(); // twice is harmless
  assert.equal(a.log.destroyed.length, 1);
  await assert.rejects(ai.connect('a'), /destroyed/);
  await ai.detect();
  assert.equal(a.log.detects, count);
});

test('ctx.update after destroy changes nothing', async () => {
  const a = scripted({ id: 'a' });
  const ai = createLeuria(quiet({ providers: [a] }));
  await ai.detect();
  const state = ai.getState();
  ai.destroy();
  a.push({ status: 'unavailable' });
  assert.equal(ai.getState(), state);
});

test('without window or document the SDK still works', async () => {
  delete globalThis.window;
  delete globalThis.document;
  const a = scripted({ id: 'a' });
  const ai = createLeuria({ providers: [a] });
  assert.equal(await ai.chat({ prompt: 'x' }).text(), 'Hello from a');
  ai.destroy();
});
