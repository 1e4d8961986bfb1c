// Sessions (issue 3): every route, status and rule of the spec's "Sessions" section, driven with the
// scripted ACP agent (tests/fakes/acp-agent.mjs).

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import {
  startFakeEngine, stopAll, sessionApi, pairCli, pairApp, runCli, web, local, admin, poll, sleep,
  freshOrigin, makeHome, assertError, assertJsonType, assertCors, readFakeLog, FAKE_ACP, waitPidGone,
} from './helpers.mjs';

const ID_RE = /^[A-Za-z0-9_-]{16,}$/;

/** A paired page on `eng`: {origin, token, api}. */
async function page(eng, prefix = 'sess') {
  const origin = freshOrigin(prefix);
  const { token } = await pairCli(eng, origin);
  return { origin, token, api: sessionApi(eng, { origin, token }) };
}

function decodeRegistration(tok) {
  return JSON.parse(Buffer.from(tok, 'base64').toString('utf8'));
}

/** Assert the 200 {sessionId, status} answer of a POST action. */
function assertAction(res, id, status) {
  const ctx = `${res.status} ${res.body}`;
  assert.equal(res.status, 200, ctx);
  assertJsonType(res);
  assert.deepEqual(res.json, { sessionId: id, status }, ctx);
}

/** Prepare (201 expected) and return the session id. */
async function prepared(api, body = {}) {
  const r = await api.prepare(body);
  assert.equal(r.status, 201, `prepare: ${r.status} ${r.body}`);
  return r.json.sessionId;
}

/** Prepare, open the stream, approve; returns {id, stream}. */
async function started(api, body = {}) {
  const id = await prepared(api, body);
  const stream = api.stream(id);
  await stream.response;
  assertAction(await api.approve(id), id, 'running');
  return { id, stream };
}

async function waitStatus(api, id, status, timeoutMs = 5000) {
  const r = await poll(async () => {
    const g = await api.get(id);
    return g.json?.status === status ? g : null;
  }, { timeoutMs, intervalMs: 50 });
  if (!r) {
    const g = await api.get(id);
    assert.fail(`session ${id} did not reach status ${status} within ${timeoutMs} ms; GET: ${g.status} ${g.body}`);
  }
  return r;
}

const extraDirs = [];

