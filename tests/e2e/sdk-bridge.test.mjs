// bridge() in headless Chromium against the real engine: pairing from a click (CLI approval page,
// and an app engine that stays silent), revoking, chats whose AI calls a page tool (the engine's own
// tool loop on a scripted OpenAI-compatible model, and a scripted ACP agent), conversations,
// structured answers and embeddings. Recovery (dropped stream and tool channel, cancel, unload) is in
// sdk-bridge-recovery.test.mjs.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startEngine, startFakeEngine, stopAll, runCli, web, admin, poll, hermetic, provider, ollamaFake, closeFakes, fakeVector,
  OLLAMA_NOMIC, TOKEN_RE,
} from './helpers.mjs';
import { startSite, launchBrowser, openPage, approveInBrowser, sdkSkipReason, screenshot } from './lib/sdk-page.mjs';
import {
  setupBridgePage, bridgeState, waitBridge, pairPage, clickConnect, storedToken, chatInPage, streamed, requestLines, assertPlainWords, PRODUCTS,
} from './lib/sdk-bridge.mjs';
import { startOpenAiServer, lastUserMessage } from '../fakes/openai-server.mjs';

const skip = sdkSkipReason();

let browser;
const sites = [];
const servers = [];

async function site() {
  const s = await startSite();
  sites.push(s);
  return s;
}

/** A page on a fresh site, with the bridge pointed at `url`. */
async function bridgePage(url, opts = {}) {
  const s = await site();
  const page = await openPage(browser, s.url());
  await setupBridgePage(page, { url, ...opts });
  return { site: s, page };
}

/** An engine whose AI is the engine's own tool loop on a scripted OpenAI-compatible server. */
async function llmEngine(respond, { args } = {}) {
  const srv = await startOpenAiServer({ respond });
  servers.push(srv);
  const eng = await startEngine({
    args,
    files: {
      'config.json': { agent: 'llm:fake' },
      'providers.json': { providers: await hermetic([provider('fake', 'openai', srv.url, 'Fake')]) },
    },
  });
  return { eng, srv };
}

/** Session ids the engine prepared for `origin` (from its log). */
function preparedFor(eng, origin) {
  return eng.stderrLines.filter((l) => l.includes('event=session.prepared') && l.includes(`origin=${origin}`)).map((l) => /id=(\S+)/.exec(l)[1]);
}

/** The engine's status of a page's session, asked as that page. */
async function sessionStatus(eng, origin, token, id) {
  const r = await web(eng, origin, `/session/${id}`, { token });
  return r.json?.status;
}

const chats = (srv) => srv.requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions');

/** The model script: search_products first, then an answer from the tool's result. */
function searchThenAnswer(body) {
  const tool = body.messages.find((m) => m.role === 'tool');
  if (!tool) return { toolCalls: [{ name: 'search_products', arguments: { query: 'blue mug' } }] };
  const [first] = JSON.parse(tool.content);
  return { text: `We have the ${first.name} for $${first.price}.`, chunkDelayMs: 10 };
}

