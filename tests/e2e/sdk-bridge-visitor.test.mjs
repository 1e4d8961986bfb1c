// bridge() in headless Chromium against the real engine, from the visitor's side of things: pairing
// only from their action, a site they revoked in the desktop app (which then stays silent to it) and
// paired again, a conversation that goes on after they disconnected and connected again, and a long
// list of texts to embed (more than the engine takes at once).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startEngine, startFakeEngine, stopAll, web, admin, poll, sleep, hermetic, provider, ollamaFake, closeFakes, fakeVector, OLLAMA_NOMIC, TOKEN_RE,
} from './helpers.mjs';
import { startSite, launchBrowser, openPage, sdkSkipReason } from './lib/sdk-page.mjs';
import {
  setupBridgePage, bridgeState, waitBridge, pairPage, pairPageInApp, storedToken, chatInPage, requestLines, assertPlainWords,
} from './lib/sdk-bridge.mjs';

const skip = sdkSkipReason();

let browser;
const sites = [];

async function bridgePage(url, opts = {}) {
  const s = await startSite();
  sites.push(s);
  const page = await openPage(browser, s.url());
  await setupBridgePage(page, { url, ...opts });
  return { site: s, page };
}

/** Session ids the engine prepared for `origin` (from its -v log). */
function preparedFor(eng, origin) {
  return eng.stderrLines.filter((l) => l.includes('event=session.prepared') && l.includes(`origin=${origin}`)).map((l) => /id=(\S+)/.exec(l)[1]);
}

/**
 * Runs `expression` in the page the way a timer or a network callback would: without a user
 * gesture (page.evaluate runs as one, and so gives the page a fresh user activation).
 */
async function withoutGesture(page) {
  const cdp = await page.context().newCDPSession(page);
  return async (expression) => {
    const r = await cdp.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true, userGesture: false });
    if (r.exceptionDetails) throw new Error(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text);
    return r.result.value;
  };
}

describe('bridge() and the visitor', { skip, timeout: 240000 }, () => {
  before(async () => {
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close().catch(() => {});
    await Promise.all(sites.map((s) => s.close()));
    await closeFakes();
    await stopAll();
  });

  it('connect() outside a click opens no link and sends nothing; the click then pairs', async () => {
    const eng = await startEngine({ args: ['--port', '0', '--no-open', '-v'], files: { 'providers.json': { providers: await hermetic([]) } } });
    const { page } = await bridgePage(eng.base);
    await waitBridge(page, { status: 'needs-action' });
    const run = await withoutGesture(page);
    // The activation page.evaluate gave the page lasts about 5 s: wait until it's gone.
    const deadline = Date.now() + 10000;
    while (await run('navigator.userActivation.isActive')) {
      assert.ok(Date.now() < deadline, 'the user activation never expired');
      await sleep(250);
    }
    assert.equal(await run("window.ai.connect('bridge').then(() => 'settled')"), 'settled');
    const state = JSON.parse(await run("JSON.stringify(window.ai.getState().providers.find((p) => p.id === 'bridge'))"));
    assert.equal(state.status, 'needs-action');
    assert.equal(state.action, 'connect');
    assert.equal(state.detail, 'Click the connect button to connect your AI.');
    assertPlainWords(state.detail, 'outside a click');
    assert.deepEqual(await run('window.links'), []);
    await sleep(500);
    assert.deepEqual(requestLines(eng), [], 'no request reached the engine');

    const ready = await pairPage(browser, page, eng);
    assert.equal(ready.status, 'ready');
    assert.equal((await page.evaluate(() => window.links)).length, 1);
  });

  it('a site revoked in the app: "isn\'t running, or no longer knows this site" with connect offered; a click pairs again with a new token', async () => {
    const eng = await startEngine({ app: true });
    const { site: s, page } = await bridgePage(eng.base, { leuria: { watchMs: 0 } });
    await waitBridge(page, { status: 'needs-action' });
    await pairPageInApp(page, eng);
    const first = await storedToken(page, eng.base);
    assert.match(first, TOKEN_RE);

    const r = await admin(eng, `/admin/sites?origin=${encodeURIComponent(s.origin)}`, { method: 'DELETE' });
    assert.deepEqual(r.json, { removed: true });
    await page.evaluate(() => window.ai.detect());
    const state = await bridgeState(page);
    assert.equal(state.status, 'unavailable');
    assert.equal(state.action, 'connect', 'a click can pair again');
    assert.equal(state.detail, "Leuria isn't running, or no longer knows this site.");
    assertPlainWords(state.detail, 'revoked in the app');
    assert.equal(await storedToken(page, eng.base), first, 'kept: the page can\'t tell it was revoked');

    const ready = await pairPageInApp(page, eng);
    assert.equal(ready.detail, undefined);
    const second = await storedToken(page, eng.base);
    assert.match(second, TOKEN_RE);
    assert.notEqual(second, first, 'the new token replaced the old one');
    assert.equal((await web(eng, s.origin, '/health', { token: second })).json?.paired, true);
  });

  it('a conversation goes on after disconnect() and a new connection, in a new engine session with the history', async () => {
    const eng = await startFakeEngine({ files: { 'providers.json': { providers: await hermetic([]) } } });
    const { site: s, page } = await bridgePage(eng.base);
    await pairPage(browser, page, eng);
    await page.evaluate(() => (window.conv = window.ai.conversation()));
    const t1 = await chatInPage(page, { conversation: 'conv', prompt: 'Hello' });
    assert.equal(t1.text, 'echo: Hello', JSON.stringify(t1));

    await page.evaluate(() => window.ai.disconnect());
    assert.equal((await bridgeState(page)).status, 'needs-action');
    assert.equal(await storedToken(page, eng.base), null);
    await pairPage(browser, page, eng);
    const token = await storedToken(page, eng.base);
    const [firstId] = preparedFor(eng, s.origin);
    assert.ok(await poll(async () => (await web(eng, s.origin, `/session/${firstId}`, { token })).json?.status === 'completed'), 'disconnect closed the first session');

    const t2 = await chatInPage(page, { conversation: 'conv', prompt: 'Still there?' });
    assert.equal(t2.error, undefined, JSON.stringify(t2));
    assert.equal(t2.text, 'echo: Here is our conversation so far:\n\nUser: Hello\n\nAssistant: echo: Hello\n\nNow the user says:\nStill there?');
    assert.equal(preparedFor(eng, s.origin).length, 2);
    assert.equal(await page.evaluate(() => window.conv.messages.length), 4);
  });

  it('embed() of more texts than the engine takes at once: batches of 256, vectors in order, one model', async () => {
    const ollama = await ollamaFake();
    const eng = await startEngine({ files: { 'providers.json': { providers: await hermetic([provider('ollama', 'ollama', ollama.url, 'Ollama')]) } } });
    const { page } = await bridgePage(eng.base);
    await pairPage(browser, page, eng);
    const texts = Array.from({ length: 300 }, (_, i) => `mug ${i}`);
    const out = await page.evaluate((t) => window.ai.embed(t, { kind: 'query' }), texts);
    assert.equal(out.model, OLLAMA_NOMIC);
    assert.equal(out.provider, 'bridge');
    assert.equal(out.vectors.length, 300);
    assert.deepEqual(out.vectors, texts.map((t) => fakeVector(OLLAMA_NOMIC, `search_query: ${t}`)));
  });
});
