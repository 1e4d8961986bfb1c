// What <leuria-connect> shows (src/ui/connect-view.ts, a pure function of the state), for an own
// AI recognized by its flag: the retry after a connect that got no answer, and the Cancel link
// while waiting for the visitor's answer in Leuria.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLeuria } from '../dist/leuria.js';
import { bundleForTests } from './bundle-for-tests.mjs';
import { scripted, quiet } from './scripted-provider.mjs';

const { connectView } = await bundleForTests('connect-view', "export { connectView } from './src/ui/connect-view.ts';");

const WAITING = 'Waiting for you to allow this site in Leuria…';
const NOT_INSTALLED = "Leuria isn't running, or isn't installed.";
const idle = { connecting: new Set(), error: null };

/** The state of [own AI 'leuria' (flagged), site], once detected. */
async function stateWith(own, extra = {}) {
  const leuria = scripted({ id: 'leuria', label: 'Your AI', ownAI: true, ...own });
  const site = scripted({ id: 'site', label: "This site's AI", locality: 'site' });
  const ai = createLeuria(quiet({ providers: [leuria, site] }));
  await ai.detect();
  if (extra.choose) ai.chooseInstead(extra.choose);
  const state = ai.getState();
  ai.destroy();
  return state;
}

const labels = (view) => [view.primary, view.disconnect, ...view.choices].filter(Boolean).map((b) => b.label);

test('an own AI that got no answer shows the words and "Try again"', async () => {
  const state = await stateWith({ status: 'unavailable', action: 'connect', detail: NOT_INSTALLED });
  assert.equal(state.pending, 'leuria');
  const view = connectView(state, idle);
  assert.equal(view.status, NOT_INSTALLED);
  assert.equal(view.tone, 'problem');
  assert.deepEqual(view.primary, { key: 'primary:leuria', provider: 'leuria', kind: 'connect', label: 'Try again' });
  assert.deepEqual(labels(view), ['Try again', "Use this site's AI"]);
});

test('with another AI picked, the own AI is offered again, with "Connect your AI"', async () => {
  const state = await stateWith({ status: 'unavailable', action: 'connect', detail: NOT_INSTALLED }, { choose: 'site' });
  const view = connectView(state, idle);
  assert.equal(view.status, "Using this site's AI");
  assert.equal(view.primary.label, 'Connect your AI');
  assert.equal(view.primary.provider, 'leuria');
});

test('an own AI not running (no action) offers nothing to click for it', async () => {
  const view = connectView(await stateWith({ status: 'unavailable', detail: "Leuria isn't running." }), idle);
  assert.equal(view.status, "Leuria isn't running.");
  assert.equal(view.primary, null);
});

test('while waiting for the visitor, a Cancel link; once cancelled, the invitation again', async () => {
  const state = await stateWith({ status: 'needs-action', action: 'connect', detail: WAITING });
  const waiting = connectView(state, { connecting: new Set(['leuria']), error: null });
  assert.equal(waiting.status, WAITING);
  assert.equal(waiting.tone, 'waiting');
  assert.equal(waiting.primary, null);
  assert.deepEqual(waiting.disconnect, { key: 'cancel:leuria', provider: 'leuria', kind: 'cancel', label: 'Cancel' });

  const dismissed = new Map([['leuria', WAITING]]);
  const cancelled = connectView(state, { connecting: new Set(), error: null, dismissed });
  assert.equal(cancelled.status, 'Connect Leuria to use your own AI on this site.');
  assert.equal(cancelled.tone, 'action');
  assert.equal(cancelled.primary.label, 'Connect your AI');
  assert.equal(cancelled.disconnect, null);

  // News from the attempt the visitor stopped waiting for still shows.
  const denied = await stateWith({ status: 'needs-action', action: 'connect', detail: 'This site wasn\'t allowed in Leuria.' });
  assert.equal(connectView(denied, { connecting: new Set(), error: null, dismissed }).status, "This site wasn't allowed in Leuria.");
});

test('no Cancel once Leuria did not answer: "Try again" instead', async () => {
  const state = await stateWith({ status: 'unavailable', action: 'connect', detail: NOT_INSTALLED });
  const view = connectView(state, { connecting: new Set(['leuria']), error: null });
  assert.equal(view.status, NOT_INSTALLED);
  assert.equal(view.disconnect, null);
});

test('ready: "Using <model>", with Disconnect; a connect-action provider without the flag is not the own AI', async () => {
  const ready = connectView(await stateWith({ status: 'ready', model: 'Claude Code' }), idle);
  assert.equal(ready.status, 'Using Claude Code');
  assert.equal(ready.disconnect.label, 'Disconnect');

  const other = scripted({ id: 'other', label: 'Other AI', status: 'needs-action', action: 'connect' });
  const site = scripted({ id: 'site', label: "This site's AI", locality: 'site' });
  const ai = createLeuria(quiet({ providers: [other, site] }));
  await ai.detect();
  const view = connectView(ai.getState(), idle);
  ai.destroy();
  assert.equal(view.status, "Using this site's AI", 'not held back: it is no own AI');
  assert.equal(view.primary.label, 'Connect Other AI');
  assert.equal(view.disconnect, null);
});
