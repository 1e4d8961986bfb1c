// Conversations: history, one turn at a time, provider sessions, close.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLeuria, NoProviderError } from '../dist/leuria.js';
import { scripted, quiet, tick } from './scripted-provider.mjs';

test('messages grow with each turn, as a new frozen array each time', async () => {
  const a = scripted({ id: 'a', model: 'M', reply: 'Hello!' });
  const ai = createLeuria(quiet({ providers: [a] }));
  const convo = ai.conversation();
  const empty = convo.messages;
  assert.deepEqual(empty, []);
  const run = convo.send('Hi');
  const withUser = convo.messages;
  assert.notEqual(withUser, empty);
  assert.deepEqual(withUser, [{ role: 'user', content: 'Hi' }], 'the visitor message shows at once');
  assert.equal(await run.text(), 'Hello!');
  assert.deepEqual(convo.messages, [
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello!', metadata: { provider: 'a', model: 'M' } },
  ]);
  assert.ok(Object.isFrozen(convo.messages));
  assert.ok(Object.isFrozen(convo.messages[0]));
  assert.notEqual(convo.messages, withUser);
  ai.destroy();
});

test('a provider without sessions gets the whole history on every turn', async () => {
  const a = scripted({ id: 'a', reply: 'ok' });
  const ai = createLeuria(quiet({ providers: [a] }));
  const convo = ai.conversation({ system: 'Be brief.', messages: [{ role: 'system', content: 'Rule.' }, { role: 'user', content: 'earlier' }, { role: 'assistant', content: 'before' }] });
  await convo.send('one').text();
  await convo.send('two').text();
  const second = a.log.chats[1];
  assert.equal(second.system, 'Be brief.\n\nRule.');
  assert.deepEqual(second.messages.map((m) => `${m.role}:${m.content}`), ['user:earlier', 'assistant:before', 'user:one', 'assistant:ok', 'user:two']);
  assert.equal(convo.messages.length, 6);
  ai.destroy();
});

test('a provider with openConversation keeps one session for the conversation', async () => {
  const bridge = scripted({ id: 'bridge', capabilities: ['chat', 'tools'], sessions: true, reply: 'warm' });
  const ai = createLeuria(quiet({ providers: [bridge] }));
  const tools = [{ name: 't', execute: () => 1 }];
  const convo = ai.conversation({ system: 'Sys', tools });
  await convo.send('one').text();
  await convo.send('two').text();
  assert.equal(bridge.log.sessions.length, 1);
  assert.deepEqual(bridge.log.sessions[0].opts.system, 'Sys');
  assert.deepEqual(bridge.log.sessions[0].opts.tools.map((t) => t.name), ['t']);
  assert.equal(bridge.log.sessionSends.length, 2);
  assert.equal(bridge.log.chats.length, 0);
  assert.equal(bridge.log.sessionSends[1].messages.length, 3, 'the session still gets the whole history');
  const other = ai.conversation();
  await other.send('three').text();
  assert.equal(bridge.log.sessions.length, 2, 'one session per conversation');
  await convo.close();
  assert.deepEqual(bridge.log.sessionCloses, [{ keepalive: false }]);
  ai.destroy();
});

test('each turn picks its provider through the cascade, with one session per provider', async () => {
  const bridge = scripted({ id: 'bridge', sessions: true, reply: 'from bridge' });
  const server = scripted({ id: 'server', locality: 'site', reply: 'from server' });
  const ai = createLeuria(quiet({ providers: [bridge, server] }));
  const convo = ai.conversation();
  await convo.send('one').text();
  bridge.set({ status: 'unavailable' });
  await ai.detect();
  ai.chooseInstead('server');
  await convo.send('two').text();
  bridge.set({ status: 'ready' });
  await ai.detect();
  await convo.send('three').text();
  assert.deepEqual(convo.messages.filter((m) => m.role === 'assistant').map((m) => m.metadata.provider), ['bridge', 'server', 'bridge']);
  assert.equal(bridge.log.sessions.length, 1);
  ai.destroy();
});

test("the conversation's routing options apply to every turn", async () => {
  const server = scripted({ id: 'server', locality: 'site' });
  const browser = scripted({ id: 'browser' });
  const ai = createLeuria(quiet({ providers: [server, browser] }));
  const local = ai.conversation({ localOnly: true });
  const run = local.send('x');
  await run.text();
  assert.equal(run.provider, 'browser');
  const named = ai.conversation({ provider: 'server' });
  const second = named.send('x');
  await second.text();
  assert.equal(second.provider, 'server');
  ai.destroy();
});

test('one send at a time: a second concurrent send fails with a clear Error', async () => {
  const a = scripted({ id: 'a', steps: [{ wait: 10 }, { text: 'done' }] });
  const ai = createLeuria(quiet({ providers: [a] }));
  const convo = ai.conversation();
  const first = convo.send('one');
  const second = convo.send('two');
  await assert.rejects(second.text(), /still answering/);
  assert.equal(await first.text(), 'done');
  assert.deepEqual(convo.messages.map((m) => m.content), ['one', 'done']);
  assert.equal(await convo.send('three').text(), 'done', 'the next one works once the first is done');
  ai.destroy();
});

