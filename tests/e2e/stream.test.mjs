// The session event stream (issue 3; spec "Stream events"): the exact SSE format, null payloads,
// the replay rules, and a slow reader that must not grow the engine's memory.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import {
  startFakeEngine, startEngine, startSessionTurn, stopAll, sessionApi, pairCli, local, web, poll, sleep, freshOrigin, rssKb,
  rawSend, readChunks,
} from './helpers.mjs';
import { startOpenAiServer } from '../fakes/openai-server.mjs';

/** A conforming SSE parser (WHATWG HTML, "Interpreting an event stream"): lines end in CRLF, LF or CR. */
function parseSse(text) {
  const events = [];
  let name = '';
  let data = [];
  for (const line of text.split(/\r\n|\n|\r/)) {
    if (line === '') {
      if (data.length) events.push({ event: name || 'message', data: data.join('\n') });
      name = '';
      data = [];
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') name = value;
    else if (field === 'data') data.push(value);
  }
  return events;
}

async function page(eng, prefix = 'sse') {
  const origin = freshOrigin(prefix);
  const { token } = await pairCli(eng, origin);
  return { origin, token, api: sessionApi(eng, { origin, token }) };
}

async function prepared(api, body = {}) {
  const r = await api.prepare(body);
  assert.equal(r.status, 201, `prepare: ${r.status} ${r.body}`);
  return r.json.sessionId;
}

/**
 * The RSS bound for an engine: 200 MB, or 1 GB for a sanitizer build (ASan keeps freed memory in its
 * quarantine and adds shadow memory, so its RSS says little about the engine's own buffers).
 */
function rssBoundKb(pid) {
  let maps = '';
  try {
    maps = fs.readFileSync(`/proc/${pid}/maps`, 'utf8');
  } catch {}
  return (/libasan|libtsan/.test(maps) ? 1024 : 200) * 1024;
}

const chunksOf = (s) => s.events.filter((e) => e.event === 'chunk').map((e) => e.data);

const sockets = [];

/** An approved session whose stream is open and paused (it reads nothing), prompted with 'flood'. */
async function floodPausedReader(eng, prefix) {
  const p = await page(eng, prefix);
  const id = await prepared(p.api, {});
  const reader = p.api.stream(id, { timeoutMs: 120000 });
  assert.equal((await p.api.approve(id)).status, 200);
  await reader.waitFor('ready', 10000);
  reader.pause();
  assert.equal((await p.api.prompt(id, { prompt: 'flood' })).status, 200);
  return { p, id, reader };
}

/** The chunks a many-chunks agent had written once its progress stopped for 700 ms (it is paused). */
async function agentPaused(eng) {
  let last = -1;
  let since = Date.now();
  await poll(() => {
    const n = Math.max(0, ...eng.readLog().filter((e) => e.kind === 'progress').map((e) => e.chunks));
    if (n !== last) {
      last = n;
      since = Date.now();
    }
    return Date.now() - since >= 700;
  }, { timeoutMs: 30000, intervalMs: 50 });
  return last;
}

describe('session stream', { timeout: 120000 }, () => {
  after(async () => {
    for (const s of sockets) s.destroy();
    await stopAll();
  });

  it('answers 200 text/event-stream with its headers at once, before any event', async () => {
    const eng = await startFakeEngine();
    const p = await page(eng);
    const id = await prepared(p.api, {});
    const s = p.api.stream(id);
    const t0 = Date.now();
    const res = await Promise.race([s.response, sleep(2000).then(() => null)]);
    assert.ok(res, 'the stream\'s headers must arrive at once, while no event is due (pending approval)');
    assert.ok(Date.now() - t0 < 2000);
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'] || '', /^text\/event-stream\b/i);
    assert.equal(res.headers['access-control-allow-origin'], p.origin);
    await sleep(300);
    assert.equal(s.raw, '', 'nothing is sent before approve');
    s.close();
  });

  it('each event is exactly "event: <name>\\ndata: <one-line JSON>\\n\\n", LF only; ready, turn_start, completed, cancelled carry null', async () => {
    const eng = await startFakeEngine({ mode: 'stderr' });
    const p = await page(eng, 'fmt');
    const id = await prepared(p.api, {});
    const s = p.api.stream(id);
    await s.response;
    await p.api.approve(id);
    await s.waitFor('ready');
    const prompt = 'line one\nline "two"\tünïcödé \\ </script> \u2028 end';
    assert.equal((await p.api.prompt(id, { prompt })).status, 200);
    const done = await s.waitFor('turn_completed');
    assert.equal(done.data.text, `echo: ${prompt}`);
    assert.equal(chunksOf(s).join(''), `echo: ${prompt}`);
    assert.equal((await p.api.close(id)).status, 200);
    await s.waitForEnd();

    assert.deepEqual(s.formatErrors, []);
    assert.ok(!s.raw.includes('\r'), 'LF only');
    assert.ok(s.raw.endsWith('\n\n'));
    // Rebuild the raw text from the parsed events: nothing else may be in the stream (comments aside).
    const rebuilt = s.events.map((e) => `event: ${e.event}\ndata: ${e.dataText}\n\n`).join('');
    assert.equal(s.raw.replace(/^:[^\n]*\n\n/gm, ''), rebuilt);
    for (const e of s.events) {
      assert.ok(!e.dataText.includes('\n'), `one-line JSON: ${e.dataText}`);
      assert.deepEqual(JSON.parse(e.dataText), e.data);
    }
    const byName = (n) => s.events.filter((e) => e.event === n);
    for (const n of ['ready', 'turn_start', 'completed']) {
      assert.ok(byName(n).length >= 1, `a ${n} event: ${s.names()}`);
      for (const e of byName(n)) assert.equal(e.dataText, 'null', `${n} carries null`);
    }
    const wr = byName('webmcp_ready')[0];
    assert.deepEqual(Object.keys(wr.data).sort(), ['registrationToken', 'webmcpUrl']);
    assert.equal(wr.data.webmcpUrl, `http://127.0.0.1:${eng.port}`);
    for (const e of byName('chunk')) assert.equal(typeof e.data, 'string');
    assert.deepEqual(byName('thought').map((e) => e.data), ['Thinking.']);
    const logs = byName('log').map((e) => e.data);
    assert.ok(logs.includes('fake-agent: stderr line 1') && logs.includes('fake-agent: stderr line 2'), JSON.stringify(logs));
    assert.deepEqual(Object.keys(done.data).sort(), ['durationMs', 'text']);
    assert.ok(Number.isInteger(done.data.durationMs) && done.data.durationMs >= 0);
    assert.equal(s.names().at(-1), 'completed');
    // the order of a warm start and one turn
    const main = s.names().filter((n) => n !== 'log' && n !== 'thought' && n !== 'chunk');
    assert.deepEqual(main, ['webmcp_ready', 'ready', 'turn_start', 'turn_completed', 'completed']);

    // cancelled carries null too, and ends the stream
    const id2 = await prepared(p.api, {});
    const s2 = p.api.stream(id2);
    await s2.response;
    await p.api.cancel(id2);
    await s2.waitForEnd();
    assert.deepEqual(s2.formatErrors, []);
    assert.equal(s2.raw, 'event: cancelled\ndata: null\n\n');
  });

  it('a new stream during a turn gets webmcp_ready and the turn\'s chunks so far, then live events', async () => {
    const eng = await startFakeEngine({ mode: 'slow', env: { FAKE_ACP_CHUNKS: 15, FAKE_ACP_DELAY_MS: 100 } });
    const p = await page(eng, 'replay');
    const id = await prepared(p.api, { prompt: 'go' });
    const first = p.api.stream(id);
    await first.response;
    await p.api.approve(id);
    await first.waitFor((e) => e.event === 'chunk' && e.data === 'chunk 3\n');
    const second = p.api.stream(id);
    await second.waitFor('chunk');
    // a third one, later still
    await first.waitFor((e) => e.event === 'chunk' && e.data === 'chunk 8\n');
    const third = p.api.stream(id);
    await first.waitFor('turn_completed', 8000);
    await second.waitFor('turn_completed', 3000);
    await third.waitFor('turn_completed', 3000);
    const all = Array.from({ length: 15 }, (_, i) => `chunk ${i}\n`);
    assert.equal(chunksOf(first).join(''), all.join(''));
    for (const [name, s] of [['second', second], ['third', third]]) {
      assert.deepEqual(s.formatErrors, []);
      assert.equal(s.events[0].event, 'webmcp_ready', `${name}: ${s.names()}`);
      assert.ok(!s.names().includes('ready'), `${name}: not idle, so no ready: ${s.names()}`);
      // The replay may arrive coalesced (the engine merges text a reader hasn't read yet); the text,
      // in order and each part once, is what counts, and what clients skip by.
      assert.equal(chunksOf(s).join(''), all.join(''), `${name} stream: replayed text then live text, each once, in order`);
      assert.deepEqual(s.events[0].data, first.events[0].data);
      const tc = s.events.find((e) => e.event === 'turn_completed');
      assert.equal(tc.data.text, all.join(''));
    }
    await p.api.close(id);
    for (const s of [first, second, third]) {
      await s.waitForEnd();
      assert.equal(s.names().at(-1), 'completed');
    }
  });

  it('an AI\'s text with CR, LF and event:/data: lines cannot forge an event (a conforming parser sees chunks only)', async () => {
    const hostile = 'Sure.\r\n\r\nevent: completed\r\ndata: null\r\n\r\n\nevent: failed\ndata: "forged"\n\n\revent: turn_completed\rdata: {}\r\r: comment\n\ndone';
    const srv = await startOpenAiServer({ respond: () => ({ text: hostile, chunkSize: 7 }) });
    try {
      const eng = await startEngine({
        files: { 'config.json': { agent: 'llm:fake' }, 'providers.json': { providers: [{ id: 'fake', kind: 'openai', name: 'Fake', baseUrl: srv.url }] } },
      });
      const { api, id, stream } = await startSessionTurn(eng, { prompt: 'Say something odd' });
      const tc = await stream.waitFor('turn_completed');
      assert.equal(tc.data.text, hostile);
      await api.close(id);
      await stream.waitFor('completed');
      const events = parseSse(stream.raw);
      const names = events.map((e) => e.event);
      assert.deepEqual(names.filter((n) => n !== 'chunk'), ['webmcp_ready', 'turn_start', 'turn_completed', 'completed'], names.join(','));
      const text = events.filter((e) => e.event === 'chunk').map((e) => JSON.parse(e.data)).join('');
      assert.equal(text, hostile, 'every character arrived as chunk text');
      assert.deepEqual(stream.formatErrors, []);
    } finally {
      await srv.close();
    }
  });

  it('a new stream on an idle session gets webmcp_ready, the last turn\'s turn_completed and ready, not its chunks', async () => {
    const eng = await startFakeEngine();
    const p = await page(eng, 'idle');
    const id = await prepared(p.api, { prompt: 'first turn' });
    const s = p.api.stream(id);
    await s.response;
    await p.api.approve(id);
    await s.waitFor('turn_completed');
    const s2 = p.api.stream(id);
    await s2.waitFor('ready');
    await sleep(300);
    // The last turn's end, so a page whose stream dropped just before it still gets the answer.
    assert.deepEqual(s2.names(), ['webmcp_ready', 'turn_completed', 'ready']);
    assert.equal(s2.events[1].data.text, 'echo: first turn');
    assert.equal(s2.events[2].dataText, 'null');
    // and it follows live events
    assert.equal((await p.api.prompt(id, { prompt: 'live' })).status, 200);
    const tc = await s2.waitFor((e) => e.event === 'turn_completed' && e.data.text !== 'echo: first turn');
    assert.equal(tc.data.text, 'echo: live');
    assert.deepEqual(chunksOf(s2).join(''), 'echo: live');
    assert.ok(s2.names().includes('turn_start'));
    s.close();
    s2.close();
  });

  it('a stream on an ended session gets only its final event and closes', async () => {
    const eng = await startFakeEngine({ mode: 'crash-on-prompt' });
    const p = await page(eng, 'ended');
    const mk = async (action) => {
      const id = await prepared(p.api, {});
      const s = p.api.stream(id);
      await s.response;
      await p.api.approve(id);
      await s.waitFor('ready');
      await action(id);
      await s.waitForEnd();
      return id;
    };
    const closed = await mk((id) => p.api.close(id));
    const cancelled = await mk((id) => p.api.cancel(id));
    const failed = await mk((id) => p.api.prompt(id, { prompt: 'crash' }));
    for (const [id, raw] of [
      [closed, 'event: completed\ndata: null\n\n'],
      [cancelled, 'event: cancelled\ndata: null\n\n'],
      [failed, 'event: failed\ndata: "Agent exited with code 3"\n\n'],
    ]) {
      const s = p.api.stream(id);
      const res = await s.response;
      assert.equal(res.status, 200);
      assert.match(res.headers['content-type'] || '', /^text\/event-stream\b/i);
      await s.waitForEnd(3000);
      assert.equal(s.raw, raw);
    }
    // On the wire: the chunked body ends with one last chunk and nothing after it (a lenient client,
    // such as Node's, does not mind bytes after the end of a body whose connection closes; a strict one does).
    const { text, closed: gone } = await rawSend(eng,
      `GET /session/${encodeURIComponent(closed)}/stream HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n` +
      `Origin: ${p.origin}\r\nAuthorization: Bearer ${p.token}\r\nAccept: text/event-stream\r\n\r\n`, { timeoutMs: 3000 });
    assert.ok(gone, 'the engine closes the stream after its final event');
    assert.match(text, /^HTTP\/1\.1 200 /);
    const chunks = readChunks(text.slice(text.indexOf('\r\n\r\n') + 4));  // throws on a bad size line or chunk end
    assert.ok(chunks.whole, 'the body ends with its last chunk');
    assert.equal(chunks.after, '\r\n', 'nothing after the last chunk');
    assert.equal(chunks.body, 'event: completed\ndata: null\n\n');
  });

  it('a reader that stops reading pauses the agent; at the write deadline it is disconnected and the turn goes on', async () => {
    // 24 MB of chunks: more than the kernel's socket buffers (a few MB on loopback), so the engine's
    // queue for this reader fills, the agent is paused, and the write deadline (3 s here) ends the stream.
    const eng = await startFakeEngine({ mode: 'many-chunks', env: { FAKE_ACP_CHUNKS: 3000, FAKE_ACP_CHUNK_PAD: 8000 }, timings: { writeTimeoutMs: 3000 } });
    const p = await page(eng, 'farbehind');
    const id = await prepared(p.api, {});
    const sock = net.connect({ host: '127.0.0.1', port: eng.port });
    sockets.push(sock);
    await new Promise((r, j) => sock.once('connect', r).once('error', j));
    sock.pause();
    let closed = false;
    sock.on('close', () => (closed = true));
    sock.on('error', () => {});
    sock.write(`GET /session/${id}/stream HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nOrigin: ${p.origin}\r\nAuthorization: Bearer ${p.token}\r\n\r\n`);
    assert.equal((await p.api.approve(id)).status, 200);
    await poll(async () => (await p.api.get(id)).json?.status === 'idle', { timeoutMs: 10000 });
    const rss0 = rssKb(eng.proc.pid);
    let peak = rss0;
    const sampler = setInterval(() => {
      const r = rssKb(eng.proc.pid);
      if (r && r > peak) peak = r;
    }, 20);
    try {
      assert.equal((await p.api.prompt(id, { prompt: 'flood' })).status, 200);
      const paused = await agentPaused(eng);
      assert.ok(paused > 0 && paused < 3000, `the agent should be paused part way (it wrote ${paused} of 3000 chunks)`);
      const idle = await poll(async () => (await p.api.get(id, { timeoutMs: 3000 })).json?.status === 'idle', { timeoutMs: 60000, intervalMs: 100 });
      assert.ok(idle, `the turn did not end (status ${(await p.api.get(id)).json?.status})`);
    } finally {
      clearInterval(sampler);
    }
    assert.equal((await local(eng, '/health', { timeoutMs: 2000 })).status, 200);
    assert.ok(peak < rssBoundKb(eng.proc.pid), `engine RSS peaked at ${Math.round(peak / 1024)} MB (before the turn ${Math.round(rss0 / 1024)} MB)`);
    // The reader now drains what the kernel holds; the engine has given up on it while the session lives on.
    let received = 0;
    sock.on('data', (c) => (received += c.length));
    sock.resume();
    const cut = await poll(() => closed, { timeoutMs: 10000 });
    assert.ok(cut, `a reader this far behind should be disconnected (README), got ${received} bytes and still open`);
    assert.ok(received < 24 * 1000 * 1000, `it got only part of the turn (${received} bytes)`);
    assert.equal((await p.api.get(id)).json.status, 'idle', 'the session itself is unaffected');
    // a new stream (the reconnect) works
    const again = p.api.stream(id);
    await again.waitFor('ready');
    again.close();
  });

  it('a reader that pauses and then reads gets the whole turn: the agent waited for it, nothing was dropped', async () => {
    const eng = await startFakeEngine({ mode: 'many-chunks', env: { FAKE_ACP_CHUNKS: 3000, FAKE_ACP_CHUNK_PAD: 8000 } });
    const { p, id, reader } = await floodPausedReader(eng, 'pauser');
    const paused = await agentPaused(eng);
    assert.ok(paused > 0 && paused < 3000, `the agent should be paused part way (it wrote ${paused} of 3000 chunks)`);
    assert.equal((await p.api.get(id)).json.status, 'running');
    reader.resume();
    const done = await reader.waitFor('turn_completed', 60000);
    assert.ok(done.data.text.length > 0);
    const text = reader.events.filter((e) => e.event === 'chunk').map((e) => e.data).join('');
    let whole = 0;
    for (let i = 0; i < 3000; i++) whole += `chunk ${i}`.length + 8001;
    assert.equal(text.length, whole, 'the reader got every chunk of the turn');
    assert.ok(text.endsWith(`chunk 2999${'.'.repeat(8000)}\n`));
    assert.ok(!reader.isEnded(), 'the stream is still open');
    assert.deepEqual(reader.formatErrors, []);
    reader.close();
  });

  it('a model server\'s answer waits for a paused reader too: 24 MB arrive whole once it reads', async () => {
    const whole = Array.from({ length: 3000 }, (_, i) => `chunk ${i}${'.'.repeat(8000)}\n`).join('');
    const srv = await startOpenAiServer({ respond: () => ({ text: whole, chunkSize: 8008 }) });
    try {
      const eng = await startEngine({
        files: { 'config.json': { agent: 'llm:fake' }, 'providers.json': { providers: [{ id: 'fake', kind: 'openai', name: 'Fake', baseUrl: srv.url }] } },
      });
      const { p, id, reader } = await floodPausedReader(eng, 'llmpause');
      await sleep(1500);  // the kernel's buffers and the reader's queue fill; the engine stops reading the model
      assert.equal((await p.api.get(id)).json.status, 'running');
      reader.resume();
      await reader.waitFor('turn_completed', 60000);
      const text = reader.events.filter((e) => e.event === 'chunk').map((e) => e.data).join('');
      assert.equal(text.length, whole.length, 'the reader got every chunk (none dropped for being behind)');
      assert.ok(text === whole);
      reader.close();
    } finally {
      await srv.close();
    }
  });

  it('a reader that does not read (20000 chunks) does not break the engine or grow its memory', async () => {
    const eng = await startFakeEngine({ mode: 'many-chunks', env: { FAKE_ACP_CHUNKS: 20000 }, timings: { writeTimeoutMs: 3000 } });
    const p = await page(eng, 'slowreader');
    const id = await prepared(p.api, { prompt: 'flood' });
    // The slow reader: a raw socket that sends the request and then never reads.
    const sock = net.connect({ host: '127.0.0.1', port: eng.port });
    sockets.push(sock);
    await new Promise((r, j) => sock.once('connect', r).once('error', j));
    sock.pause();
    sock.write(`GET /session/${id}/stream HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nOrigin: ${p.origin}\r\nAuthorization: Bearer ${p.token}\r\n\r\n`);
    let received = 0;
    let sockClosed = false;
    sock.on('close', () => (sockClosed = true));
    sock.on('error', () => {});
    await sleep(100);
    const rss0 = rssKb(eng.proc.pid);
    const t0 = Date.now();
    assert.equal((await p.api.approve(id)).status, 200);
    let peak = rss0;
    const sampler = setInterval(() => {
      const r = rssKb(eng.proc.pid);
      if (r && r > peak) peak = r;
    }, 50);
    // The turn's end is watched through GET (a stream reader could itself be cut off by a burst).
    const idle = async (ms) => poll(async () => (await p.api.get(id, { timeoutMs: 2000 })).json?.status === 'idle', { timeoutMs: ms, intervalMs: 100 });
    try {
      assert.ok(await idle(60000), `the turn did not end within 60 s (status ${(await p.api.get(id)).json?.status})`);
      const log = eng.readLog();
      assert.ok(log.some((e) => e.kind === 'prompt'), 'the agent got the prompt');
      const h = await local(eng, '/health', { timeoutMs: 2000 });
      assert.equal(h.status, 200);
      assert.equal(h.json.ok, true);
      const hw = await web(eng, p.origin, '/health', { token: p.token, timeoutMs: 2000 });
      assert.equal(hw.json.paired, true);
    } finally {
      clearInterval(sampler);
    }
    const rss1 = rssKb(eng.proc.pid);
    assert.ok(peak < rssBoundKb(eng.proc.pid), `engine RSS peaked at ${Math.round(peak / 1024)} MB (start ${Math.round(rss0 / 1024)} MB)`);
    assert.ok(rss1 < rssBoundKb(eng.proc.pid), `engine RSS ${Math.round(rss1 / 1024)} MB after the turn`);
    // The engine is still fully usable: another turn on the same session, seen whole by a fresh reader
    // (the replay is empty on an idle session, then the live turn).
    const watcher = p.api.stream(id);
    await watcher.waitFor('ready');
    assert.equal((await p.api.prompt(id, { prompt: 'again' })).status, 200);
    assert.ok(await idle(60000), 'the second turn did not end');
    assert.ok(Date.now() - t0 < 90000);
    // The slow reader now reads: it gets what was buffered and is then either still fed or cut off
    // (README: a reader 4,096 events or 8 MB behind is disconnected), never an endless backlog.
    sock.on('data', (c) => (received += c.length));
    sock.resume();
    await p.api.close(id);
    await poll(() => sockClosed, { timeoutMs: 10000 });
    assert.ok(sockClosed, `the slow reader's connection should end once the session ended (received ${received} bytes)`);
    assert.ok(received > 0);
    await watcher.waitForEnd(10000);
    assert.ok(watcher.events.length > 0);
  });
});
