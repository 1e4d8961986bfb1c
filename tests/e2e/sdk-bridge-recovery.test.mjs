// bridge() in headless Chromium when things go wrong: the event stream and the tool channel cut on
// the wire (a proxy between the browser and the engine drops the connections), cancelled answers,
// the page going away, an origin's 4 live sessions, and an engine that stops.
//
// The proxy (startCutProxy) only rewrites Host (the engine answers Host: 127.0.0.1:<its port> only)
// and passes everything else through, Origin and CORS included, so the bridge and the engine behave
// exactly as without it; nothing in the SDK knows it is being tested.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startEngine, startFakeEngine, stopAll, web, poll, hermetic, TOKEN_RE } from './helpers.mjs';
import { startSite, launchBrowser, openPage, sdkSkipReason } from './lib/sdk-page.mjs';
import {
  setupBridgePage, bridgeState, waitBridge, pairPage, storedToken, chatInPage, streamed, startCutProxy, assertPlainWords, PRODUCTS,
} from './lib/sdk-bridge.mjs';

const skip = sdkSkipReason();

let browser;
const closers = [];

/** A scripted ACP agent engine (CLI mode, hermetic), a proxy in front of it, and a paired page using the proxy. */
async function setup({ mode, env = {}, viaProxy = true } = {}) {
  const eng = await startFakeEngine({ mode, env, files: { 'providers.json': { providers: await hermetic([]) } } });
  const proxy = await startCutProxy(eng.port);
  closers.push(proxy.close);
  const site = await startSite();
  closers.push(site.close);
  const page = await openPage(browser, site.url());
  const url = viaProxy ? proxy.url : eng.base;
  await setupBridgePage(page, { url });
  return { eng, proxy, site, page, url };
}

/** Session ids the engine prepared for `origin` (from its log). */
function preparedFor(eng, origin) {
  return eng.stderrLines.filter((l) => l.includes('event=session.prepared') && l.includes(`origin=${origin}`)).map((l) => /id=(\S+)/.exec(l)[1]);
}

async function sessionStatus(eng, origin, token, id) {
  return (await web(eng, origin, `/session/${id}`, { token })).json?.status;
}

/** Starts a run in the page without waiting for it; returns its promise. */
function startChat(page, request) {
  const done = chatInPage(page, request);
  done.catch(() => {});
  return done;
}

/** Waits until the page's current run streamed at least `n` text events. */
async function untilTextEvents(page, n) {
  await page.waitForFunction((k) => (window.liveEvents || []).filter((e) => e.type === 'text').length >= k, n, { timeout: 15000, polling: 20 });
}

