// browserAI(): the Prompt API provider against a stand-in LanguageModel on globalThis (Node has
// no built-in model): availability states, the download and its progress, streaming,
// responseConstraint, tools, conversations and failures.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { loadProviders } from './build-providers.mjs';
import { makeRequest } from './provider-request.mjs';
import { installLanguageModel, removeLanguageModel } from './browser-ai-fake.mjs';

const { browserAI, ProviderError } = await loadProviders();

/** A ProviderContext that records what the provider pushes. */
function context() {
  const updates = [];
  let redetects = 0;
  return { updates, redetects: () => redetects, ctx: { update: (r) => updates.push(r), redetect: () => { redetects++; } } };
}

const SEARCH = {
  name: 'search_products',
  description: 'Find mugs',
  inputSchema: { type: 'object', properties: { query: { type: 'string' } } },
  execute: ({ query }) => [{ name: `${query} mug`, price: 21 }],
};

describe('browserAI()', () => {
  afterEach(removeLanguageModel);

  it('describes itself', () => {
    const p = browserAI();
    assert.equal(p.id, 'browser');
    assert.equal(p.label, "This browser's AI");
    assert.equal(p.locality, 'device');
    assert.deepEqual([...p.offers], ['chat']);
    const q = browserAI({ id: 'nano', label: 'Nano' });
    assert.equal(q.id, 'nano');
    assert.equal(q.label, 'Nano');
  });

  it('is unavailable without a LanguageModel', async () => {
    const report = await browserAI().detect();
    assert.equal(report.status, 'unavailable');
    assert.equal(report.detail, 'This browser has no built-in AI.');
    await assert.rejects(browserAI().chat(makeRequest().request), (e) => e instanceof ProviderError);
    await assert.rejects(browserAI().connect(), (e) => e instanceof ProviderError);
  });

  it('maps the availability states', async () => {
    const lm = installLanguageModel();
    const p = browserAI();
    const expect = {
      available: { status: 'ready', capabilities: ['chat', 'structured'] },
      downloadable: { status: 'needs-action', action: 'download' },
      downloading: { status: 'downloading', action: 'download' },
      unavailable: { status: 'unavailable', capabilities: [] },
    };
    for (const [availability, want] of Object.entries(expect)) {
      lm.availability_ = availability;
      const report = await p.detect();
      for (const [k, v] of Object.entries(want)) assert.deepEqual(report[k], v, `${availability}: ${k}`);
      assert.equal(typeof report.detail === 'string' || report.status === 'ready', true);
    }
    lm.availability_ = 'available';
    assert.ok(['Gemini Nano', 'Built-in AI'].includes((await p.detect()).model));
    assert.equal(lm.created.length, 0, 'detect never creates a session (it would start a download)');
  });

  it('passes languages as expected inputs and outputs', async () => {
    const lm = installLanguageModel();
    const p = browserAI({ languages: ['en', 'fr'] });
    await p.detect();
    const want = [{ type: 'text', languages: ['en', 'fr'] }];
    assert.deepEqual(lm.availabilityCalls[0], { expectedInputs: want, expectedOutputs: want });
    await p.chat(makeRequest().request);
    assert.deepEqual(lm.created[0].expectedInputs, want);
    assert.deepEqual(lm.created[0].expectedOutputs, want);
  });

  it('offers tools only with tools: true', async () => {
    installLanguageModel();
    assert.deepEqual((await browserAI({ tools: true }).detect()).capabilities, ['chat', 'structured', 'tools']);
  });

  it('downloads on connect, creating the session before any await, and reports progress', async () => {
    const lm = installLanguageModel({ availability: 'downloadable', progressSteps: [0, 0.25, 0.75, 1] });
    const p = browserAI();
    const { ctx, updates, redetects } = context();
    p.attach(ctx);
    const done = p.connect();
    assert.equal(lm.created.length, 1, 'LanguageModel.create ran synchronously, inside the click');
    assert.equal(typeof lm.created[0].monitor, 'function');
    assert.equal(p.connect(), done, 'a second click joins the same download');
    await done;
    const progress = updates.filter((u) => u.status === 'downloading').map((u) => u.progress);
    assert.deepEqual(progress, [0, 0, 0.25, 0.75, 1]);
    assert.equal(updates.at(-1).status, 'ready');
    assert.ok(redetects() >= 1);
    assert.equal(lm.sessions[0].destroyed, true, 'the download session is not kept');
    assert.equal((await p.detect()).status, 'ready');
  });

  it('reports a failed download plainly', async () => {
    installLanguageModel({ availability: 'downloadable', failCreate: new DOMException('No space', 'NotAllowedError') });
    const p = browserAI();
    p.attach(context().ctx);
    await assert.rejects(p.connect(), (e) => {
      assert.ok(e instanceof ProviderError);
      assert.equal(e.message, "This browser's AI couldn't be downloaded.");
      assert.equal(e.detail, 'No space');
      return true;
    });
  });

  it('streams an answer, with the system prompt and history as initial prompts', async () => {
    const lm = installLanguageModel({ reply: () => ['Stone', 'ware, ', 'glazed.'] });
    const messages = [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!', metadata: { provider: 'browser' } },
      { role: 'user', content: [{ type: 'text', text: 'What are the mugs made of?' }, { type: 'image', data: 'AAAA', mimeType: 'image/png' }] },
    ];
    const { request, events } = makeRequest({ messages, system: 'You sell mugs.' });
    const result = await browserAI().chat(request);
    assert.equal(result.text, 'Stoneware, glazed.');
    assert.deepEqual(events.map((e) => e.text), ['Stone', 'ware, ', 'glazed.']);
    assert.deepEqual(lm.created[0].initialPrompts, [
      { role: 'system', content: 'You sell mugs.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello!' },
    ]);
    const session = lm.sessions[0];
    assert.equal(session.prompts[0].input, 'What are the mugs made of?');
    assert.equal(session.prompts[0].options.responseConstraint, undefined);
    assert.equal(session.destroyed, true, 'a one-off chat destroys its session');
    assert.equal(lm.created[0].tools, undefined);
  });

  it('constrains the answer to the schema', async () => {
    const lm = installLanguageModel({ reply: () => '{"name":"Ember"}' });
    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
    const result = await browserAI().chat(makeRequest({ schema }).request);
    assert.equal(result.text, '{"name":"Ember"}');
    assert.deepEqual(lm.sessions[0].prompts[0].options.responseConstraint, schema);
  });

  it('passes page tools with tools: true, run through callTool', async () => {
    const lm = installLanguageModel({ reply: () => ({ tool: 'search_products', args: { query: 'blue' }, after: (r) => `Found: ${r}` }) });
    const { request, events, calls, providerEvents } = makeRequest({ tools: [SEARCH] });
    const result = await browserAI({ tools: true }).chat(request);
    assert.ok(providerEvents.every((e) => e.type === 'text'), 'tool events are callTool\'s to send');
    const tools = lm.created[0].tools;
    assert.deepEqual(tools.map((t) => [t.name, t.description, t.inputSchema]), [['search_products', 'Find mugs', SEARCH.inputSchema]]);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].args, { query: 'blue' });
    const result0 = JSON.stringify([{ name: 'blue mug', price: 21 }]);
    assert.equal(result.text, `Found: ${result0}`);
    const call = events.find((e) => e.type === 'tool-call');
    const done = events.find((e) => e.type === 'tool-result');
    assert.equal(call.id, done.id);
    assert.deepEqual(done.result, [{ name: 'blue mug', price: 21 }]);

    // Without tools: true, the model never sees them.
    const lm2 = installLanguageModel();
    await browserAI().chat(makeRequest({ tools: [SEARCH] }).request);
    assert.equal(lm2.created[0].tools, undefined);
  });

  it('gives the model a tool\'s error as its result', async () => {
    installLanguageModel({ reply: () => ({ tool: 'search_products', args: {}, after: (r) => r }) });
    const failing = { ...SEARCH, execute: () => { throw new Error('Search is down.'); } };
    const { request, events } = makeRequest({ tools: [failing] });
    const result = await browserAI({ tools: true }).chat(request);
    assert.deepEqual(JSON.parse(result.text), { error: 'Search is down.' });
    assert.equal(events.find((e) => e.type === 'tool-result').error, 'Search is down.');
  });

  it('cancels with an AbortError', async () => {
    const lm = installLanguageModel({ reply: () => 'a long answer that streams slowly for a while' });
    const controller = new AbortController();
    const { request, events } = makeRequest({ signal: controller.signal });
    const run = browserAI().chat(request);
    while (!lm.sessions[0]) await new Promise((r) => setTimeout(r, 1));
    lm.sessions[0].chunkDelayMs = 30;
    while (!events.length) await new Promise((r) => setTimeout(r, 2));
    controller.abort();
    await assert.rejects(run, { name: 'AbortError' });
    assert.equal(lm.sessions[0].destroyed, true);
    assert.equal(lm.created[0].signal, controller.signal);
  });

  it('turns failures into plain ProviderErrors', async () => {
    installLanguageModel({ failPrompt: new DOMException('too many tokens', 'QuotaExceededError') });
    await assert.rejects(browserAI().chat(makeRequest().request), { name: 'ProviderError', code: 'failed', message: "This conversation is too long for this browser's AI.", detail: 'too many tokens' });
    installLanguageModel({ failPrompt: new Error('model crashed') });
    await assert.rejects(browserAI().chat(makeRequest().request), { message: "This browser's AI couldn't answer.", detail: 'model crashed' });
  });

  it('keeps one session for a conversation, and starts over when the history changes', async () => {
    const lm = installLanguageModel();
    const conv = browserAI().openConversation({ system: 'Be brief.', tools: [] });
    const history = [{ role: 'user', content: 'one' }];
    const r1 = await conv.send(makeRequest({ messages: history }).request);
    assert.equal(r1.text, 'echo: one');
    history.push({ role: 'assistant', content: r1.text }, { role: 'user', content: 'two' });
    const r2 = await conv.send(makeRequest({ messages: history }).request);
    assert.equal(r2.text, 'echo: two');
    assert.equal(lm.created.length, 1, 'the second turn reuses the session');
    assert.deepEqual(lm.created[0].initialPrompts, [{ role: 'system', content: 'Be brief.' }]);
    assert.deepEqual(lm.sessions[0].prompts.map((p) => p.input), ['one', 'two']);

    // A history that doesn't continue the session (e.g. edited by the page) rebuilds it.
    await conv.send(makeRequest({ messages: [{ role: 'user', content: 'fresh' }] }).request);
    assert.equal(lm.created.length, 2);
    assert.equal(lm.sessions[0].destroyed, true);
    await conv.close();
    assert.equal(lm.sessions[1].destroyed, true);
  });

  it('runs a conversation\'s tools through the current turn\'s callTool', async () => {
    const lm = installLanguageModel({ reply: () => ({ tool: 'search_products', args: { query: 'red' }, after: () => 'done' }) });
    const conv = browserAI({ tools: true }).openConversation({ tools: [SEARCH] });
    const { request, calls, events } = makeRequest({ tools: [SEARCH] });
    await conv.send(request);
    assert.equal(calls.length, 1);
    assert.ok(events.some((e) => e.type === 'tool-call'));
    assert.equal(lm.created[0].tools.length, 1);
    await conv.close();
  });
});
