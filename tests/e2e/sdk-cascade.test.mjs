// @leuria/client in a real browser (headless Chromium): server() against the scripted OpenAI
// server behind the site's own route, browserAI() against a LanguageModel stand-in (this Chromium
// has no built-in model), and the cascade's rules: fallback "auto" and "ask", chooseInstead,
// localOnly, naming a provider, NoProviderError. No engine: bridge() points at a closed port and,
// holding no token, must send nothing at all.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAiServer } from '../fakes/openai-server.mjs';
import { closedPort } from './helpers.mjs';
import { startSite, proxyTo, launchBrowser, sdkSkipReason } from './lib/sdk-page.mjs';
import { languageModelStandIn } from './lib/sdk-fakes.mjs';

const skip = sdkSkipReason();
const ROUTE = '/api/ai/chat/completions';
const TOOL_SCHEMA = { type: 'object', properties: { query: { type: 'string' } }, required: ['query'], additionalProperties: false };

describe('SDK cascade in the browser', { skip, timeout: 120000 }, () => {
  let srv;
  let site;
  let browser;
  let deadPort;
  let respond = () => ({ text: 'Hello from the site.' });
  const chats = () => srv.requests.filter((r) => r.path === '/v1/chat/completions');

  before(async () => {
    srv = await startOpenAiServer({ respond: (body, i) => respond(body, i) });
    site = await startSite({ routes: { [ROUTE]: proxyTo(`${srv.url}/chat/completions`) } });
    browser = await launchBrowser();
    deadPort = await closedPort();
  });
  after(async () => {
    await browser?.close();
    await site?.close();
    await srv?.close();
  });

  /** A fresh page (own storage) with the SDK as window.Leuria, and the LanguageModel stand-in when lm is given. */
  async function freshPage(lm) {
    const context = await browser.newContext();
    if (lm) await context.addInitScript(languageModelStandIn, lm);
    const page = await context.newPage();
    page.logs = [];
    page.engineRequests = [];
    page.on('console', (m) => page.logs.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => page.logs.push(`pageerror: ${e.message}`));
    page.on('request', (r) => r.url().includes(`:${deadPort}`) && page.engineRequests.push(r.url()));
    await page.goto(site.url('/blank.html'));
    await page.waitForFunction(() => window.__sdkLoaded === true, null, { timeout: 10000 });
    return page;
  }

  /** createLeuria in the page as window.ai. spec: which providers, in order, and createLeuria options. */
  async function makeAi(page, spec, options = {}) {
    await page.evaluate(([spec, options, deadPort]) => {
      const { createLeuria, bridge, browserAI, server } = window.Leuria;
      const make = {
        bridge: () => bridge({ app: 'Test shop', url: `http://127.0.0.1:${deadPort}` }),
        browser: () => browserAI(spec.browser ?? {}),
        server: () => server({ url: '/api/ai/chat/completions', ...(spec.server ?? {}) }),
      };
      window.ai = createLeuria({ ...options, providers: spec.order.map((id) => make[id]()) });
    }, [spec, options, deadPort]);
    // Detection done: every provider has a status of its own.
    await page.waitForFunction(() => window.ai.getState().providers.every((p) => p.status !== 'unknown' && p.status !== 'detecting'));
    return page.evaluate(() => window.ai.getState());
  }

  /** Runs ai.chat(request) in the page; returns the events (errors as plain objects) and the outcome. */
  function chatIn(page, request, { withSearch = false } = {}) {
    return page.evaluate(async ([request, withSearch, schema]) => {
      const tools = withSearch
        ? [{ name: 'search_products', description: 'Find mugs', inputSchema: schema, execute: ({ query }) => [{ name: `Tide (${query})`, price: 32 }] }]
        : undefined;
      const run = window.ai.chat({ ...request, ...(tools ? { tools } : {}) });
      const events = [];
      for await (const e of run) {
        if (e.type === 'finish') events.push({ type: 'finish', text: e.text, reason: e.reason, metadata: e.message.metadata });
        else if (e.type === 'error') events.push({ type: 'error', name: e.error.name });
        else events.push(e);
      }
      try {
        return { events, ok: true, text: await run.text(), provider: run.provider };
      } catch (error) {
        const { name, message, code, detail, needs, reasons, choices, actionable } = error;
        return { events, ok: false, provider: run.provider, error: { name, message, code, detail, needs, reasons, choices, actionable, isNoProvider: error instanceof window.Leuria.NoProviderError } };
      }
    }, [request, withSearch, TOOL_SCHEMA]);
  }

  it('server(): streams an answer that uses a page tool', async () => {
    respond = (body) => {
      const last = body.messages.at(-1);
      if (last.role === 'tool') return { text: `We have ${JSON.parse(last.content).map((p) => p.name).join(', ')}.` };
      return { toolCalls: [{ name: 'search_products', arguments: { query: 'blue' } }] };
    };
    const page = await freshPage();
    const state = await makeAi(page, { order: ['server'] });
    assert.equal(state.active, 'server');
    assert.deepEqual(state.providers[0].capabilities, ['chat', 'tools']);
    const before = chats().length;
    const out = await chatIn(page, { prompt: 'Any blue mugs?', system: 'You sell mugs.' }, { withSearch: true });
    assert.ok(out.ok, JSON.stringify(out.error) + page.logs.join('\n'));
    assert.equal(out.text, 'We have Tide (blue).');
    const types = out.events.map((e) => e.type);
    assert.equal(types[0], 'start');
    assert.equal(out.events[0].provider, 'server');
    assert.deepEqual(types.filter((t) => t.startsWith('tool')), ['tool-call', 'tool-result']);
    assert.deepEqual(out.events.find((e) => e.type === 'tool-call').args, { query: 'blue' });
    assert.deepEqual(out.events.find((e) => e.type === 'tool-result').result, [{ name: 'Tide (blue)', price: 32 }]);
    assert.ok(types.filter((t) => t === 'text').length > 1, 'the answer streams in pieces');
    assert.equal(types.at(-1), 'finish');
    assert.equal(out.events.at(-1).metadata.provider, 'server');
    const [first, second] = chats().slice(before).map((r) => r.body);
    assert.deepEqual(first.messages[0], { role: 'system', content: 'You sell mugs.' });
    assert.equal(first.tools[0].function.name, 'search_products');
    assert.equal(second.messages.at(-1).role, 'tool');
  });

  it('server({ jsonSchema }): .object() with response_format, strict only with "strict"', async () => {
    respond = () => ({ text: '{"name":"Tide","price":32}' });
    const page = await freshPage();
    await makeAi(page, { order: ['server'], server: { jsonSchema: true } });
    const before = chats().length;
    const schema = { type: 'object', properties: { name: { type: 'string' }, price: { type: 'number' } }, required: ['name', 'price'], additionalProperties: false };
    const object = await page.evaluate((schema) => window.ai.chat({ prompt: 'Cheapest blue mug?', schema }).object(), schema);
    assert.deepEqual(object, { name: 'Tide', price: 32 });
    assert.deepEqual(chats()[before].body.response_format, { type: 'json_schema', json_schema: { name: 'answer', schema } });

    await makeAi(page, { order: ['server'], server: { jsonSchema: 'strict' } });
    await page.evaluate((schema) => window.ai.chat({ prompt: 'Again', schema }).object(), schema);
    assert.deepEqual(chats().at(-1).body.response_format, { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } });

    // An answer that doesn't fit: a SchemaError with the text and the problems.
    respond = () => ({ text: '{"name":"Tide"}' });
    const failed = await page.evaluate(async (schema) => {
      const error = await window.ai.chat({ prompt: 'Once more', schema }).object().catch((e) => e);
      return { isSchemaError: error instanceof window.Leuria.SchemaError, text: error.text, problems: error.problems };
    }, schema);
    assert.deepEqual(failed, { isSchemaError: true, text: '{"name":"Tide"}', problems: ['price: required'] });
  });

  it('textStream yields the text, and throws the run error', async () => {
    respond = () => ({ text: 'Stoneware, glazed by hand.' });
    const page = await freshPage();
    await makeAi(page, { order: ['server'] });
    const chunks = await page.evaluate(async () => {
      const out = [];
      for await (const chunk of window.ai.chat({ prompt: 'What are they made of?' }).textStream) out.push(chunk);
      return out;
    });
    assert.ok(chunks.length > 1, 'in pieces');
    assert.equal(chunks.join(''), 'Stoneware, glazed by hand.');
    respond = () => ({ status: 503, errorBody: { error: { message: 'overloaded' } } });
    const thrown = await page.evaluate(async () => {
      try {
        for await (const chunk of window.ai.chat({ prompt: 'Hi' }).textStream) void chunk;
        return null;
      } catch (error) {
        return error.name;
      }
    });
    assert.equal(thrown, 'ProviderError');
  });

  it('a custom provider with ownAI: true holds back the site, as bridge() does', async () => {
    respond = () => ({ text: 'Picked.' });
    const page = await freshPage();
    const state = await page.evaluate(async () => {
      const { createLeuria, server } = window.Leuria;
      const own = {
        id: 'leuria',
        label: 'Your AI',
        locality: 'device',
        offers: ['chat'],
        ownAI: true,
        async detect() {
          return { status: 'unavailable', capabilities: [], action: 'connect', detail: "Leuria isn't running, or isn't installed." };
        },
        async chat() {
          throw new Error('not ready');
        },
        async connect() {},
      };
      window.ai = createLeuria({ providers: [own, server({ url: '/api/ai/chat/completions' })] });
      await window.ai.detect();
      return window.ai.getState();
    });
    assert.equal(state.active, null);
    assert.equal(state.pending, 'leuria', 'its retry is the pending action');
    assert.deepEqual(state.alternatives, ['server']);
    assert.equal(state.providers[0].ownAI, true);
    const out = await chatIn(page, { prompt: 'Hi' });
    assert.equal(out.error.actionable, 'leuria');
    assert.deepEqual(out.error.choices, ['server']);
  });

  it('server(): an HTTP error is a ProviderError in plain words', async () => {
    respond = () => ({ status: 503, errorBody: { error: { message: 'upstream is overloaded' } } });
    const page = await freshPage();
    await makeAi(page, { order: ['server'] });
    const out = await chatIn(page, { prompt: 'Hi' });
    assert.equal(out.ok, false);
    assert.equal(out.error.name, 'ProviderError');
    assert.equal(out.error.message, "This site's AI isn't available right now.");
    assert.equal(out.error.code, 'http_503');
    assert.equal(out.error.detail, 'upstream is overloaded');
  });

  it('browserAI(): this Chromium has the Prompt API but no built-in model, so it is unavailable', async () => {
    const page = await freshPage();
    const native = await page.evaluate(async () => typeof window.LanguageModel === 'function' ? window.LanguageModel.availability() : 'absent');
    const state = await makeAi(page, { order: ['browser'] });
    assert.equal(state.providers[0].status, 'unavailable');
    assert.equal(state.providers[0].detail, native === 'absent' ? 'This browser has no built-in AI.' : "This browser's AI isn't available on this device.");
    assert.equal(state.active, null);

    // A browser without the API at all.
    const context = await browser.newContext();
    await context.addInitScript(() => { delete window.LanguageModel; });
    const bare = await context.newPage();
    await bare.goto(site.url('/blank.html'));
    await bare.waitForFunction(() => window.__sdkLoaded === true);
    const bareState = await makeAi(bare, { order: ['browser'] });
    assert.equal(bareState.providers[0].detail, 'This browser has no built-in AI.');
  });

  it('browserAI(): streams, constrains to a schema, and uses page tools with tools: true', async () => {
    const page = await freshPage({ answers: ['Stoneware, glazed by hand.', '{"name":"Ember"}', { tool: 'search_products', args: { query: 'red' }, text: 'Found {result}' }] });
    const state = await makeAi(page, { order: ['browser'], browser: { tools: true } });
    assert.equal(state.active, 'browser');
    assert.equal(state.providers[0].model, 'Gemini Nano');
    assert.equal(state.providers[0].locality, 'device');

    const out = await chatIn(page, { prompt: 'What are they made of?', system: 'Be brief.' });
    assert.ok(out.ok, JSON.stringify(out.error));
    assert.equal(out.text, 'Stoneware, glazed by hand.');
    assert.ok(out.events.filter((e) => e.type === 'text').length > 1);
    assert.equal(out.events.at(-1).metadata.model, 'Gemini Nano');

    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
    assert.deepEqual(await page.evaluate((schema) => window.ai.chat({ prompt: 'Pick one', schema }).object(), schema), { name: 'Ember' });

    const withTool = await chatIn(page, { prompt: 'Red ones?' }, { withSearch: true });
    assert.ok(withTool.ok, JSON.stringify(withTool.error));
    assert.equal(withTool.text, `Found ${JSON.stringify([{ name: 'Tide (red)', price: 32 }])}`);
    assert.deepEqual(withTool.events.filter((e) => e.type.startsWith('tool')).map((e) => e.type), ['tool-call', 'tool-result']);

    const lm = await page.evaluate(() => window.__lm);
    assert.deepEqual(lm.created[0].initialPrompts, [{ role: 'system', content: 'Be brief.' }]);
    assert.deepEqual(lm.prompts.map((p) => p.responseConstraint), [null, schema, null]);
    assert.deepEqual(lm.created[2].tools, ['search_products']);
  });

  // The stand-in refuses a download without user activation, as Chrome does. (Playwright's
  // evaluate counts as a gesture, so the click below is the real check.)
  it('browserAI(): the download starts from a click, and reports progress', async () => {
    const page = await freshPage({ availability: 'downloadable' });
    const state = await makeAi(page, { order: ['browser'] });
    assert.equal(state.providers[0].status, 'needs-action');
    assert.equal(state.providers[0].action, 'download');
    assert.equal(state.pending, 'browser');

    await page.evaluate(() => {
      window.progress = [];
      window.ai.subscribe(() => {
        const p = window.ai.getState().providers[0];
        if (p.status === 'downloading') window.progress.push(p.progress);
      });
      const button = document.createElement('button');
      button.id = 'download';
      button.textContent = 'Download';
      button.onclick = () => { window.connecting = window.ai.connect('browser'); };
      document.body.append(button);
    });
    await page.click('#download');
    await page.waitForFunction(() => window.ai.getState().active === 'browser', null, { timeout: 5000 });
    const progress = await page.evaluate(() => window.progress);
    assert.ok(progress.includes(0.5), `progress: ${progress}`);
    const created = await page.evaluate(() => window.__lm.created.map((c) => c.activation));
    assert.equal(created.at(-1), true, 'LanguageModel.create ran inside the click');
    const out = await chatIn(page, { prompt: 'hi' });
    assert.equal(out.text, 'Browser says: hi');
  });

  it('fallback "auto": the site answers at once while the own AI needs a connect', async () => {
    respond = () => ({ text: 'The site answers.' });
    const page = await freshPage();
    const state = await makeAi(page, { order: ['bridge', 'server'] }, { fallback: 'auto' });
    assert.equal(state.active, 'server');
    assert.equal(state.pending, 'bridge', 'the own AI is still offered');
    assert.deepEqual(state.alternatives, []);
    const out = await chatIn(page, { prompt: 'Hi' });
    assert.equal(out.text, 'The site answers.');
    assert.equal(out.provider, 'server');
    assert.deepEqual(page.engineRequests, [], 'bridge() without a token sends nothing');
  });

  it('fallback "ask" (default): NoProviderError until the visitor picks another AI', async () => {
    respond = () => ({ text: 'Picked.' });
    const page = await freshPage();
    const state = await makeAi(page, { order: ['bridge', 'server'] });
    assert.equal(state.active, null);
    assert.equal(state.pending, 'bridge');
    assert.deepEqual(state.alternatives, ['server']);
    assert.equal(state.providers[0].action, 'connect');

    const before = chats().length;
    const out = await chatIn(page, { prompt: 'Hi' });
    assert.equal(out.ok, false);
    assert.ok(out.error.isNoProvider);
    assert.equal(out.error.name, 'NoProviderError');
    assert.deepEqual(out.error.choices, ['server']);
    assert.equal(out.error.actionable, 'bridge');
    assert.deepEqual(out.error.needs, ['chat']);
    assert.deepEqual(out.error.reasons.map((r) => [r.id, r.state]), [['bridge', 'needs-action'], ['server', 'ready']]);
    assert.match(out.error.reasons[1].reason, /instead of their own AI/);
    assert.equal(typeof out.error.message, 'string');
    assert.deepEqual(out.events.map((e) => e.type), ['error'], 'no start: nothing answered');
    assert.equal(chats().length, before, 'the site was not asked');

    const after = await page.evaluate(() => {
      window.ai.chooseInstead('server');
      return window.ai.getState();
    });
    assert.equal(after.chosen, 'server');
    assert.equal(after.active, 'server');
    assert.equal(after.pending, 'bridge', 'the own AI stays on offer');
    const ok = await chatIn(page, { prompt: 'Hi' });
    assert.equal(ok.text, 'Picked.');
    assert.deepEqual(page.engineRequests, []);
  });

  it('provider: "server" never waits for the own AI', async () => {
    respond = () => ({ text: 'Named.' });
    const page = await freshPage();
    await makeAi(page, { order: ['bridge', 'browser', 'server'] });
    const out = await chatIn(page, { prompt: 'Hi', provider: 'server' });
    assert.equal(out.text, 'Named.');
    const list = await chatIn(page, { prompt: 'Hi', provider: ['browser', 'server'] });
    assert.equal(list.provider, 'server', 'browser has no model here, so the next named one answers');
  });

  it('localOnly: the site is skipped, so the browser answers, or nothing does', async () => {
    respond = () => ({ text: 'From the site.' });
    const page = await freshPage({});
    await makeAi(page, { order: ['bridge', 'server', 'browser'] }, { fallback: 'auto' });
    assert.equal((await chatIn(page, { prompt: 'Hi' })).provider, 'server');
    const local = await chatIn(page, { prompt: 'Hi', localOnly: true });
    assert.equal(local.provider, 'browser');
    assert.equal(local.text, 'Browser says: Hi');

    const bare = await freshPage();
    await makeAi(bare, { order: ['bridge', 'server', 'browser'] }, { fallback: 'auto' });
    const none = await chatIn(bare, { prompt: 'Hi', localOnly: true });
    assert.ok(none.error.isNoProvider);
    assert.equal(none.error.actionable, 'bridge');
    const byId = Object.fromEntries(none.error.reasons.map((r) => [r.id, r]));
    assert.match(byId.server.reason, /off this device/);
    assert.equal(byId.browser.state, 'unavailable');
    assert.deepEqual(none.error.choices, []);
  });

  it('NoProviderError names the capabilities a request needed', async () => {
    const page = await freshPage({});
    await makeAi(page, { order: ['browser'] });
    const out = await chatIn(page, { prompt: 'Search' }, { withSearch: true });
    assert.ok(out.error.isNoProvider);
    assert.ok(out.error.needs.includes('tools'));
    assert.equal(out.error.actionable, null);
    assert.deepEqual(out.error.choices, []);
    assert.equal(out.error.reasons[0].reason, "Can't use this page's tools.");
    assert.equal(out.error.message, 'No AI is available for this right now.');
  });
});
