// The visitor's own AI: recognized by Provider.ownAI (or the id "bridge"), it holds back the
// providers after it, and after a connect that got no answer (unavailable, with a retry) it still
// needs the visitor: pending, NoProviderError.actionable, and ai.connect()'s first pick.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLeuria, NoProviderError } from '../dist/leuria.js';
import { scripted, quiet } from './scripted-provider.mjs';

const NOT_INSTALLED = { status: 'unavailable', action: 'connect', detail: "Leuria isn't running, or isn't installed." };

test('a provider with ownAI: true holds back the providers after it, whatever its id', async () => {
  const own = scripted({ id: 'leuria', ownAI: true, status: 'needs-action', action: 'connect', connectable: true });
  const site = scripted({ id: 'site', locality: 'site' });
  const ai = createLeuria(quiet({ providers: [own, site] }));
  await ai.detect();
  const state = ai.getState();
  assert.equal(state.providers[0].ownAI, true);
  assert.equal(state.providers[1].ownAI, undefined);
  assert.equal(state.active, null);
  assert.equal(state.pending, 'leuria');
  assert.deepEqual(state.alternatives, ['site']);
  const error = await ai.chat({ prompt: 'hi' }).text().catch((e) => e);
  assert.ok(error instanceof NoProviderError);
  assert.equal(error.actionable, 'leuria');
  assert.deepEqual(error.choices, ['site']);

  await ai.connect();
  assert.equal(own.log.connects, 1);
  assert.equal(ai.getState().active, 'leuria');
  const run = ai.chat({ prompt: 'hi' });
  await run.text();
  assert.equal(run.provider, 'leuria');
  await ai.disconnect();
  assert.equal(own.log.disconnects, 1, 'disconnect() defaults to the own AI');
  ai.destroy();
});

test('without the flag (and not named bridge) a provider holds nothing back', async () => {
  const mine = scripted({ id: 'mine', status: 'needs-action', action: 'connect' });
  const site = scripted({ id: 'site' });
  const ai = createLeuria(quiet({ providers: [mine, site] }));
  await ai.detect();
  assert.equal(ai.getState().active, 'site');
  assert.equal(ai.getState().pending, 'mine');
  assert.equal(ai.getState().providers[0].ownAI, undefined);
  ai.destroy();
});

test('the id "bridge" still counts as the own AI', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect' });
  const site = scripted({ id: 'site' });
  const ai = createLeuria(quiet({ providers: [bridge, site] }));
  await ai.detect();
  assert.equal(ai.getState().active, null);
  assert.equal(ai.getState().providers[0].ownAI, true);
  ai.destroy();
});

test('an own AI unavailable with a retry is pending, actionable, and what connect() retries', async () => {
  const own = scripted({ id: 'leuria', ownAI: true, ...NOT_INSTALLED, connectable: true, afterConnect: NOT_INSTALLED });
  const browser = scripted({ id: 'browser', status: 'needs-action', action: 'download', connectable: true });
  const site = scripted({ id: 'site', locality: 'site' });
  const ai = createLeuria(quiet({ providers: [own, browser, site] }));
  await ai.detect();
  assert.equal(ai.getState().pending, 'leuria');
  assert.deepEqual(ai.getState().alternatives, ['browser', 'site']);
  const error = await ai.chat({ prompt: 'hi' }).text().catch((e) => e);
  assert.equal(error.actionable, 'leuria');

  await ai.connect();
  assert.equal(own.log.connects, 1, 'the retry');
  assert.equal(browser.log.connects, 0, 'never the held-back download');

  // Picked instead: the site answers, and the own AI is still offered (before the active one).
  ai.chooseInstead('site');
  assert.equal(ai.getState().active, 'site');
  assert.equal(ai.getState().pending, 'leuria');
  ai.destroy();
});

test('an own AI unavailable without an action (not running) needs nothing from the visitor', async () => {
  const own = scripted({ id: 'leuria', ownAI: true, status: 'unavailable', detail: "Leuria isn't running.", connectable: true });
  const browser = scripted({ id: 'browser', status: 'needs-action', action: 'download', connectable: true });
  const ai = createLeuria(quiet({ providers: [own, browser] }));
  await ai.detect();
  assert.equal(ai.getState().pending, null);
  const error = await ai.chat({ prompt: 'hi' }).text().catch((e) => e);
  assert.equal(error.actionable, null);
  assert.deepEqual(error.choices, ['browser']);
  await assert.rejects(ai.connect(), /No AI needs a visitor action/);
  assert.equal(browser.log.connects, 0);
  ai.destroy();
});

test('another provider unavailable with an action is not pending: only the own AI retries', async () => {
  const other = scripted({ id: 'other', ...NOT_INSTALLED });
  const ai = createLeuria(quiet({ providers: [other] }));
  await ai.detect();
  assert.equal(ai.getState().pending, null);
  ai.destroy();
});

test('connect() without an id takes the own AI first, even when another action is pending', async () => {
  const download = scripted({ id: 'browser', status: 'needs-action', action: 'download', connectable: true });
  const own = scripted({ id: 'leuria', ownAI: true, status: 'needs-action', action: 'connect', connectable: true });
  const ai = createLeuria(quiet({ providers: [download, own] }));
  await ai.detect();
  assert.equal(ai.getState().pending, 'browser', 'listed first');
  await ai.connect();
  assert.equal(own.log.connects, 1);
  assert.equal(download.log.connects, 0);
  ai.destroy();
});