describe('bridge() recovery in the browser', { skip, timeout: 240000 }, () => {
  before(async () => {
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close().catch(() => {});
    await Promise.all(closers.map((c) => c().catch(() => {})));
    await stopAll();
  });

  describe('dropped connections', () => {
    it('nothing reaches the engine before the click, not even a preflight', async () => {
      const { eng, proxy, page, url } = await setup();
      await waitBridge(page, { status: 'needs-action' });
      await page.waitForTimeout(1200);
      assert.deepEqual(proxy.requests, []);
      await pairPage(browser, page, eng);
      assert.ok(proxy.requests.some((r) => r.method === 'OPTIONS' && r.path === '/connect/claim'), 'the claim went through the proxy');
      assert.match(await storedToken(page, url), TOKEN_RE);
    });

    it('a stream cut mid-answer is reopened, and the replayed text is not repeated', async () => {
      const { eng, proxy, page } = await setup({ mode: 'slow', env: { FAKE_ACP_CHUNKS: 15, FAKE_ACP_DELAY_MS: 150 } });
      await pairPage(browser, page, eng);
      const done = startChat(page, { prompt: 'Count for me' });
      await untilTextEvents(page, 3);
      assert.equal(proxy.cut(/\/stream$/), 1, 'one stream to cut');
      const r = await done;
      assert.equal(r.error, undefined, JSON.stringify(r));
      const expected = Array.from({ length: 15 }, (_, i) => `chunk ${i}\n`).join('');
      assert.equal(r.text, expected);
      assert.equal(streamed(r.events), expected, 'every chunk once, in order');
      assert.equal(proxy.requests.filter((q) => q.method === 'GET' && q.path.endsWith('/stream')).length, 2, 'reopened once');
    });

    it('a stream cut just before the turn ends comes back after it: the replayed turn_completed completes the answer', async () => {
      const { eng, proxy, page } = await setup({ mode: 'slow', env: { FAKE_ACP_CHUNKS: 15, FAKE_ACP_DELAY_MS: 100 } });
      await pairPage(browser, page, eng);
      const done = startChat(page, { prompt: 'Count for me' });
      await untilTextEvents(page, 10);
      proxy.hold(/\/stream$/, 2500);  // the turn ends (5 more chunks, 0.5 s) while the stream is away
      assert.equal(proxy.cut(/\/stream$/), 1, 'one stream to cut');
      const r = await done;
      assert.equal(r.error, undefined, JSON.stringify(r));
      const expected = Array.from({ length: 15 }, (_, i) => `chunk ${i}\n`).join('');
      assert.equal(r.text, expected);
      assert.equal(streamed(r.events), expected, 'the missed end streamed once, after the rest');
    });

    it('a tool channel cut between turns is reopened with the same channel token, and the tools declared again', async () => {
      const { eng, proxy, page } = await setup({ mode: 'mcp-call', env: { FAKE_ACP_CALL_TOOL: 'search_products', FAKE_ACP_CALL_ARGS: '{"query":"blue mug"}' } });
      await pairPage(browser, page, eng);
      await page.evaluate(() => (window.conv = window.ai.conversation({ tools: [window.pageTools.search_products] })));
      const t1 = await chatInPage(page, { conversation: 'conv', prompt: 'Find a blue mug' });
      assert.match(t1.text ?? '', /tool result: \[\{"name":"Celadon mug"/, JSON.stringify(t1));
      const channels = () => proxy.requests.filter((q) => q.upgrade && q.path.startsWith('/webmcp/channel/'));
      assert.equal(channels().length, 1);
      assert.equal(proxy.cut(/^\/webmcp\/channel\//), 1, 'one channel to cut');
      assert.ok(await poll(() => channels().length === 2, { timeoutMs: 5000, intervalMs: 50 }), 'reopened');
      const [first, second] = channels();
      assert.equal(second.path, first.path, 'same channel, same token');
      assert.equal(proxy.requests.filter((q) => q.upgrade && q.path === '/webmcp/register').length, 1, 'registered once');

      const t2 = await chatInPage(page, { conversation: 'conv', prompt: 'And a green one?' });
      assert.equal(t2.error, undefined, JSON.stringify(t2));
      assert.match(t2.text, /tool result: \[\{"name":"Celadon mug","price":24,"stock":3\}\]/, 'the tool answered on the new channel');
      assert.deepEqual(t2.events.find((e) => e.type === 'tool-result').result, PRODUCTS);
      assert.equal(await page.evaluate(() => window.calls.length), 2);
      assert.equal(preparedFor(eng, new URL(page.url()).origin).length, 1, 'the same engine session');
    });
  });

  describe('the wire', () => {
    it('the stream opens and the tools are declared before approve; the engine\'s pings get pongs', async () => {
      const eng = await startFakeEngine({ mode: 'mcp-call', env: { FAKE_ACP_CALL_TOOL: 'search_products', FAKE_ACP_CALL_ARGS: '{"query":"mug"}' }, timings: { pingMs: 200 }, files: { 'providers.json': { providers: await hermetic([]) } } });
      const site = await startSite();
      closers.push(site.close);
      const page = await openPage(browser, site.url());
      await setupBridgePage(page, { url: eng.base });
      await pairPage(browser, page, eng);
      const wire = [];
      page.on('request', (r) => wire.push(`${r.method()} ${new URL(r.url()).pathname}`));
      page.on('websocket', (ws) => {
        wire.push(`open ${new URL(ws.url()).pathname}`);
        ws.on('framesent', (f) => wire.push(`sent ${f.payload}`));
        ws.on('framereceived', (f) => wire.push(`received ${f.payload}`));
      });
      await page.evaluate(() => (window.conv = window.ai.conversation({ tools: [window.pageTools.search_products] })));
      const t1 = await chatInPage(page, { conversation: 'conv', prompt: 'Hi' });
      assert.match(t1.text ?? '', /tool result:/, JSON.stringify(t1));
      await page.waitForTimeout(700);
      const at = (pred) => wire.findIndex(pred);
      const approve = at((l) => /^POST \/session\/[^/]+\/approve$/.test(l));
      assert.ok(approve > 0, wire.join('\n'));
      assert.ok(at((l) => /^GET \/session\/[^/]+\/stream$/.test(l)) < approve, 'stream before approve');
      assert.ok(at((l) => l.startsWith('sent') && l.includes('"type":"register"')) < approve, 'registered before approve');
      const ack = at((l) => l.startsWith('received') && l.includes('"type":"ack"') && l.includes('search_products'));
      assert.ok(ack > 0 && ack < approve, 'search_products declared (and acknowledged) before approve');
      const declared = JSON.parse(wire.find((l) => l.startsWith('sent') && l.includes('registerTool')).slice(5));
      assert.deepEqual(declared, { type: 'registerTool', name: 'search_products', description: 'Search products. Returns name, price and stock.', inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } });
      const call = JSON.parse(wire.find((l) => l.startsWith('received') && l.includes('"callTool"')).slice(9));
      const answer = JSON.parse(wire.find((l) => l.startsWith('sent') && l.includes('"toolResponse"')).slice(5));
      assert.deepEqual(answer, { type: 'toolResponse', id: call.id, result: PRODUCTS });
      assert.ok(wire.some((l) => l === 'received {"type":"ping"}'), 'the engine pinged');
      assert.ok(wire.filter((l) => l === 'sent {"type":"pong"}').length >= 2, 'the page answered');
    });
  });

  describe('cancel', () => {
    it('a cancelled one-off chat cancels its engine session', async () => {
      const { eng, page, site, url } = await setup({ mode: 'slow', env: { FAKE_ACP_CHUNKS: 40, FAKE_ACP_DELAY_MS: 100 }, viaProxy: false });
      await pairPage(browser, page, eng);
      const done = startChat(page, { prompt: 'Count slowly' });
      await untilTextEvents(page, 2);
      await page.evaluate(() => window.currentRun.cancel());
      const r = await done;
      assert.equal(r.error?.name, 'AbortError', JSON.stringify(r.error));
      const token = await storedToken(page, url);
      const [id] = preparedFor(eng, site.origin);
      assert.ok(await poll(async () => (await sessionStatus(eng, site.origin, token, id)) === 'cancelled'));
    });

    it('a cancelled conversation turn stops the turn and keeps the session for the next one', async () => {
      const { eng, page, site, url } = await setup({ mode: 'slow', env: { FAKE_ACP_CHUNKS: 40, FAKE_ACP_DELAY_MS: 100 }, viaProxy: false });
      await pairPage(browser, page, eng);
      await page.evaluate(() => (window.conv = window.ai.conversation()));
      const done = startChat(page, { conversation: 'conv', prompt: 'Count slowly' });
      await untilTextEvents(page, 2);
      await page.evaluate(() => window.currentRun.cancel());
      assert.equal((await done).error?.name, 'AbortError');
      const token = await storedToken(page, url);
      const [id] = preparedFor(eng, site.origin);
      assert.ok(await poll(async () => (await sessionStatus(eng, site.origin, token, id)) === 'idle', { timeoutMs: 5000 }), 'the turn stopped, the session lives');
      const cancels = eng.readLog().filter((e) => e.kind === 'cancel');
      assert.equal(cancels.length, 1, 'the agent was told to stop the turn');
      // The next turn (the agent answers 40 slow chunks again: cut it short with a second cancel
      // once it has visibly started in the same session).
      const next = startChat(page, { conversation: 'conv', prompt: 'Again' });
      await untilTextEvents(page, 1);
      await page.evaluate(() => window.currentRun.cancel());
      await next;
      assert.equal(preparedFor(eng, site.origin).length, 1, 'one session for both turns');
    });
  });

  describe('sessions', () => {
    it('leaving the page closes its sessions (keepalive)', async () => {
      const { eng, page, site, url } = await setup({ viaProxy: false });
      await pairPage(browser, page, eng);
      await page.evaluate(() => (window.conv = window.ai.conversation()));
      const t1 = await chatInPage(page, { conversation: 'conv', prompt: 'Hello' });
      assert.equal(t1.text, 'echo: Hello');
      const token = await storedToken(page, url);
      const [id] = preparedFor(eng, site.origin);
      assert.equal(await sessionStatus(eng, site.origin, token, id), 'idle');
      await page.goto('about:blank');
      assert.ok(await poll(async () => (await sessionStatus(eng, site.origin, token, id)) === 'completed', { timeoutMs: 5000 }), 'closed on unload');
    });

    it('an origin\'s 4 live sessions: the fifth says so in plain words (busy), and works once one closes', async () => {
      const { eng, page } = await setup({ viaProxy: false });
      await pairPage(browser, page, eng);
      await page.evaluate(() => [0, 1, 2, 3, 4].forEach((i) => (window[`c${i}`] = window.ai.conversation())));
      for (let i = 0; i < 4; i++) assert.equal((await chatInPage(page, { conversation: `c${i}`, prompt: `Hello ${i}` })).text, `echo: Hello ${i}`);
      const fifth = await chatInPage(page, { conversation: 'c4', prompt: 'Hello 4' });
      assert.equal(fifth.error?.code, 'busy', JSON.stringify(fifth));
      assertPlainWords(fifth.error.message, 'busy');
      assert.match(fifth.error.detail, /Too many sessions/);
      await page.evaluate(() => window.c0.close());
      const again = await chatInPage(page, { conversation: 'c4', prompt: 'Hello again' });
      assert.equal(again.error, undefined, JSON.stringify(again));
      // A new session: the conversation so far (the turn that failed kept the visitor's message) comes first.
      assert.match(again.text, /^echo: Here is our conversation so far:\n\nUser: Hello 4\n\nNow the user says:\nHello again$/);
    });

    it('an engine that stops: "isn\'t running, or no longer knows this site", connect offered, and the token is kept', async () => {
      const eng = await startEngine();
      const s = await startSite();
      closers.push(s.close);
      const page = await openPage(browser, s.url());
      await setupBridgePage(page, { url: eng.base });
      await pairPage(browser, page, eng);
      await eng.stop();
      await page.evaluate(() => window.ai.detect());
      const state = await bridgeState(page);
      assert.equal(state.status, 'unavailable');
      // A silent engine: the page can't tell a stopped Leuria from one that no longer knows it.
      assert.equal(state.detail, "Leuria isn't running, or no longer knows this site.");
      assert.equal(state.action, 'connect');
      assert.match(await storedToken(page, eng.base), TOKEN_RE);
    });
  });
});