test('a failed turn keeps the visitor message and frees the conversation', async () => {
  let fail = true;
  const a = scripted({ id: 'a', chat: async () => { if (fail) throw new Error('AI down'); return { text: 'back' }; } });
  const ai = createLeuria(quiet({ providers: [a] }));
  const convo = ai.conversation();
  await assert.rejects(convo.send('one').text(), /AI down/);
  assert.deepEqual(convo.messages.map((m) => m.content), ['one']);
  fail = false;
  assert.equal(await convo.send('two').text(), 'back');
  ai.destroy();
});

test('a turn that reached no AI leaves no trace, so the page can send it again', async () => {
  const bridge = scripted({ id: 'bridge', status: 'needs-action', action: 'connect' });
  const ai = createLeuria(quiet({ providers: [bridge] }));
  const convo = ai.conversation();
  await assert.rejects(convo.send('hello').text(), NoProviderError);
  assert.deepEqual(convo.messages, []);
  ai.destroy();
});

test('a cancelled turn frees the conversation', async () => {
  const a = scripted({ id: 'a', steps: [{ waitForAbort: true }] });
  const ai = createLeuria(quiet({ providers: [a] }));
  const convo = ai.conversation();
  const run = convo.send('one');
  await tick(2);
  run.cancel();
  await assert.rejects(run.text(), { name: 'AbortError' });
  const next = convo.send('two');
  await tick(2);
  assert.equal(a.log.chats.length, 2, 'the next send reached the provider');
  assert.deepEqual(convo.messages.map((m) => m.content), ['one', 'two']);
  next.cancel();
  ai.destroy();
});

test('send options: attachments, schema and signal', async () => {
  const a = scripted({ id: 'a', capabilities: ['chat', 'images', 'structured'], reply: '{"ok":true}' });
  const ai = createLeuria(quiet({ providers: [a] }));
  const convo = ai.conversation();
  const run = convo.send('look', { attachments: [{ mimeType: 'image/jpeg', data: 'BBBB' }], schema: { type: 'object', required: ['ok'] } });
  assert.deepEqual(await run.object(), { ok: true });
  assert.deepEqual(a.log.chats[0].messages[0].content, [{ type: 'text', text: 'look' }, { type: 'image', data: 'BBBB', mimeType: 'image/jpeg' }]);
  assert.deepEqual(a.log.chats[0].schema, { type: 'object', required: ['ok'] });
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(convo.send('x', { signal: controller.signal }).text(), { name: 'AbortError' });
  ai.destroy();
});

test('close() cancels a running turn, closes sessions, and later sends fail', async () => {
  const bridge = scripted({ id: 'bridge', sessions: true, steps: [{ text: 'a' }, { waitForAbort: true }] });
  const ai = createLeuria(quiet({ providers: [bridge] }));
  const convo = ai.conversation();
  const run = convo.send('one');
  await tick(5);
  await convo.close();
  await assert.rejects(run.text(), { name: 'AbortError' });
  assert.deepEqual(bridge.log.sessionCloses, [{ keepalive: false }]);
  await assert.rejects(convo.send('two').text(), /closed/);
  await convo.close(); // twice is harmless
  assert.equal(bridge.log.sessionCloses.length, 1);
  ai.destroy();
});

test('the conversation tools run through callTool with the middleware', async () => {
  const seen = [];
  const a = scripted({ id: 'a', capabilities: ['chat', 'tools'], steps: [{ tool: 'add', args: { a: 1, b: 2 } }, { text: 'three' }] });
  const ai = createLeuria(quiet({ providers: [a], middleware: async (call, next) => (seen.push(call.name), next()) }));
  const convo = ai.conversation({ tools: [{ name: 'add', execute: ({ a: x, b: y }) => x + y }] });
  await convo.send('1+2?').text();
  assert.deepEqual(a.log.outcomes, [{ ok: true, result: 3 }]);
  assert.deepEqual(seen, ['add']);
  ai.destroy();
});

test('destroy() closes conversations and their sessions', async () => {
  const bridge = scripted({ id: 'bridge', sessions: true });
  const ai = createLeuria(quiet({ providers: [bridge] }));
  const convo = ai.conversation();
  await convo.send('one').text();
  ai.destroy();
  await tick();
  assert.deepEqual(bridge.log.sessionCloses, [{ keepalive: false }]);
  await assert.rejects(convo.send('two').text(), /destroyed/);
  await assert.rejects(ai.conversation().send('x').text(), /destroyed/);
});

test('a send with a bad prompt fails the run, not the page', async () => {
  const ai = createLeuria(quiet({ providers: [scripted({ id: 'a' })] }));
  const convo = ai.conversation();
  await assert.rejects(convo.send(42).text(), /string/);
  assert.deepEqual(convo.messages, []);
  assert.throws(() => ai.conversation({ messages: [{ role: 'bot', content: 'x' }] }), /role/);
  ai.destroy();
});
