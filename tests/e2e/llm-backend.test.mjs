// The model backend (issue 3, "The model backend"): the engine's own tool loop against an
// OpenAI-compatible server (tests/fakes/openai-server.mjs), streamed to the page.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startEngine, stopAll, sessionApi, pairCli, web, local, poll, sleep, freshOrigin, closedPort,
} from './helpers.mjs';
import { startSessionTurn as run } from './helpers.mjs';
import { startOpenAiServer } from '../fakes/openai-server.mjs';

const servers = [];
async function server(opts = {}) {
  const s = await startOpenAiServer(opts);
  servers.push(s);
  return s;
}

/** An engine whose default AI is `agent` (default llm:fake) on a provider at baseUrl. */
function llmEngine(baseUrl, { agent = 'llm:fake', apiKey, name = 'Fake', kind = 'openai', args, timings } = {}) {
  const provider = { id: 'fake', kind, name, baseUrl };
  if (apiKey) provider.apiKey = apiKey;
  return startEngine({
    args, timings,
    files: { 'config.json': { agent }, 'providers.json': { providers: [provider] } },
  });
}


/** stream.waitFor, but a failure also says whether the engine itself died (and how). */
async function waitEvent(eng, stream, pred, ms = 8000) {
  try {
    return await stream.waitFor(pred, ms);
  } catch (e) {
    await sleep(100);
    if (eng.exitInfo) {
      const tail = eng.stderrLines.filter((l) => !/^\s+#\d+ /.test(l)).slice(-6).join('\n');
      throw new Error(`the engine died (${JSON.stringify(eng.exitInfo)}) during the turn; stderr tail:\n${tail}`);
    }
    throw e;
  }
}

const chats = (srv) => srv.requests.filter((r) => r.method === 'POST' && r.path === '/v1/chat/completions');
const chunks = (s) => s.events.filter((e) => e.event === 'chunk').map((e) => e.data).join('');

function assertPlainMessage(msg) {
  assert.equal(typeof msg, 'string');
  assert.ok(msg.length > 0 && msg.length < 500, JSON.stringify(msg));
  assert.ok(!msg.includes('\n'), `one line: ${JSON.stringify(msg)}`);
  assert.ok(!/^\s*[{[]/.test(msg), `plain words, not JSON: ${msg}`);
}

describe('model backend (OpenAI-compatible)', { timeout: 120000 }, () => {
  after(async () => {
    try {
      await stopAll();
    } finally {
      await Promise.all(servers.map((s) => s.close()));
    }
  });

  it('a text turn: streamed chunks, turn_completed text, a request with the model from /models and stream:true', async () => {
    // Paced deltas, so the engine relays them as they come rather than all at once.
    const srv = await server({ models: ['first-model', 'second-model'], respond: () => ({ text: 'Hello there, visitor! How can I help?', chunkDelayMs: 20 }) });
    const eng = await llmEngine(srv.url);
    const { api, id, stream } = await run(eng, { prompt: 'Say hello' });
    const tc = await stream.waitFor('turn_completed');
    assert.equal(tc.data.text, 'Hello there, visitor! How can I help?');
    assert.equal(chunks(stream), tc.data.text);
    assert.ok(stream.events.filter((e) => e.event === 'chunk').length > 1, 'streamed in pieces');
    assert.equal(typeof tc.data.durationMs, 'number');
    assert.deepEqual(stream.names().filter((n) => n !== 'chunk'), ['webmcp_ready', 'turn_start', 'turn_completed']);
    assert.equal((await api.get(id)).json.status, 'idle');
    assert.ok(srv.requests.some((r) => r.method === 'GET' && r.path === '/v1/models'), 'the model comes from /models');
    const [req] = chats(srv);
    assert.equal(req.body.model, 'first-model');
    assert.equal(req.body.stream, true);
    assert.deepEqual(req.body.messages, [{ role: 'user', content: 'Say hello' }]);
    assert.ok(!('tools' in req.body) && !('tool_choice' in req.body), 'no page tools yet');
    const h = await local(eng, '/health');
    assert.match(h.json.agent, /Fake/);
    await api.close(id);
    await stream.waitFor('completed');
  });

  it('reasoning_content becomes thought events', async () => {
    const srv = await server({ respond: () => ({ reasoning: 'Let me think about mugs.', text: 'Mugs!' }) });
    const eng = await llmEngine(srv.url);
    const { stream } = await run(eng, { prompt: 'Mugs?' });
    const tc = await stream.waitFor('turn_completed');
    assert.equal(tc.data.text, 'Mugs!');
    const thoughts = stream.events.filter((e) => e.event === 'thought').map((e) => e.data);
    assert.equal(thoughts.join(''), 'Let me think about mugs.');
    const names = stream.names();
    assert.ok(names.indexOf('thought') < names.indexOf('chunk'));
  });

  it('the system prompt and the conversation history go to the server', async () => {
    const srv = await server();
    const eng = await llmEngine(srv.url);
    const { api, id, stream } = await run(eng, { prompt: 'First question', systemPrompt: 'You sell mugs.' });
    await stream.waitFor('turn_completed');
    assert.equal((await api.prompt(id, { prompt: 'Second question' })).status, 200);
    await stream.waitFor((e) => e.event === 'turn_completed' && e.data.text === 'echo: Second question');
    const [a, b] = chats(srv);
    assert.deepEqual(a.body.messages, [
      { role: 'system', content: 'You sell mugs.' },
      { role: 'user', content: 'First question' },
    ]);
    assert.equal(b.body.messages.length, 4, JSON.stringify(b.body.messages));
    assert.deepEqual(b.body.messages[0], { role: 'system', content: 'You sell mugs.' });
    assert.deepEqual(b.body.messages[1], { role: 'user', content: 'First question' });
    assert.equal(b.body.messages[2].role, 'assistant');
    assert.equal(b.body.messages[2].content, 'echo: First question');
    assert.deepEqual(b.body.messages[3], { role: 'user', content: 'Second question' });
  });

  it('llm:fake/<model> passes that model; /health names it', async () => {
    const srv = await server({ models: ['other'] });
    const eng = await llmEngine(srv.url, { agent: 'llm:fake/qwen3:8b' });
    const h = await local(eng, '/health');
    assert.equal(h.json.agent, 'Fake · qwen3:8b');
    const { stream } = await run(eng, { prompt: 'hi' });
    await stream.waitFor('turn_completed');
    assert.equal(chats(srv)[0].body.model, 'qwen3:8b');
  });

  it('a page gets its site\'s own model (leuria sites use <origin> llm:fake --model m)', async () => {
    const srv = await server({ models: ['default-model'] });
    const eng = await llmEngine(srv.url);
    const origin = freshOrigin('llmsite');
    const { token } = await pairCli(eng, origin);
    const { runCli } = await import('./helpers.mjs');
    const r = await runCli(['sites', 'use', origin, 'llm:fake', '--model', 'site-model'], { home: eng.home });
    assert.equal(r.code, 0, r.stderr);
    const h = await poll(async () => {
      const x = await web(eng, origin, '/health', { token });
      return x.json.agent === 'Fake · site-model' ? x : null;
    }, { timeoutMs: 3000 });
    assert.ok(h, 'the page\'s /health names its model');
    const { stream } = await run(eng, { prompt: 'hi' }, { origin, token });
    await stream.waitFor('turn_completed');
    assert.equal(chats(srv).at(-1).body.model, 'site-model');
  });

  it('a server that is not running fails the session on approve, with a message naming the server', async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}/v1`;
    const eng = await llmEngine(url, { name: 'My Llama' });
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 8000);
    assertPlainMessage(f.data);
    assert.ok(f.data.includes('My Llama') || f.data.includes(`127.0.0.1:${port}`), `the message names the server: ${f.data}`);
    const g = await api.get(id);
    assert.equal(g.json.status, 'failed');
    assert.equal(g.json.error, f.data);
    assert.ok(!stream.names().includes('turn_start') || true);
    assert.equal((await local(eng, '/health')).status, 200, 'the engine is fine');
  });

  it('HTTP 500 with an error body fails the turn with a plain message', async () => {
    const srv = await server({ respond: () => ({ status: 500, errorBody: { error: { message: 'The model crashed (scripted)', type: 'server_error' } } }) });
    const eng = await llmEngine(srv.url);
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 8000);
    assertPlainMessage(f.data);
    assert.equal((await api.get(id)).json.status, 'failed');
    assert.equal((await api.get(id)).json.error, f.data);
    assert.equal((await local(eng, '/health')).status, 200);
  });

  it('a broken stream (the connection drops mid-answer, no [DONE]) fails the turn with a plain message', async () => {
    const srv = await server({ respond: () => ({ text: 'This answer will break off somewhere in the middle.', breakStream: true }) });
    const eng = await llmEngine(srv.url);
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 8000);
    assertPlainMessage(f.data);
    assert.ok(stream.names().includes('chunk'), 'the chunks before the break were streamed');
    assert.equal((await api.get(id)).json.status, 'failed');
    assert.equal((await local(eng, '/health')).status, 200);
  });

  it('an API key from providers.json is sent as Bearer and never appears in the engine\'s output', async () => {
    const key = 'sk-test-0123456789-SECRET-abcdefXYZ';
    const srv = await server({ apiKey: key });
    const eng = await llmEngine(srv.url, { apiKey: key, args: ['--port', '0', '--no-open', '-v'] });
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    const tc = await stream.waitFor('turn_completed');
    assert.equal(tc.data.text, 'echo: hi');
    assert.ok(srv.requests.length >= 1);
    for (const r of srv.requests) assert.equal(r.headers.authorization, `Bearer ${key}`, `${r.method} ${r.path}`);
    await api.close(id);
    await stream.waitForEnd();
    const h = await local(eng, '/health');
    await eng.stop();
    const everything = [...eng.lines, ...eng.stderrLines].join('\n') + stream.raw + h.body;
    assert.ok(!everything.includes(key), 'the key must never be logged or sent to the page');
    assert.ok(!everything.includes('SECRET-abcdef'), 'not even in part');
  });

  it('a wrong API key fails the session with a plain message', async () => {
    const srv = await server({ apiKey: 'right-key' });
    const eng = await llmEngine(srv.url, { apiKey: 'wrong-key' });
    const { stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 8000);
    assertPlainMessage(f.data);
    assert.ok(!f.data.includes('wrong-key'));
  });

  it('an API key with a line break in it is never sent: no header is smuggled, and the failure names the field', async () => {
    const srv = await server();
    const eng = await llmEngine(srv.url, { apiKey: 'sk-1\r\nX-Smuggled: yes' });
    const { stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 8000);
    assertPlainMessage(f.data);
    assert.match(f.data, /Authorization header holds a line break/);
    assert.ok(!f.data.includes('sk-1'), f.data);
    assert.equal(srv.requests.length, 0, 'nothing reached the model server');
    assert.equal((await local(eng, '/health')).status, 200);
  });

  it('attachments: text files wrapped in <file name="…">, images as image parts', async () => {
    const srv = await server();
    const eng = await llmEngine(srv.url);
    const { api, id, stream } = await run(eng, {
      prompt: 'Read this',
      attachments: [{ type: 'text', text: 'a,b\n1,2', name: 'data.csv' }],
    });
    await stream.waitFor('turn_completed');
    const m = chats(srv)[0].body.messages.at(-1);
    assert.equal(m.role, 'user');
    const text = typeof m.content === 'string' ? m.content : m.content.filter((p) => p.type === 'text').map((p) => p.text).join('\n');
    assert.ok(text.includes('Read this'), text);
    assert.ok(text.includes('<file name="data.csv">a,b\n1,2</file>'), text);

    const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
    assert.equal((await api.prompt(id, { prompt: 'And this', attachments: [{ type: 'image', mimeType: 'image/png', data: png }] })).status, 200);
    await stream.waitFor((e) => e.event === 'turn_completed' && e.data.text.includes('And this'));
    const m2 = chats(srv)[1].body.messages.at(-1);
    assert.ok(Array.isArray(m2.content), JSON.stringify(m2));
    const img = m2.content.find((p) => p.type === 'image_url');
    assert.ok(img, JSON.stringify(m2));
    assert.equal(img.image_url.url, `data:image/png;base64,${png}`);
    assert.ok(m2.content.some((p) => p.type === 'text' && p.text.includes('And this')));
  });

  it('attachments: a model that refuses images gets their notes instead, for the rest of the session', async () => {
    // LM Studio, Ollama and hosted APIs answer 400 when a model can't read images; none says so up front
    // for every model, so the engine sends them until one is refused.
    const hasImage = (body) => body.messages.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url'));
    const srv = await server({
      respond: (body) => (hasImage(body)
        ? { status: 400, errorBody: { error: { message: 'Model does not support images. Please use a model that does.' } } }
        : { text: `echo: ${JSON.stringify(body.messages.at(-1).content)}` }),
    });
    const eng = await llmEngine(srv.url, { kind: 'lmstudio' });
    const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
    const { api, id, stream } = await run(eng, {
      prompt: 'Look',
      attachments: [{ type: 'image', mimeType: 'image/png', data: png, name: 'mug.png' }],
    });
    const done = await waitEvent(eng, stream, 'turn_completed');
    assert.ok(!stream.events.some((e) => e.event === 'failed'), JSON.stringify(stream.events));
    const [first, second] = chats(srv);
    assert.ok(hasImage(first.body), 'the image was tried first');
    assert.ok(!hasImage(second.body), 'then the same request with its note');
    const note = '[The visitor attached an image "mug.png" (image/png), but this AI can\'t read images.]';
    assert.ok(second.body.messages.at(-1).content.some((p) => p.type === 'text' && p.text === note), JSON.stringify(second.body));
    assert.ok(done.data.text.includes("can't read images"), done.data.text);
    // the next turn's image goes as a note at once, and the first turn's stays a note in the history
    assert.equal((await api.prompt(id, { prompt: 'And this', attachments: [{ type: 'image', mimeType: 'image/png', data: png }] })).status, 200);
    await waitEvent(eng, stream, (e) => e.event === 'turn_completed' && e.data.text.includes('And this'));
    assert.equal(chats(srv).length, 3, 'no second refusal');
    const third = chats(srv)[2].body;
    assert.ok(!hasImage(third), JSON.stringify(third));
    assert.ok(JSON.stringify(third.messages.at(-1)).includes("(image/png), but this AI can't read images."), JSON.stringify(third));
    // a 400 without images is a failed turn as before
    const plain = await server({ script: [{ status: 400 }] });
    const eng2 = await llmEngine(plain.url);
    const r2 = await run(eng2, { prompt: 'Hi' });
    assert.match((await r2.stream.waitFor('failed', 8000)).data, /HTTP 400/);
    assert.equal(chats(plain).length, 1);
  });

  it('attachments: after a cancelled turn, a refused image gets its own note; a refusal of the notes too fails the turn', async () => {
    const hasImage = (body) => body.messages.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url'));
    const lastText = (body) => JSON.stringify(body.messages.at(-1).content);
    const srv = await server({
      respond: (body) => {
        if (lastText(body).includes('slow')) return { hang: true };  // cancelled before it answers
        if (hasImage(body)) return { status: 400, errorBody: { error: { message: 'no images here' } } };
        if (lastText(body).includes('strict')) return { status: 400, errorBody: { error: { message: 'bad request anyway' } } };
        return { text: `echo: ${lastText(body)}` };
      },
    });
    const eng = await llmEngine(srv.url);
    const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');
    const image = (name) => [{ type: 'image', mimeType: 'image/png', data: png, name }];
    const { api, id, stream } = await run(eng, { prompt: 'slow', attachments: image('a.png') });
    assert.ok(await poll(() => chats(srv).length === 1, { timeoutMs: 5000 }));
    assert.equal((await api.cancelTurn(id)).status, 200);
    assert.ok(await poll(async () => (await api.get(id)).json?.status === 'idle', { timeoutMs: 5000 }));
    assert.equal((await api.prompt(id, { prompt: 'Look', attachments: image('b.png') })).status, 200);
    const done = await waitEvent(eng, stream, (e) => e.event === 'turn_completed' && e.data.text.includes('Look'));
    assert.ok(done.data.text.includes('b.png'), done.data.text);
    assert.ok(!done.data.text.includes('a.png'), `the cancelled turn's image left with it: ${done.data.text}`);

    // A session whose notes are refused too: the turn fails with the server's answer to them.
    const { stream: s2 } = await run(eng, { prompt: 'strict', attachments: image('c.png') });
    assert.match((await s2.waitFor('failed', 8000)).data, /bad request anyway/);
  });

  it('a stream opened during a turn past 8 MB gets the replay (the turn\'s first 8 MB), then live events', async () => {
    // The replay is as large as a reader may fall behind; counted against that, it ended every stream
    // opened during such a turn before its first event.
    const piece = 'r'.repeat(64 * 1024);
    const srv = await server({ respond: () => ({ text: piece.repeat(144), chunkSize: piece.length, stallAfter: 144 }) });
    const eng = await llmEngine(srv.url);
    const { api, id, stream } = await run(eng, { prompt: 'Long' });
    assert.ok(await poll(() => chunks(stream).length >= 144 * piece.length, { timeoutMs: 20000 }), `read ${chunks(stream).length}`);
    const late = await api.stream(id);
    await late.waitFor('chunk', 10000);
    assert.deepEqual(late.events.map((e) => e.event), ['webmcp_ready', 'chunk']);
    assert.equal(late.events[1].data.length, 8 * 1024 * 1024, 'the replay stops at its bound');
    assert.ok(!late.isEnded(), 'the stream stays open for the live events');
    assert.equal((await api.cancelTurn(id)).status, 200);
    const done = await late.waitFor('turn_completed', 10000);
    assert.ok(done.data.text.startsWith(piece.repeat(64)), 'turn_completed repeats the first 4 MB');
    assert.ok(done.data.text.length < 4 * 1024 * 1024 + 200, `${done.data.text.length}: and says it was cut`);
    assert.ok(!late.isEnded(), 'and the session goes on');
  });

  it('tool calls without page tools: tool_call events (mcp__webmcp__<name>, in_progress then failed), and the loop stops after maxTurns steps', async () => {
    const srv = await server({ respond: (body, i) => ({ text: i === 0 ? 'Let me look.' : '', toolCalls: [{ name: 'lookup', arguments: { query: `q${i}` } }] }) });
    const eng = await llmEngine(srv.url);
    const { api, id, stream } = await run(eng, { prompt: 'Find mugs', maxTurns: 3 });
    await waitEvent(eng, stream, 'turn_completed', 10000);
    const reqs = chats(srv);
    assert.equal(reqs.length, 3, `maxTurns 3 → 3 requests, got ${reqs.length}`);
    for (const r of reqs) assert.ok(!('tool_choice' in r.body) && !('tools' in r.body), 'no tools, so no tool_choice');
    const calls = stream.events.filter((e) => e.event === 'tool_call').map((e) => e.data);
    assert.ok(calls.length >= 2 && calls.length <= 6, JSON.stringify(calls));
    for (const c of calls) {
      assert.equal(c.toolName, 'mcp__webmcp__lookup');
      assert.equal(typeof c.toolCallId, 'string');
    }
    const firstId = calls[0].toolCallId;
    const forFirst = calls.filter((c) => c.toolCallId === firstId).map((c) => c.status);
    assert.deepEqual(forFirst, ['in_progress', 'failed']);
    assert.equal(calls.filter((c) => c.status === 'in_progress').length, calls.filter((c) => c.status === 'failed').length);
    // the failure went back to the model as a tool message, and the loop went on
    const second = reqs[1].body.messages;
    const asst = second.find((m) => m.role === 'assistant');
    assert.ok(asst?.tool_calls?.[0]?.function?.name === 'lookup', JSON.stringify(second));
    assert.equal(JSON.parse(asst.tool_calls[0].function.arguments).query, 'q0');
    const toolMsg = second.find((m) => m.role === 'tool');
    assert.ok(toolMsg, JSON.stringify(second));
    assert.equal(toolMsg.tool_call_id, asst.tool_calls[0].id);
    assert.match(toolMsg.content, /Unknown tool/);
    assert.equal((await api.get(id)).json.status, 'idle', 'the turn ended, the session stays');
  });

  it('maxTurns is clamped to 1..50, and defaults to 10', async () => {
    const srv = await server({ respond: () => ({ toolCalls: [{ name: 'again', arguments: {} }] }) });
    const eng = await llmEngine(srv.url);
    const count = async (body) => {
      const before = chats(srv).length;
      const { api, id, stream } = await run(eng, { prompt: 'loop', ...body });
      await waitEvent(eng, stream, 'turn_completed', 30000);
      await api.close(id);
      return chats(srv).length - before;
    };
    assert.equal(await count({ maxTurns: 0 }), 1);
    assert.equal(await count({ maxTurns: -5 }), 1);
    assert.equal(await count({}), 10);
    assert.equal(await count({ maxTurns: 1000 }), 50);
  });

  it('cancel-turn stops a slow answer; the session stays usable', async () => {
    const srv = await server({
      respond: (body, i) => (i === 0 ? { text: 'x'.repeat(200), chunkSize: 2, chunkDelayMs: 30 } : { text: 'second answer' }),
    });
    const eng = await llmEngine(srv.url);
    const { api, id, stream } = await run(eng, { prompt: 'long' });
    await stream.waitFor('chunk');
    assert.equal((await api.cancelTurn(id)).status, 200);
    const idle = await poll(async () => (await api.get(id)).json.status === 'idle', { timeoutMs: 3000 });
    assert.ok(idle, `status after cancel-turn: ${(await api.get(id)).json.status}`);
    assert.ok(chunks(stream).length < 200, 'the answer was cut short');
    assert.equal((await api.prompt(id, { prompt: 'next' })).status, 200);
    const tc = await stream.waitFor((e) => e.event === 'turn_completed' && e.data.text === 'second answer', 5000);
    assert.ok(tc);
  });

  it('a provider added and made the default while the engine runs is used by the next session, with no restart', async () => {
    const srv = await server({ models: ['live-model'], respond: () => ({ text: 'from the new server' }) });
    const eng = await llmEngine('http://127.0.0.1:9/v1', { agent: 'claude-acp' });
    assert.equal((await local(eng, '/health')).json.agent, 'Claude Code');
    const { runCli, writeHomeFiles } = await import('./helpers.mjs');
    const add = await runCli(['providers', 'add', 'live', srv.url], { home: eng.home });
    assert.equal(add.code, 0, add.stderr);
    // The visitor's default AI, written by hand (renamed into place, as editors do).
    await writeHomeFiles(eng.home, { 'config.json.new': { agent: 'llm:live' } });
    const fs = await import('node:fs/promises');
    await fs.rename(`${eng.home}/config.json.new`, `${eng.home}/config.json`);
    assert.ok(await poll(async () => (await local(eng, '/health')).json.agent === 'live', { timeoutMs: 5000 }));
    const { stream } = await run(eng, { prompt: 'hi' });
    const tc = await stream.waitFor('turn_completed');
    assert.equal(tc.data.text, 'from the new server');
    assert.equal(chats(srv)[0].body.model, 'live-model');
  });

  it('leuria agents use beside a running engine: the next session gets the new default, a bad id changes nothing', async () => {
    const srv = await server({ models: ['m1', 'm2'], respond: () => ({ text: 'from the chosen model' }) });
    const eng = await llmEngine(srv.url, { agent: 'claude-acp' });
    assert.equal((await local(eng, '/health')).json.agent, 'Claude Code');
    const { runCli } = await import('./helpers.mjs');
    const fs = await import('node:fs/promises');
    const before = await fs.readFile(`${eng.home}/config.json`, 'utf8');
    for (const [args, says] of [[['nope'], /There is no AI 'nope'; 'leuria agents' lists them\./],
      [['llm:nowhere/m1'], /There is no model server 'nowhere'; see 'leuria providers'\./],
      [['llm:fake/m1', '--model', 'm2'], /Name the model once/],
      [['llm:fake', '--model', ''], /--model needs a model's name\./]]) {
      const bad = await runCli(['agents', 'use', ...args], { home: eng.home });
      assert.equal(bad.code, 1, bad.stderr);
      assert.match(bad.stderr, says);
      assert.equal(bad.stdout, '');
      assert.equal(await fs.readFile(`${eng.home}/config.json`, 'utf8'), before, 'a refused id is not saved');
    }
    const ok = await runCli(['agents', 'use', 'llm:fake', '--model', 'm2'], { home: eng.home });
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^llm:fake \(m2\) is now your default AI\. A running engine gives it to the sessions started from now on/);
    assert.ok(await poll(async () => (await local(eng, '/health')).json.agent !== 'Claude Code', { timeoutMs: 5000 }));
    const { stream } = await run(eng, { prompt: 'hi' });
    assert.equal((await stream.waitFor('turn_completed')).data.text, 'from the chosen model');
    assert.equal(chats(srv)[0].body.model, 'm2');
    const list = await runCli(['agents'], { home: eng.home });
    assert.match(list.stdout, /\* llm:fake/);
    assert.match(list.stdout, /Change it with 'leuria agents use <id>'/);
  });

  it('a config.json that does not read keeps the settings the engine has', async () => {
    const srv = await server({ respond: () => ({ text: 'still here' }) });
    const eng = await llmEngine(srv.url);
    const { writeHomeFiles } = await import('./helpers.mjs');
    await writeHomeFiles(eng.home, { 'config.json': '{"agent": ' });
    assert.ok(await poll(() => eng.stderrLines.some((l) => l.includes('event=config.reload_failed')), { timeoutMs: 5000 }));
    const { stream } = await run(eng, { prompt: 'hi' });
    assert.equal((await stream.waitFor('turn_completed')).data.text, 'still here');
  });
});