describe('bridge() in the browser', { skip, timeout: 240000 }, () => {
  before(async () => {
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close().catch(() => {});
    await Promise.all(sites.map((s) => s.close()));
    await Promise.all(servers.map((s) => s.close()));
    await closeFakes();
    await stopAll();
  });

  describe('pairing', () => {
    it('sends nothing before the click, then pairs through the engine\'s approval page', async () => {
      const eng = await startEngine({ args: ['--port', '0', '--no-open', '-v'], files: { 'providers.json': { providers: await hermetic([]) } } });
      const { site: s, page } = await bridgePage(eng.base);
      const first = await waitBridge(page, { status: 'needs-action' });
      assert.equal(first.action, 'connect');
      assertPlainWords(first.detail, 'detail before connecting');
      await page.waitForTimeout(1500); // the first detect, and then some
      assert.deepEqual(requestLines(eng), [], 'no request reached the engine before the click');
      assert.equal((await bridgeState(page)).status, 'needs-action');

      const from = eng.lines.length;
      await page.click('#connect');
      const waiting = await waitBridge(page, { detail: '/Waiting for you to allow this site in Leuria/' });
      assert.equal(waiting.status, 'needs-action');
      const links = await page.evaluate(() => window.links);
      assert.equal(links.length, 1);
      const link = new URL(links[0]);
      assert.equal(`${link.protocol}//${link.host}`, 'leuria://connect');
      assert.equal(link.searchParams.get('origin'), s.origin);
      assert.equal(link.searchParams.get('app'), 'Mug shop');
      assert.match(link.searchParams.get('nonce'), /^[A-Za-z0-9_-]{43}$/);
      assert.equal(link.searchParams.get('tools'), '1');
      await screenshot(page, 'sdk-bridge-waiting');

      await approveInBrowser(browser, eng, { from });
      const ready = await waitBridge(page, { status: 'ready' });
      assert.deepEqual(ready.capabilities, ['chat', 'tools', 'agent', 'images'], 'no embedding model here');
      assert.equal(typeof ready.model, 'string');
      assert.ok(ready.model.length > 0);
      assert.equal(ready.detail, undefined);
      assert.match(await storedToken(page, eng.base), TOKEN_RE);
      const paths = requestLines(eng).map((l) => /path=(\S+)/.exec(l)[1]);
      assert.ok(paths.includes('/connect/claim') && paths.includes('/health'), paths.join(' '));
      const statuses = (await page.evaluate(() => window.states.map((st) => st.providers[0].status)));
      assert.ok(statuses.indexOf('needs-action') < statuses.lastIndexOf('ready'), statuses.join(' '));
      assert.equal(await page.evaluate(() => window.connectError), undefined);
    });

    it('a No in the approval page: needs-action again, in plain words, with no token', async () => {
      const eng = await startEngine();
      const { page } = await bridgePage(eng.base);
      const state = await pairPage(browser, page, eng, { allow: false });
      assert.equal(state.status, 'needs-action');
      assert.equal(state.action, 'connect');
      assert.match(state.detail, /wasn't allowed/);
      assertPlainWords(state.detail, 'denied');
      assert.equal(await storedToken(page, eng.base), null);
    });

    it('an app engine that never got the link: "isn\'t running" after about 10 s, and a retry pairs', async () => {
      const eng = await startEngine({ app: true });
      const { site: s, page } = await bridgePage(eng.base, { needs: { tools: true, effort: 'light' } });
      await waitBridge(page, { status: 'needs-action' });
      const t0 = Date.now();
      await page.click('#connect');
      const gaveUp = await waitBridge(page, { status: 'unavailable' }, 16000);
      const seconds = (Date.now() - t0) / 1000;
      assert.ok(seconds >= 9 && seconds < 13, `gave up after ${seconds} s`);
      assert.equal(gaveUp.detail, "Leuria isn't running, or isn't installed.");
      assert.equal(gaveUp.action, 'connect', 'a retry is offered');

      // The retry: this time the system hands the link to the app, which registers it and asks.
      await clickConnect(page);
      await waitBridge(page, { detail: '/Waiting/' });
      const link = new URL((await page.evaluate(() => window.links))[1]);
      assert.equal(link.searchParams.get('effort'), 'light');
      const l = await admin(eng, '/admin/pairing/link', {
        body: { origin: link.searchParams.get('origin'), app: link.searchParams.get('app'), nonce: link.searchParams.get('nonce'), needs: { tools: true, effort: 'light' } },
      });
      assert.equal(l.status, 201, l.body);
      assert.equal(link.searchParams.get('origin'), s.origin);
      await poll(async () => (await admin(eng, '/admin/pairing', { method: 'GET' })).json?.requests?.length === 1);
      const d = await admin(eng, `/admin/pairing/${l.json.requestId}`, { body: { allow: true } });
      assert.equal(d.status, 200, d.body);
      const ready = await waitBridge(page, { status: 'ready' });
      assert.ok(ready.capabilities.includes('tools'));
      assert.match(await storedToken(page, eng.base), TOKEN_RE);
    });
  });

  describe('revoking', () => {
    it('paired:false on /health, or a 401 on the next request, forgets the token and offers connect again', async () => {
      const eng = await startEngine();
      const { site: s, page } = await bridgePage(eng.base, { leuria: { watchMs: 0 } });
      await pairPage(browser, page, eng);
      const revoke = async () => {
        const token = await storedToken(page, eng.base);
        const r = await runCli(['sites', 'revoke', s.origin], { home: eng.home });
        assert.equal(r.code, 0, r.stderr);
        // The running engine reloads its grants: wait until the token stops working.
        assert.ok(await poll(async () => (await web(eng, s.origin, '/health', { token })).json?.paired === false, { timeoutMs: 5000 }));
      };

      // 1. The next check of /health says paired: false.
      await revoke();
      await page.evaluate(() => window.ai.detect());
      let state = await bridgeState(page);
      assert.equal(state.status, 'needs-action');
      assert.equal(state.action, 'connect');
      assert.match(state.detail, /no longer knows this site/);
      assertPlainWords(state.detail, 'revoked');
      assert.equal(await storedToken(page, eng.base), null);

      // 2. Paired again, then revoked while the page still thinks it's ready: the chat gets 401.
      await pairPage(browser, page, eng);
      await revoke();
      assert.equal((await bridgeState(page)).status, 'ready', 'not checked again yet');
      const r = await chatInPage(page, { prompt: 'Hello' });
      assert.equal(r.error?.code, 'not_connected', JSON.stringify(r));
      assertPlainWords(r.error.message, 'the chat error');
      assert.match(r.error.detail, /401/);
      state = await waitBridge(page, { status: 'needs-action' });
      assert.equal(state.action, 'connect');
      assert.equal(await storedToken(page, eng.base), null);
    });
  });

  describe('chat with a page tool', () => {
    it('the engine\'s tool loop (OpenAI-compatible model): the tool runs in the page, text streams, the session closes', async () => {
      const { eng, srv } = await llmEngine(searchThenAnswer, { args: ['--port', '0', '--no-open', '-v'] });
      const { site: s, page } = await bridgePage(eng.base);
      const ready = await pairPage(browser, page, eng);
      assert.match(ready.model, /Fake/);
      const r = await chatInPage(page, { prompt: 'Find a blue mug', tools: ['search_products'] });
      assert.equal(r.error, undefined, JSON.stringify(r));
      assert.equal(r.provider, 'bridge');
      assert.equal(r.text, 'We have the Celadon mug for $24.');
      const types = r.events.map((e) => e.type);
      assert.equal(types[0], 'start');
      assert.equal(r.events[0].provider, 'bridge');
      assert.equal(types.at(-1), 'finish');
      const call = r.events.find((e) => e.type === 'tool-call');
      const result = r.events.find((e) => e.type === 'tool-result');
      assert.equal(call.name, 'search_products');
      assert.deepEqual(call.args, { query: 'blue mug' });
      assert.equal(result.id, call.id);
      assert.deepEqual(result.result, PRODUCTS);
      assert.ok(types.indexOf('tool-result') < types.indexOf('text'), types.join(' '));
      assert.ok(r.events.filter((e) => e.type === 'text').length > 1, 'streamed in pieces');
      assert.equal(streamed(r.events), r.text);
      const finish = r.events.at(-1);
      assert.equal(finish.message.metadata.provider, 'bridge');
      assert.equal(finish.message.role, 'assistant');
      assert.deepEqual(await page.evaluate(() => window.calls), [{ query: 'blue mug' }]);
      // The model got the page's answer as the tool's result.
      const second = chats(srv)[1].body;
      assert.equal(second.messages.find((m) => m.role === 'tool').content, JSON.stringify(PRODUCTS));
      assert.ok(second.tools.some((t) => t.function.name === 'search_products'));
      // A one-off chat gives its session back.
      const token = await storedToken(page, eng.base);
      const [id] = preparedFor(eng, s.origin);
      assert.ok(await poll(async () => (await sessionStatus(eng, s.origin, token, id)) === 'completed'));
    });

    it('a scripted ACP agent calls the page tool over MCP: reasoning, text and the tool\'s result', async () => {
      const eng = await startFakeEngine({
        mode: 'mcp-call',
        env: { FAKE_ACP_CALL_TOOL: 'search_products', FAKE_ACP_CALL_ARGS: JSON.stringify({ query: 'blue mug' }) },
        files: { 'providers.json': { providers: await hermetic([]) } },
      });
      const { page } = await bridgePage(eng.base);
      const ready = await pairPage(browser, page, eng);
      assert.equal(ready.model, 'Fake');
      const r = await chatInPage(page, { prompt: 'Find a blue mug', tools: ['search_products'], system: 'You sell mugs.' });
      assert.equal(r.error, undefined, JSON.stringify(r));
      // Agents other than Claude Code get the system prompt ahead of the first prompt.
      assert.equal(r.text, `echo: <system>\nYou sell mugs.\n</system>\n\nFind a blue mug\ntool result: ${JSON.stringify(PRODUCTS)}`);
      assert.equal(streamed(r.events), r.text);
      assert.equal(r.events.filter((e) => e.type === 'reasoning').map((e) => e.text).join(''), 'Thinking.');
      const call = r.events.find((e) => e.type === 'tool-call');
      assert.equal(call.name, 'search_products');
      assert.deepEqual(call.args, { query: 'blue mug' });
      assert.deepEqual(r.events.find((e) => e.type === 'tool-result').result, PRODUCTS);
      assert.equal(r.events.at(-1).message.metadata.provider, 'bridge');
      assert.deepEqual(await page.evaluate(() => window.calls), [{ query: 'blue mug' }]);
      const listed = eng.readLog().find((e) => e.kind === 'mcp-tools');
      assert.deepEqual(listed.tools.map((t) => t.name ?? t), ['search_products']);
    });

    it('a schema: the prompt asks for JSON, and run.object() gets it', async () => {
      const { eng, srv } = await llmEngine((body) => ({
        text: /only a JSON value that matches this JSON Schema/.test(lastUserMessage(body)) ? '{"name":"Celadon mug","price":24}' : 'Sure! A celadon mug.',
      }));
      const { page } = await bridgePage(eng.base);
      await pairPage(browser, page, eng);
      const schema = { type: 'object', properties: { name: { type: 'string' }, price: { type: 'number' } }, required: ['name', 'price'] };
      const r = await chatInPage(page, { prompt: 'Suggest a mug', schema });
      assert.equal(r.error, undefined, JSON.stringify(r));
      assert.deepEqual(JSON.parse(r.text), { name: 'Celadon mug', price: 24 });
      assert.ok(lastUserMessage(chats(srv)[0].body).includes(JSON.stringify(schema)));
    });
  });

  describe('images and failures', () => {
    // A 1×1 transparent PNG.
    const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

    it('an image goes to the AI as an attachment', async () => {
      const eng = await startFakeEngine({ files: { 'providers.json': { providers: await hermetic([]) } } });
      const { page } = await bridgePage(eng.base);
      await pairPage(browser, page, eng);
      const r = await chatInPage(page, { prompt: 'What is this?', attachments: [{ mimeType: 'image/png', data: PNG }] });
      assert.equal(r.error, undefined, JSON.stringify(r));
      assert.equal(r.text, 'echo: What is this?\n[image image/png]');
      const prompt = eng.readLog().find((e) => e.kind === 'prompt');
      assert.deepEqual(prompt.params.prompt.find((b) => b.type === 'image'), { type: 'image', mimeType: 'image/png', data: PNG });
    });

    it('an AI that fails mid-answer: a ProviderError in plain words, the engine\'s message in detail', async () => {
      const eng = await startFakeEngine({ mode: 'crash-on-prompt', files: { 'providers.json': { providers: await hermetic([]) } } });
      const { page } = await bridgePage(eng.base);
      await pairPage(browser, page, eng);
      const r = await chatInPage(page, { prompt: 'Hello' });
      assert.equal(r.error?.name, 'ProviderError', JSON.stringify(r));
      assert.equal(r.error.code, 'failed');
      assertPlainWords(r.error.message, 'failure');
      assert.match(r.error.detail, /exited with code 3/);
      assert.equal(r.events.at(-1).type, 'error');
    });
  });

  describe('conversations', () => {
    it('one warm engine session for every turn; a new one, with the history, when it ends between turns', async () => {
      const { eng, srv } = await llmEngine((body) => (body.messages.some((m) => m.role === 'user' && /blue mug/.test(m.content)) ? searchThenAnswer(body) : { text: `echo: ${lastUserMessage(body)}` }), { args: ['--port', '0', '--no-open', '-v'] });
      const { site: s, page } = await bridgePage(eng.base);
      await pairPage(browser, page, eng);
      await page.evaluate(() => (window.conv = window.ai.conversation({ system: 'You sell mugs.', tools: [window.pageTools.search_products] })));
      const t1 = await chatInPage(page, { conversation: 'conv', prompt: 'Hello' });
      assert.equal(t1.text, 'echo: Hello', JSON.stringify(t1));
      const t2 = await chatInPage(page, { conversation: 'conv', prompt: 'Find a blue mug' });
      assert.equal(t2.text, 'We have the Celadon mug for $24.', JSON.stringify(t2));
      assert.equal(preparedFor(eng, s.origin).length, 1, 'one session for both turns');
      // The engine kept the history: the second turn's request carries the first.
      const req = chats(srv).at(-2).body;
      assert.deepEqual(req.messages.slice(0, 3), [
        { role: 'system', content: 'You sell mugs.' },
        { role: 'user', content: 'Hello' },
        { role: 'assistant', content: 'echo: Hello' },
      ]);

      // The visitor gives the site another model: Leuria ends its sessions. The next turn starts a
      // new one, with the conversation so far in its first prompt.
      const use = await runCli(['sites', 'use', s.origin, 'llm:fake', '--model', 'other-model'], { home: eng.home });
      assert.equal(use.code, 0, use.stderr);
      const token = await storedToken(page, eng.base);
      const [firstId] = preparedFor(eng, s.origin);
      assert.ok(await poll(async () => (await sessionStatus(eng, s.origin, token, firstId)) === 'cancelled', { timeoutMs: 5000 }));
      const t3 = await chatInPage(page, { conversation: 'conv', prompt: 'Thanks' });
      assert.equal(t3.error, undefined, JSON.stringify(t3));
      assert.equal(preparedFor(eng, s.origin).length, 2);
      const fresh = chats(srv).at(-1).body;
      assert.equal(fresh.model, 'other-model');
      const prompt = lastUserMessage(fresh);
      assert.match(prompt, /User: Hello\n\nAssistant: echo: Hello\n\nUser: Find a blue mug\n\nAssistant: We have the Celadon mug for \$24\.\n\nNow the user says:\nThanks$/);
      assert.equal((await page.evaluate(() => window.conv.messages.length)), 6);

      await page.evaluate(() => window.conv.close());
      const [, secondId] = preparedFor(eng, s.origin);
      assert.ok(await poll(async () => (await sessionStatus(eng, s.origin, token, secondId)) === 'completed'));
    });
  });

  describe('embeddings', () => {
    it('the visitor\'s local embedding model: in the state, and ai.embed() through the bridge', async () => {
      const ollama = await ollamaFake();
      const eng = await startEngine({ files: { 'providers.json': { providers: await hermetic([provider('ollama', 'ollama', ollama.url, 'Ollama')]) } } });
      const { page } = await bridgePage(eng.base);
      const ready = await pairPage(browser, page, eng);
      assert.ok(ready.capabilities.includes('embed'), JSON.stringify(ready));
      assert.equal(ready.embedModel, OLLAMA_NOMIC);
      assert.equal(await page.evaluate(() => window.ai.getState().embedder), 'bridge');
      const out = await page.evaluate(() => window.ai.embed(['blue mug'], { kind: 'query' }));
      assert.deepEqual(out, { model: OLLAMA_NOMIC, vectors: [fakeVector(OLLAMA_NOMIC, 'search_query: blue mug')], provider: 'bridge' });

      ollama.embedMode = 'error500';
      const err = await page.evaluate(() => window.ai.embed(['blue mug']).then(() => null, (e) => ({ name: e.name, code: e.code, message: e.message, detail: e.detail })));
      assert.equal(err?.code, 'failed', JSON.stringify(err));
      assert.equal(err.name, 'ProviderError');
      assertPlainWords(err.message, 'embed error');
      assert.match(err.detail, /^502 /);
    });
  });
});
