// Runs: events, replay, text()/object()/message(), cancellation, and what the provider is given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLeuria, NoProviderError, ProviderError, SchemaError } from '../dist/leuria.js';
import { scripted, quiet, events, types, tick } from './scripted-provider.mjs';

function oneProvider(options = {}, extra = {}) {
  const provider = scripted({ id: 'a', model: 'Model A', ...options });
  return { provider, ai: createLeuria(quiet({ providers: [provider], ...extra })) };
}

test('a run streams start, text and finish, and finish carries the message', async () => {
  const { ai } = oneProvider({ steps: [{ text: 'Hel' }, { reasoning: 'thinking' }, { text: 'lo' }] });
  const all = await events(ai.chat({ prompt: 'hi' }));
  assert.deepEqual(all.map((e) => e.type), ['start', 'text', 'reasoning', 'text', 'finish']);
  assert.deepEqual(all[0], { type: 'start', provider: 'a', model: 'Model A' });
  const finish = all.at(-1);
  assert.equal(finish.text, 'Hello');
  assert.equal(finish.reason, 'stop');
  assert.deepEqual(finish.message, { role: 'assistant', content: 'Hello', metadata: { provider: 'a', model: 'Model A' } });
  ai.destroy();
});

test('every iterator replays all events from the start, even after the run ended', async () => {
  const { ai } = oneProvider({ steps: [{ text: 'a' }, { wait: 5 }, { text: 'b' }] });
  const run = ai.chat({ prompt: 'hi' });
  const [first, second] = await Promise.all([types(run), types(run)]);
  assert.deepEqual(first, ['start', 'text', 'text', 'finish']);
  assert.deepEqual(second, first);
  assert.deepEqual(await types(run), first, 'a late iterator sees everything');
  ai.destroy();
});

test('text(), message(), provider and done', async () => {
  const { ai } = oneProvider({ reply: 'Hi there', result: { model: 'Exact model' } });
  const run = ai.chat({ prompt: 'hi' });
  assert.equal(run.done, false);
  assert.equal(run.provider, undefined, 'known once the run has started');
  assert.equal(await run.text(), 'Hi there');
  assert.equal(run.done, true);
  assert.equal(run.provider, 'a');
  const message = await run.message();
  assert.deepEqual(message.metadata, { provider: 'a', model: 'Exact model' }, 'the model the provider returned wins');
  assert.ok(Object.isFrozen(message));
  ai.destroy();
});

test('the run starts on the next microtask, so listeners can attach synchronously', async () => {
  const { ai, provider } = oneProvider();
  const run = ai.chat({ prompt: 'hi' });
  assert.equal(provider.log.chats.length, 0);
  const iterator = run[Symbol.asyncIterator]();
  assert.equal((await iterator.next()).value.type, 'start');
  ai.destroy();
});

test('a provider that does not stream still gives one text event', async () => {
  const { ai } = oneProvider({ chat: async () => ({ text: 'whole answer', reason: 'length' }) });
  const all = await events(ai.chat({ prompt: 'hi' }));
  assert.deepEqual(all.map((e) => e.type), ['start', 'text', 'finish']);
  assert.equal(all[1].text, 'whole answer');
  assert.equal(all[2].reason, 'length');
  ai.destroy();
});

test('start, finish, error, tool-call and tool-result emitted by a provider are ignored', async () => {
  const { ai } = oneProvider({
    steps: [
      { emit: { type: 'start', provider: 'fake' } },
      { emit: { type: 'tool-call', id: 'x', name: 'n', args: {} } },
      { emit: { type: 'tool-result', id: 'x', name: 'n', result: 1 } },
      { emit: { type: 'finish', text: 'fake' } },
      { emit: { type: 'error', error: new Error('fake') } },
      { emit: { type: 'text', text: '' } },
      { text: 'real' },
    ],
  });
  assert.deepEqual(await types(ai.chat({ prompt: 'hi' })), ['start', 'text', 'finish']);
  ai.destroy();
});

test('a provider error ends the run with an error event, and text() and message() reject', async () => {
  const failure = new ProviderError('a', 'failed', 'The AI stopped.', 'raw detail');
  const { ai } = oneProvider({ steps: [{ text: 'part' }, { fail: failure }] });
  const run = ai.chat({ prompt: 'hi' });
  const all = await events(run);
  assert.deepEqual(all.map((e) => e.type), ['start', 'text', 'error']);
  assert.equal(all[2].error, failure);
  await assert.rejects(run.text(), failure);
  await assert.rejects(run.message(), failure);
  await assert.rejects(run.object(), failure);
  ai.destroy();
});