describe('sessions', { timeout: 120000 }, () => {
  after(async () => {
    try {
      await stopAll();
    } finally {
      await Promise.all(extraDirs.map((d) => fsp.rm(d, { recursive: true, force: true })));
    }
  });

  it('prepare answers 201 {sessionId, status, registrationToken, webmcpUrl}, for a page and a local process', async () => {
    const eng = await startFakeEngine();
    const p = await page(eng);
    const r = await p.api.prepare({ prompt: 'Say hello' });
    assert.equal(r.status, 201, r.body);
    assertJsonType(r);
    assertCors(r, p.origin);
    assert.deepEqual(Object.keys(r.json).sort(), ['registrationToken', 'sessionId', 'status', 'webmcpUrl']);
    assert.match(r.json.sessionId, ID_RE);
    assert.equal(r.json.status, 'pending_approval');
    assert.equal(r.json.webmcpUrl, `http://127.0.0.1:${eng.port}`);
    const reg = decodeRegistration(r.json.registrationToken);
    assert.equal(reg.server, `ws://127.0.0.1:${eng.port}`);
    assert.equal(typeof reg.token, 'string');
    assert.ok(reg.token.length >= 16, reg.token);

    // a local process (no Origin) may use sessions too, without a token
    const l = await sessionApi(eng).prepare({});
    assert.equal(l.status, 201, l.body);
    assert.equal(l.json.status, 'pending_approval');
    assert.notEqual(l.json.sessionId, r.json.sessionId);
    assert.notEqual(decodeRegistration(l.json.registrationToken).token, reg.token);
    // an empty body counts as {}
    const e = await local(eng, '/session/prepare', { method: 'POST' });
    assert.equal(e.status, 201, e.body);
  });

  it('prepare validates prompt, attachments and maxTurns', async () => {
    const eng = await startFakeEngine();
    const { api } = await page(eng, 'valid');
    for (const prompt of ['', 42, true, ['x'], { text: 'x' }]) {
      assertError(await api.prepare({ prompt }), 400);
    }
    assertError(await api.prepare('{not json'), 400, { error: 'Invalid JSON body' });

    const img = { type: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=' };
    const txt = { type: 'text', text: 'hello', name: 'a.txt' };
    const ten = [img, txt, img, txt, img, txt, img, txt, img, txt];
    const ok10 = await api.prepare({ prompt: 'x', attachments: ten });
    assert.equal(ok10.status, 201, `10 attachments: ${ok10.body}`);
    await api.cancel(ok10.json.sessionId);
    assertError(await api.prepare({ prompt: 'x', attachments: [...ten, txt] }), 400);

    const malformed = [
      'not an array',
      { type: 'text', text: 'x' },
      ['a string'],
      [null],
      [{ type: 'video', data: 'AAAA' }],
      [{ text: 'no type' }],
      [{ type: 'image', data: 'AAAA' }],
      [{ type: 'image', mimeType: 'text/plain', data: 'AAAA' }],
      [{ type: 'image', mimeType: 'image/png' }],
      [{ type: 'image', mimeType: 'image/png', data: 7 }],
      [{ type: 'text' }],
      [{ type: 'text', text: 5 }],
    ];
    for (const attachments of malformed) {
      const r = await api.prepare({ prompt: 'x', attachments });
      assertError(r, 400);
    }
    // an image's data is standard base64, padded; a data: URL is named as what it is
    const image = (data) => [{ type: 'image', mimeType: 'image/png', data }];
    const dataUrl = await api.prepare({ prompt: 'x', attachments: image('data:image/png;base64,iVBORw0KGgo=') });
    assertError(dataUrl, 400);
    assert.match(dataUrl.json.error, /^attachments\[0\]: send the image's base64 alone/);
    for (const data of ['iVBORw0KGgo', 'iVBOR w0KGgo=', 'iVBO\nRw0KGgo=', 'iV=ORw0KGgo=', 'iVBORw0KG===', 'iVBORw0_Gg-=', 'é']) {
      const r = await api.prepare({ prompt: 'x', attachments: image(data) });
      assertError(r, 400);
      assert.match(r.json.error, /not base64/, JSON.stringify(data));
    }
    for (const data of ['AAAA', 'iVBORw0KGgo=', 'iVBORw0KGg==', '+/+/']) {
      const r = await api.prepare({ prompt: 'x', attachments: image(data) });
      assert.equal(r.status, 201, `${data}: ${r.body}`);
      await api.cancel(r.json.sessionId);
    }
    // attachments go with a prompt: without one they would be lost
    const alone = await api.prepare({ attachments: [txt] });
    assertError(alone, 400, { error: 'attachments need a prompt: send them with it' });
    const none = await api.prepare({ attachments: [] });
    assert.equal(none.status, 201, none.body);
    await api.cancel(none.json.sessionId);

    // maxTurns is clamped to 1..50, not refused
    for (const maxTurns of [0, -3, 1, 50, 51, 1000]) {
      const r = await api.prepare({ prompt: 'x', maxTurns });
      assert.equal(r.status, 201, `maxTurns ${maxTurns}: ${r.status} ${r.body}`);
      assertAction(await api.cancel(r.json.sessionId), r.json.sessionId, 'cancelled');
    }
    // none of the refused prepares made a session: 4 more fit
    for (let i = 0; i < 4; i++) assert.equal((await api.prepare({})).status, 201);
  });

  it('approve answers status "running"; approving twice is 400; unknown ids are 404', async () => {
    const eng = await startFakeEngine();
    const { api } = await page(eng, 'approve');
    const { id, stream } = await started(api, { prompt: 'Say hello' });
    assertError(await api.approve(id), 400);
    await stream.waitFor('turn_completed');
    assertError(await api.approve(id), 400);
    for (const action of ['approve', 'prompt', 'cancel-turn', 'cancel', 'close']) {
      assertError(await api.call('POST', `/session/nope-not-a-session/${action}`, { prompt: 'x' }), 404);
    }
    assertError(await api.get('nope-not-a-session'), 404);
    assertError(await api.call('GET', '/session/nope-not-a-session/stream'), 404);
    stream.close();
  });

  it('a warm start (no prompt) says webmcp_ready then ready, and goes idle; then prompt runs a turn', async () => {
    const eng = await startFakeEngine();
    const { api } = await page(eng, 'warm');
    const { id, stream } = await started(api, {});
    await stream.waitFor('ready');
    assert.deepEqual(stream.names().slice(0, 2), ['webmcp_ready', 'ready']);
    assert.equal(stream.events[1].data, null);
    assert.equal((await api.get(id)).json.status, 'idle');
    assert.ok(!stream.names().includes('turn_start'), 'no turn without a prompt');

    assertError(await api.prompt(id, {}), 400);
    assertError(await api.prompt(id, { prompt: '' }), 400);
    assertError(await api.prompt(id, { prompt: 3 }), 400);
    const r = await api.prompt(id, { prompt: 'Say hi' });
    assert.equal(r.status, 200, r.body);
    assert.equal(r.json.sessionId, id);
    assert.ok(['running', 'idle'].includes(r.json.status), r.body);
    const done = await stream.waitFor('turn_completed');
    assert.equal(done.data.text, 'echo: Say hi');
    assert.equal(typeof done.data.durationMs, 'number');
    const chunks = stream.events.filter((e) => e.event === 'chunk').map((e) => e.data).join('');
    assert.equal(chunks, 'echo: Say hi');
    const names = stream.names();
    assert.ok(names.indexOf('turn_start') > names.indexOf('ready'), names.join());
    await waitStatus(api, id, 'idle');

    // a second turn on the same session
    assert.equal((await api.prompt(id, { prompt: 'again' })).status, 200);
    await stream.waitFor((e) => e.event === 'turn_completed' && e.data.text === 'echo: again');
    stream.close();
  });

  it('prompt: 400 before approve, 400 while a turn runs, 400 "Agent session has ended. Start a new session." after the end', async () => {
    const eng = await startFakeEngine({ mode: 'slow', env: { FAKE_ACP_CHUNKS: 30, FAKE_ACP_DELAY_MS: 100 } });
    const { api } = await page(eng, 'prompt');
    const id0 = await prepared(api, {});
    assertError(await api.prompt(id0, { prompt: 'too early' }), 400);

    const { id, stream } = await started(api, { prompt: 'go' });
    await stream.waitFor('chunk');
    const busy = await api.prompt(id, { prompt: 'while running' });
    assertError(busy, 400);
    assert.equal((await api.get(id)).json.status, 'running');

    assertAction(await api.close(id), id, 'completed');
    await stream.waitForEnd();
    assertError(await api.prompt(id, { prompt: 'after the end' }), 400, { error: 'Agent session has ended. Start a new session.' });
  });

  it('cancel-turn: a 200 no-op when idle; stops a slow turn and the session stays usable', async () => {
    const eng = await startFakeEngine({ mode: 'slow', env: { FAKE_ACP_CHUNKS: 12, FAKE_ACP_DELAY_MS: 150 } });
    const { api } = await page(eng, 'cturn');
    const { id, stream } = await started(api, {});
    await stream.waitFor('ready');
    assertAction(await api.cancelTurn(id), id, 'idle');
    assertAction(await api.cancelTurn(id), id, 'idle');

    assert.equal((await api.prompt(id, { prompt: 'long' })).status, 200);
    await stream.waitFor((e) => e.event === 'chunk' && e.data === 'chunk 1\n');
    const r = await api.cancelTurn(id);
    assert.equal(r.status, 200, r.body);
    assert.equal(r.json.sessionId, id);
    await waitStatus(api, id, 'idle', 3000);
    const nChunks = stream.events.filter((e) => e.event === 'chunk').length;
    assert.ok(nChunks < 12, `the turn was not stopped: ${nChunks} chunks`);
    assert.ok(eng.readLog().some((e) => e.kind === 'cancel'), 'the agent got session/cancel');
    await sleep(400);
    assert.equal(stream.events.filter((e) => e.event === 'chunk').length, nChunks, 'no chunks after the cancel');
    assert.ok(!stream.isEnded(), 'the stream stays open');

    // still usable: the next prompt runs to the end
    const from = stream.events.length;
    assert.equal((await api.prompt(id, { prompt: 'again' })).status, 200);
    const done = await stream.waitFor('turn_completed', 8000, { from });
    assert.equal(done.data.text, Array.from({ length: 12 }, (_, i) => `chunk ${i}\n`).join(''));
    assert.equal((await api.get(id)).json.status, 'idle');
    stream.close();
  });

  it('a prompt right after cancel-turn waits for the stopping turn and then runs (one may wait)', async () => {
    // The agent hears session/cancel at once but answers it only after its current pause (1.5 s).
    const eng = await startFakeEngine({ mode: 'slow', env: { FAKE_ACP_CHUNKS: 2, FAKE_ACP_DELAY_MS: 1500 } });
    const { api } = await page(eng, 'cturn-next');
    const { id, stream } = await started(api, { prompt: 'long' });
    await stream.waitFor((e) => e.event === 'chunk' && e.data === 'chunk 0\n');
    assertAction(await api.cancelTurn(id), id, 'running');
    assertAction(await api.prompt(id, { prompt: 'next' }), id, 'running');
    assertError(await api.prompt(id, { prompt: 'a third' }), 400, { error: 'A turn is already running' });
    const first = await stream.waitFor('turn_completed', 5000);
    assert.equal(first.data.text, 'chunk 0\n', 'the cancelled turn ended with what it had said');
    const from = stream.events.indexOf(first) + 1;
    assert.equal(stream.events[from]?.event, 'turn_start', 'the waiting prompt started right after');
    const second = await stream.waitFor('turn_completed', 8000, { from });
    assert.equal(second.data.text, 'chunk 0\nchunk 1\n');
    assert.equal((await api.get(id)).json.status, 'idle');

    // cancel-turn twice: the second drops the prompt that waited, so the session goes idle.
    const at = stream.events.length;
    assert.equal((await api.prompt(id, { prompt: 'long' })).status, 200);
    await stream.waitFor('chunk', 5000, { from: at });
    assertAction(await api.cancelTurn(id), id, 'running');
    assertAction(await api.prompt(id, { prompt: 'dropped' }), id, 'running');
    assertAction(await api.cancelTurn(id), id, 'running');
    await waitStatus(api, id, 'idle', 3000);
    await sleep(300);
    assert.equal(stream.events.slice(at).filter((e) => e.event === 'turn_start').length, 1, 'no turn for the dropped prompt');
    assert.equal(eng.readLog().filter((e) => e.kind === 'prompt').length, 3, 'the agent got three prompts');
    stream.close();
  });

  it('cancel and close: final event, stream ends, then 200 with the status on an ended session', async () => {
    const eng = await startFakeEngine({ mode: 'slow', env: { FAKE_ACP_CHUNKS: 50, FAKE_ACP_DELAY_MS: 100 } });
    const { api } = await page(eng, 'end');

    // cancel during a turn
    const a = await started(api, { prompt: 'go' });
    await a.stream.waitFor('chunk');
    assertAction(await api.cancel(a.id), a.id, 'cancelled');
    const fa = await a.stream.waitFor('cancelled');
    assert.equal(fa.data, null);
    await a.stream.waitForEnd();
    assert.equal(a.stream.names().at(-1), 'cancelled');
    assertAction(await api.cancel(a.id), a.id, 'cancelled');
    assertAction(await api.close(a.id), a.id, 'cancelled');

    // close an idle session
    const b = await started(api, {});
    await b.stream.waitFor('ready');
    assertAction(await api.close(b.id), b.id, 'completed');
    const fb = await b.stream.waitFor('completed');
    assert.equal(fb.data, null);
    await b.stream.waitForEnd();
    assert.equal(b.stream.names().at(-1), 'completed');
    assertAction(await api.close(b.id), b.id, 'completed');
    assertAction(await api.cancel(b.id), b.id, 'completed');
    assert.equal((await api.get(b.id)).json.status, 'completed');

    // cancel before approve
    const c = await prepared(api, { prompt: 'never' });
    const cs = api.stream(c);
    await cs.response;
    assertAction(await api.cancel(c), c, 'cancelled');
    await cs.waitFor('cancelled');
    await cs.waitForEnd();
    assertError(await api.approve(c), 400);
    assert.equal((await api.get(c)).json.status, 'cancelled');
  });

  it('GET /session/:id: {id, status, origin, createdAt, registrationToken, webmcpUrl}; error only after a failure', async () => {
    const eng = await startFakeEngine({ mode: 'crash-on-prompt' });
    const p = await page(eng, 'get');
    const t0 = Date.now();
    const prep = await p.api.prepare({});
    const id = prep.json.sessionId;
    const g = await p.api.get(id);
    assert.equal(g.status, 200, g.body);
    assertJsonType(g);
    assertCors(g, p.origin);
    assert.deepEqual(Object.keys(g.json).sort(), ['createdAt', 'id', 'origin', 'registrationToken', 'status', 'webmcpUrl']);
    assert.equal(g.json.id, id);
    assert.equal(g.json.status, 'pending_approval');
    assert.equal(g.json.origin, p.origin);
    assert.match(g.json.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(Math.abs(Date.parse(g.json.createdAt) - t0) < 60000, g.json.createdAt);
    assert.equal(g.json.registrationToken, prep.json.registrationToken);
    assert.equal(g.json.webmcpUrl, prep.json.webmcpUrl);
    assert.ok(!('error' in g.json), 'no error key when there is none');

    const stream = p.api.stream(id);
    await stream.response;
    assertAction(await p.api.approve(id), id, 'running');
    await stream.waitFor('ready');
    const idle = await p.api.get(id);
    assert.equal(idle.json.status, 'idle');
    assert.ok(!('error' in idle.json), idle.body);
    assert.equal((await p.api.prompt(id, { prompt: 'crash now' })).status, 200);
    const failed = await stream.waitFor('failed');
    assert.equal(failed.data, 'Agent exited with code 3');
    const after1 = await waitStatus(p.api, id, 'failed');
    assert.equal(after1.json.error, 'Agent exited with code 3');
    // closing a failed session keeps its status
    assertAction(await p.api.close(id), id, 'failed');
  });

  it('sessions are visible only to their origin: another origin gets 404, no token 401 not_paired', async () => {
    const eng = await startFakeEngine();
    const a = await page(eng, 'owner');
    const b = await page(eng, 'other');
    const { id, stream } = await started(a.api, {});
    await stream.waitFor('ready');
    for (const [method, p] of [['GET', `/session/${id}`], ['GET', `/session/${id}/stream`], ['POST', `/session/${id}/approve`],
      ['POST', `/session/${id}/prompt`], ['POST', `/session/${id}/cancel-turn`], ['POST', `/session/${id}/cancel`],
      ['POST', `/session/${id}/close`]]) {
      const body = method === 'POST' ? { prompt: 'x' } : undefined;
      const other = await b.api.call(method, p, body);
      assertError(other, 404);
      // the owner's token from another origin is no good either
      const stolen = await web(eng, b.origin, p, { method, body, token: a.token });
      assertError(stolen, 401, { code: 'not_paired' });
      const none = await web(eng, a.origin, p, { method, body });
      assertError(none, 401, { code: 'not_paired' });
      const wrong = await web(eng, a.origin, p, { method, body, token: b.token });
      assertError(wrong, 401, { code: 'not_paired' });
    }
    assertError(await web(eng, a.origin, '/session/prepare', { body: {} }), 401, { code: 'not_paired' });
    // nothing above touched it
    const g = await a.api.get(id);
    assert.equal(g.json.status, 'idle', g.body);
    assert.ok(!stream.isEnded());
    stream.close();
  });

  it('an origin holds 4 live sessions: the 5th prepare is 400, and closing one makes room', async () => {
    const eng = await startFakeEngine();
    const a = await page(eng, 'four');
    const b = await page(eng, 'fourb');
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await prepared(a.api, {}));
    assertError(await a.api.prepare({}), 400);
    // the limit is per origin
    const other = await b.api.prepare({});
    assert.equal(other.status, 201, other.body);
    // a running one counts as live too
    const s = a.api.stream(ids[0]);
    await s.response;
    await a.api.approve(ids[0]);
    await s.waitFor('ready');
    assertError(await a.api.prepare({}), 400);
    assertAction(await a.api.close(ids[0]), ids[0], 'completed');
    const again = await a.api.prepare({});
    assert.equal(again.status, 201, again.body);
    assertError(await a.api.prepare({}), 400);
    assertAction(await a.api.cancel(ids[1]), ids[1], 'cancelled');
    assert.equal((await a.api.prepare({})).status, 201);
    s.close();
  });

  it('an ended session stays readable until retentionMs, then answers 404', async () => {
    const eng = await startFakeEngine({ timings: { retentionMs: 1500 } });
    const { api } = await page(eng, 'retain');
    const { id, stream } = await started(api, {});
    await stream.waitFor('ready');
    assertAction(await api.close(id), id, 'completed');
    await stream.waitForEnd();
    assert.equal((await api.get(id)).json.status, 'completed');
    const replay = api.stream(id);
    await replay.waitForEnd();
    assert.deepEqual(replay.names(), ['completed']);
    assertAction(await api.close(id), id, 'completed');
    const gone = await poll(async () => (await api.get(id)).status === 404, { timeoutMs: 5000, intervalMs: 100 });
    assert.ok(gone, 'the session should be forgotten after retentionMs');
    assertError(await api.get(id), 404);
    assertError(await api.call('GET', `/session/${id}/stream`), 404);
    assertError(await api.close(id), 404);
    assertError(await api.cancel(id), 404);
  });

  it('an ended session is readable for 5 minutes by default (not forgotten at once)', async () => {
    const eng = await startFakeEngine();
    const { api } = await page(eng, 'retain5');
    const id = await prepared(api, {});
    assertAction(await api.cancel(id), id, 'cancelled');
    await sleep(1000);
    assert.equal((await api.get(id)).json.status, 'cancelled');
  });

  it('an origin keeps its newest 64 ended sessions: a page closing sessions in a loop makes the oldest 404, not a pile', async () => {
    const eng = await startFakeEngine();
    const { api } = await page(eng, 'pile');
    const other = await page(eng, 'pile-other');
    const theirs = await prepared(other.api, {});
    assertAction(await other.api.close(theirs), theirs, 'completed');
    const ids = [];
    for (let i = 0; i < 65; i++) {
      const id = await prepared(api, {});
      assertAction(await api.close(id), id, 'completed');
      ids.push(id);
    }
    assertError(await api.get(ids[0]), 404);
    assertError(await api.call('GET', `/session/${ids[0]}/stream`), 404);
    for (const id of [ids[1], ids[32], ids[64]]) assert.equal((await api.get(id)).json.status, 'completed', id);
    assert.equal((await other.api.get(theirs)).json.status, 'completed', 'another origin\'s are its own');
    // Live sessions never count against it, and the origin can still hold its 4.
    const live = [];
    for (let i = 0; i < 4; i++) live.push(await prepared(api, {}));
    for (const id of live) assert.equal((await api.get(id)).json.status, 'pending_approval');
  });

  it('a live session no page uses for unusedMs ends cancelled, so a crashed tab cannot hold the origin\'s 4', async () => {
    const eng = await startFakeEngine({ timings: { unusedMs: 1500 } });
    const { api } = await page(eng, 'unused');
    // One the page still reads, and three it left behind (its close-on-unload never went out): two
    // waiting for approval, one approved and idle with its agent running.
    const kept = await prepared(api, {});
    const stream = api.stream(kept);
    await stream.response;
    const left = [await prepared(api, {}), await prepared(api, {}), await prepared(api, {})];
    assertError(await api.prepare({}), 400);
    assertAction(await api.approve(left[2]), left[2], 'running');
    await waitStatus(api, left[2], 'idle');
    const rec = await poll(() => eng.readLog().find((e) => e.kind === 'start'), { timeoutMs: 5000, intervalMs: 50 });
    assert.ok(rec, 'the agent started');
    // No request for them meanwhile (a GET counts as the page using it).
    await sleep(4000);
    for (const id of left) {
      const g = await api.get(id);
      assert.equal(g.json.status, 'cancelled', g.body);
      assert.equal(g.json.error, 'No page used this session for 1500 milliseconds');
    }
    assert.equal((await api.get(kept)).json.status, 'pending_approval');
    assert.ok(!stream.isEnded(), 'a session a stream reads is kept');
    assert.ok(await waitPidGone(rec.pid, 5000), 'the idle session\'s agent is stopped');
    for (let i = 0; i < 3; i++) assert.equal((await api.prepare({})).status, 201, 'their places are free again');
    stream.close();
  });

  it('revoking the site (leuria sites revoke) ends its sessions at once', async () => {
    const eng = await startFakeEngine();
    const a = await page(eng, 'revoke');
    const b = await page(eng, 'keep');
    const s1 = await started(a.api, {});
    await s1.stream.waitFor('ready');
    const s2 = await started(b.api, {});
    await s2.stream.waitFor('ready');
    const pending = await prepared(a.api, { prompt: 'later' });
    const ps = a.api.stream(pending);
    await ps.response;
    const agentPid = eng.readLog().find((e) => e.kind === 'start')?.pid;

    const r = await runCli(['sites', 'revoke', a.origin], { home: eng.home });
    assert.equal(r.code, 0, r.stderr);
    await s1.stream.waitFor('cancelled', 3000);
    await s1.stream.waitForEnd(2000);
    await ps.waitFor('cancelled', 3000);
    assertError(await a.api.get(s1.id), 401, { code: 'not_paired' });
    if (agentPid) assert.ok(await waitPidGone(agentPid, 5000), `agent ${agentPid} still runs after revoke`);
    // the other site is untouched
    assert.equal((await b.api.get(s2.id)).json.status, 'idle');
    assert.ok(!s2.stream.isEnded());
    s2.stream.close();
  });

  it('pairing the site again (a new token) ends its sessions', async () => {
    const eng = await startFakeEngine();
    const a = await page(eng, 'repair');
    const { stream } = await started(a.api, {});
    await stream.waitFor('ready');
    const { token } = await pairCli(eng, a.origin);
    await stream.waitFor('cancelled', 3000);
    await stream.waitForEnd(2000);
    // the new token works for new sessions
    const fresh = sessionApi(eng, { origin: a.origin, token });
    const again = await started(fresh, { prompt: 'hello again' });
    const done = await again.stream.waitFor('turn_completed', 8000);
    assert.equal(done.data.text, 'echo: hello again');
    again.stream.close();
  });

  it('revoking the site through the admin API (app mode) ends its sessions at once', async () => {
    const eng = await startFakeEngine({ app: true });
    const origin = freshOrigin('adminrev');
    const { token } = await pairApp(eng, origin);
    const api = sessionApi(eng, { origin, token });
    const { stream } = await started(api, {});
    await stream.waitFor('ready');
    const d = await admin(eng, `/admin/sites?origin=${encodeURIComponent(origin)}`, { method: 'DELETE' });
    assert.equal(d.status, 200, d.body);
    await stream.waitFor('cancelled', 3000);
    await stream.waitForEnd(2000);
  });

  it('leuria sites use <origin> <agent> ends the site\'s sessions and the next session uses the new AI', async () => {
    const dir = await makeHome();
    extraDirs.push(dir);
    const log2 = path.join(dir, 'fake2.log');
    const eng2 = await startFakeEngine({
      agents: { fake2: { name: 'Fake Two', command: FAKE_ACP, args: [], env: { FAKE_ACP_LOG: log2 } } },
    });
    const a = await page(eng2, 'use');
    const b = await page(eng2, 'useb');
    const health = async (p) => (await web(eng2, p.origin, '/health', { token: p.token })).json;
    assert.equal((await health(a)).agent, 'Fake');
    const { id, stream } = await started(a.api, {});
    await stream.waitFor('ready');
    const bs = await started(b.api, {});
    await bs.stream.waitFor('ready');
    const firstPid = eng2.readLog().find((e) => e.kind === 'start')?.pid;

    const r = await runCli(['sites', 'use', a.origin, 'fake2'], { home: eng2.home });
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    await stream.waitFor('cancelled', 3000);
    await stream.waitForEnd(2000);
    assert.equal((await a.api.get(id)).json.status, 'cancelled');
    // the other site keeps its session and its AI
    assert.equal((await b.api.get(bs.id)).json.status, 'idle');
    assert.equal((await health(b)).agent, 'Fake');
    assert.equal((await local(eng2, '/health')).json.agent, 'Fake');
    // this site now has the new AI
    assert.equal((await health(a)).agent, 'Fake Two');
    const n2 = await started(a.api, { prompt: 'who are you' });
    const done = await n2.stream.waitFor('turn_completed', 8000);
    assert.equal(done.data.text, 'echo: who are you');
    const l2 = readFakeLog(log2);
    assert.ok(l2.some((e) => e.kind === 'start'), 'the new session runs the new agent (fake2)');
    assert.ok(l2.some((e) => e.kind === 'prompt' && JSON.stringify(e.params).includes('who are you')), JSON.stringify(l2).slice(0, 500));
    if (firstPid) assert.ok(await waitPidGone(firstPid, 5000), 'the old agent process ended');
    bs.stream.close();
    n2.stream.close();
  });
});