test('a run that finds no provider has a single error event', async () => {
  const { ai } = oneProvider({ status: 'unavailable' });
  const all = await events(ai.chat({ prompt: 'hi' }));
  assert.deepEqual(all.map((e) => e.type), ['error']);
  assert.ok(all[0].error instanceof NoProviderError);
  ai.destroy();
});

test('object() parses the answer, tolerating a ```json fence, and checks the schema', async () => {
  const schema = { type: 'object', properties: { price: { type: 'number' } }, required: ['price'] };
  const { ai, provider } = oneProvider({ capabilities: ['chat', 'structured'], reply: '```json\n{ "price": 24 }\n```' });
  const run = ai.chat({ prompt: 'price?', schema });
  assert.deepEqual(await run.object(), { price: 24 });
  assert.deepEqual(provider.log.chats[0].schema, schema);
  ai.destroy();
});

test('object() tolerates a sentence around the JSON', async () => {
  const { ai } = oneProvider({ reply: 'Here it is: {"a": [1, 2]} — enjoy.' });
  assert.deepEqual(await ai.chat({ prompt: 'x' }).object(), { a: [1, 2] });
  ai.destroy();
});

test('object() rejects a SchemaError, with the text and the problems, for invalid JSON or a mismatch', async () => {
  const schema = { type: 'object', properties: { price: { type: 'number' } }, required: ['price'] };
  let { ai } = oneProvider({ capabilities: ['chat', 'structured'], reply: 'not json at all' });
  const notJson = await ai.chat({ prompt: 'x', schema }).object().catch((e) => e);
  assert.ok(notJson instanceof SchemaError);
  assert.equal(notJson.name, 'SchemaError');
  assert.equal(notJson.text, 'not json at all');
  assert.deepEqual(notJson.problems, ["value: isn't valid JSON"]);
  ai.destroy();
  ({ ai } = oneProvider({ capabilities: ['chat', 'structured'], reply: '{"price": "24"}' }));
  const run = ai.chat({ prompt: 'x', schema });
  await assert.rejects(run.object(), (error) => {
    assert.ok(error instanceof SchemaError);
    assert.match(error.message, /doesn't match the schema: price: expected number/);
    assert.equal(error.text, '{"price": "24"}');
    assert.deepEqual(error.problems, ['price: expected number']);
    return true;
  });
  assert.equal(await run.text(), '{"price": "24"}', 'the run itself finished');
  ai.destroy();
});

test('a failed run rejects object() with its own error, not a SchemaError', async () => {
  const { ai } = oneProvider({ steps: [{ fail: new ProviderError('a', 'failed', 'Nope.') }] });
  await assert.rejects(ai.chat({ prompt: 'x' }).object(), { name: 'ProviderError' });
  ai.destroy();
});

test('a Zod schema (or anything not a JSON Schema object) fails the run with a clear TypeError', async () => {
  const { ai, provider } = oneProvider({ capabilities: ['chat', 'structured'] });
  const zodLike = { _def: { typeName: 'ZodObject' }, safeParse: () => ({ success: true }) };
  const run = ai.chat({ prompt: 'x', schema: zodLike });
  assert.deepEqual(await types(run), ['error']);
  await assert.rejects(run.text(), (error) => error instanceof TypeError && /schema must be a JSON Schema object; convert a Zod schema with z\.toJSONSchema\(\)/.test(error.message));
  await assert.rejects(ai.chat({ prompt: 'x', schema: 'string' }).text(), TypeError);
  const convo = ai.conversation();
  await assert.rejects(convo.send('x', { schema: { safeParse() {} } }).text(), TypeError);
  assert.equal(convo.messages.length, 0, 'a turn that never reached an AI leaves no trace');
  assert.equal(provider.log.chats.length, 0);
  ai.destroy();
});

test('textStream yields the text chunks from the start, and throws the run error', async () => {
  let { ai } = oneProvider({ steps: [{ reasoning: 'hmm' }, { text: 'Hel' }, { text: 'lo' }] });
  const run = ai.chat({ prompt: 'hi' });
  const chunks = [];
  for await (const chunk of run.textStream) chunks.push(chunk);
  assert.deepEqual(chunks, ['Hel', 'lo']);
  const again = [];
  for await (const chunk of run.textStream) again.push(chunk);
  assert.deepEqual(again, ['Hel', 'lo'], 'each iteration replays from the start');
  ai.destroy();

  ({ ai } = oneProvider({ steps: [{ text: 'partial' }, { fail: new ProviderError('a', 'failed', 'Your AI stopped.') }] }));
  const failing = ai.chat({ prompt: 'hi' });
  const seen = [];
  await assert.rejects(async () => {
    for await (const chunk of failing.textStream) seen.push(chunk);
  }, { name: 'ProviderError', message: 'Your AI stopped.' });
  assert.deepEqual(seen, ['partial']);
  assert.deepEqual(await types(failing), ['start', 'text', 'error'], 'the event iterator still ends with an error event');
  ai.destroy();
});

test('textStream of a run nobody iterates causes no unhandled rejection', async () => {
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  const { ai } = oneProvider({ steps: [{ fail: 'boom' }] });
  const run = ai.chat({ prompt: 'x' });
  void run.textStream;
  await tick(10);
  process.off('unhandledRejection', onUnhandled);
  assert.deepEqual(unhandled, []);
  ai.destroy();
});

test('cancel() aborts the provider signal and fails the run with an AbortError', async () => {
  const { ai, provider } = oneProvider({ steps: [{ text: 'partial' }, { waitForAbort: true }] });
  const run = ai.chat({ prompt: 'hi' });
  const collected = events(run);
  await tick(5);
  run.cancel();
  const all = await collected;
  assert.deepEqual(all.map((e) => e.type), ['start', 'text', 'error']);
  assert.equal(all[2].error.name, 'AbortError');
  await assert.rejects(run.text(), { name: 'AbortError' });
  assert.equal(provider.log.chats[0].signal.aborted, true);
  await tick();
  assert.equal(provider.log.aborted, 1);
  run.cancel(); // twice is harmless
  ai.destroy();
});

test('cancel(reason) gives the reason as the message', async () => {
  const { ai } = oneProvider({ steps: [{ waitForAbort: true }] });
  const run = ai.chat({ prompt: 'hi' });
  run.cancel('Stopped by the visitor.');
  await assert.rejects(run.text(), { name: 'AbortError', message: 'Stopped by the visitor.' });
  ai.destroy();
});

test('request.signal aborts the run, before or during it', async () => {
  const { ai, provider } = oneProvider({ steps: [{ waitForAbort: true }] });
  const early = new AbortController();
  early.abort();
  await assert.rejects(ai.chat({ prompt: 'x', signal: early.signal }).text(), { name: 'AbortError' });
  assert.equal(provider.log.chats.length, 0);

  const during = new AbortController();
  const run = ai.chat({ prompt: 'x', signal: during.signal });
  await tick(5);
  during.abort();
  await assert.rejects(run.text(), { name: 'AbortError' });
  assert.equal(provider.log.chats[0].signal.aborted, true);
  ai.destroy();
});

test('what the provider emits after a cancel is ignored', async () => {
  const { ai } = oneProvider({
    chat: (request) =>
      new Promise((resolve) => {
        request.signal.addEventListener('abort', () => {
          request.emit({ type: 'text', text: 'late' });
          resolve({ text: 'late' });
        });
      }),
  });
  const run = ai.chat({ prompt: 'x' });
  await tick(2);
  run.cancel();
  await tick(2);
  assert.deepEqual(await types(run), ['start', 'error']);
  ai.destroy();
});

test('no unhandled rejections when nobody awaits a failing run', async () => {
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const { ai } = oneProvider({ steps: [{ fail: 'boom' }] });
    ai.chat({ prompt: 'x' });
    ai.chat({ prompt: 'x', provider: 'missing' });
    ai.chat({});
    const cancelled = ai.chat({ prompt: 'x' });
    cancelled.cancel();
    const noProvider = createLeuria(quiet({ providers: [] }));
    noProvider.chat({ prompt: 'x' });
    await tick(20);
    ai.destroy();
    noProvider.destroy();
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
  assert.deepEqual(unhandled, []);
});

test('the provider gets the prompt as a user message, system apart, and maxTurns', async () => {
  const { ai, provider } = oneProvider();
  await ai.chat({ prompt: 'hi', system: 'Be brief.' }).text();
  const request = provider.log.chats[0];
  assert.deepEqual(request.messages, [{ role: 'user', content: 'hi' }]);
  assert.equal(request.system, 'Be brief.');
  assert.equal(request.maxTurns, 10);
  assert.deepEqual(request.tools, []);
  assert.equal(typeof request.callTool, 'function');
  assert.equal(typeof request.emit, 'function');
  assert.ok(request.signal instanceof AbortSignal);
  await ai.chat({ prompt: 'hi', maxTurns: 3 }).text();
  assert.equal(provider.log.chats[1].maxTurns, 3);
  ai.destroy();
});

test('messages: system messages move to system, attachments go on the last user message', async () => {
  const { ai, provider } = oneProvider({ capabilities: ['chat', 'images'] });
  const messages = [
    { role: 'system', content: 'Rule one.' },
    { role: 'user', content: 'first' },
    { role: 'assistant', content: 'ok' },
    { role: 'user', content: 'look at this' },
  ];
  await ai.chat({ messages, system: 'Be kind.', attachments: [{ mimeType: 'image/png', data: 'data:image/png;base64,AAAA', name: 'a.png' }] }).text();
  const request = provider.log.chats[0];
  assert.equal(request.system, 'Be kind.\n\nRule one.');
  assert.deepEqual(request.messages, [
    { role: 'user', content: 'first' },
    { role: 'assistant', content: 'ok' },
    { role: 'user', content: [{ type: 'text', text: 'look at this' }, { type: 'image', data: 'AAAA', mimeType: 'image/png' }] },
  ]);
  assert.equal(messages[3].content, 'look at this', "the page's own objects are not changed");
  ai.destroy();
});

test('attachments: image data becomes padded standard base64, whatever base64 the page had; anything else is refused', async () => {
  const { ai, provider } = oneProvider({ capabilities: ['chat', 'images'] });
  const sent = async (data) => {
    await ai.chat({ prompt: 'look', attachments: [{ mimeType: 'image/png', data }] }).text();
    return provider.log.chats.at(-1).messages.at(-1).content[1].data;
  };
  assert.equal(await sent('iVBORw0KGgo='), 'iVBORw0KGgo=');
  assert.equal(await sent('iVBORw0KGgo'), 'iVBORw0KGgo=');
  assert.equal(await sent('iVBO\r\nRw0K Ggo='), 'iVBORw0KGgo=');
  assert.equal(await sent('-_-_'), '+/+/');
  assert.equal(await sent('data:image/png;base64,AAAA'), 'AAAA');
  for (const bad of ['not base64!', 'A', '', 'AA=A']) {
    await assert.rejects(ai.chat({ prompt: 'look', attachments: [{ mimeType: 'image/png', data: bad }] }).text(), /must be base64/);
  }
  ai.destroy();
});

test('a request that cannot be sent fails the run with a clear Error', async () => {
  const { ai } = oneProvider();
  await assert.rejects(ai.chat({}).text(), /needs a prompt or messages/);
  await assert.rejects(ai.chat(undefined).text(), /needs a request/);
  await assert.rejects(ai.chat({ prompt: 'x', attachments: [{ mimeType: 'application/pdf', data: 'AA' }] }).text(), /Only images/);
  await assert.rejects(ai.chat({ messages: [{ role: 'robot', content: 'x' }] }).text(), /role/);
  ai.destroy();
});

test('destroy() cancels runs in flight, and later chats fail with a clear Error', async () => {
  const { ai } = oneProvider({ steps: [{ waitForAbort: true }] });
  const run = ai.chat({ prompt: 'x' });
  await tick(2);
  ai.destroy();
  await assert.rejects(run.text(), { name: 'AbortError' });
  await assert.rejects(ai.chat({ prompt: 'x' }).text(), /destroyed/);
});

test('a provider that ignores its signal cannot hold a cancelled run', async () => {
  const { ai } = oneProvider({ chat: () => new Promise(() => {}) });
  const run = ai.chat({ prompt: 'x' });
  await tick(2);
  run.cancel();
  await assert.rejects(run.text(), { name: 'AbortError' });
  ai.destroy();
});

test('breaking out of a for await loop leaves the run and other iterators alone', async () => {
  const { ai } = oneProvider({ steps: [{ text: 'a' }, { wait: 5 }, { text: 'b' }] });
  const run = ai.chat({ prompt: 'x' });
  for await (const event of run) if (event.type === 'text') break;
  assert.equal(await run.text(), 'ab');
  ai.destroy();
});
