// Misbehaving agents (issue 7): a scripted bad agent (tests/fakes/bad-agent.mjs) hangs, floods, writes
// invalid bytes, exits mid-turn, double-forks, ignores SIGTERM, never answers initialize, answers with
// wrong ids and sends requests the engine does not offer. Each time the session ends with a plain
// error (or, for what can be ignored safely, goes on), the engine keeps no child, zombie or extra
// descriptor (/proc, against a baseline), nothing the agent started runs on, and a well-behaved
// session on the same engine then completes a turn.
//
// One engine runs the whole file: the agent reads its mode from a file at start, so the same AI is a
// bad agent for one session and a good one for the next.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import {
  ROOT, makeHome, startEngine, stopAll, fakeAgentConfig, readFakeLog, startSessionTurn, poll, sleep, rawSend, rssKb, readChunks,
} from './helpers.mjs';
import { assertNoLeftovers, assertServes, childrenOf, fdCount } from './lib/proc.mjs';

const BAD_AGENT = path.join(ROOT, 'tests/fakes/bad-agent.mjs');
// Short enough to keep the file quick, long enough for a loaded machine (node starts in ~0.3 s).
const TIMINGS = { startTimeoutMs: 6000, killGraceMs: 1000, cancelGraceMs: 2000 };

let eng;
let home;
let baseline;
const modeFile = () => path.join(home, 'bad-mode');
const log = () => readFakeLog(path.join(home, 'bad-agent.log'));

/** The page's plain error: one short line of words, not JSON, not a stack. */
function assertPlain(msg) {
  assert.equal(typeof msg, 'string');
  assert.ok(msg.length > 0 && msg.length < 300, JSON.stringify(msg));
  assert.ok(!/[\n\r]/.test(msg), `one line: ${JSON.stringify(msg)}`);
  assert.ok(!/^\s*[{[]/.test(msg), `plain words, not JSON: ${msg}`);
}

/** Starts a session (first turn `prompt`, or none) whose agent misbehaves as `mode`. Returns {api, id, stream, agent}. */
async function badSession(mode, body = { prompt: 'hello' }) {
  const from = log().length;
  await fsp.writeFile(modeFile(), mode);
  const s = await startSessionTurn(eng, body);
  const agent = await poll(() => log().slice(from).find((e) => e.kind === 'start' && e.mode === mode.split(':')[0]), { timeoutMs: 8000, intervalMs: 50 });
  await fsp.writeFile(modeFile(), 'good'); // the next agent behaves
  assert.ok(agent, `the bad agent never started; log: ${JSON.stringify(log().slice(from))}; engine stderr:\n${eng.stderrLines.slice(-20).join('\n')}`);
  return { ...s, agent };
}

/** The session failed with a plain error matching `re`; it says so on the stream and on GET. */
async function assertFailed({ api, id, stream }, re, ms = 15000) {
  const f = await stream.waitFor('failed', ms);
  assertPlain(f.data);
  assert.match(f.data, re);
  await stream.waitForEnd();
  const g = await api.get(id);
  assert.equal(g.json.status, 'failed');
  assert.equal(g.json.error, f.data);
  return f.data;
}

/** Pids the bad agent `agent` logged: itself and every descendant it started. */
const familyOf = (agent) => [agent.pid, ...log().filter((e) => e.kind === 'descendant' && e.agent === agent.pid).map((e) => e.pid)];

const goodTurn = () => assertServes(eng);

/** Nothing of `agent` runs on, the engine is back to its baseline, and it still serves a good session. */
async function assertCleanAndServing(agent) {
  const pids = familyOf(agent);
  await assertNoLeftovers(eng.proc.pid, { baseline, pids });
  await goodTurn();
  await assertNoLeftovers(eng.proc.pid, { baseline, pids });
}

describe('misbehaving agents', { timeout: 300000 }, () => {
  before(async () => {
    home = await makeHome();
    await fsp.writeFile(modeFile(), 'good');
    const config = fakeAgentConfig({
      id: 'bad', name: 'Bad', command: BAD_AGENT,
      env: { BAD_AGENT_MODE_FILE: modeFile(), BAD_AGENT_LOG: path.join(home, 'bad-agent.log') },
    });
    eng = await startEngine({ home, timings: TIMINGS, files: { 'config.json': config } });
    // A first session opens whatever the engine opens once; the baseline is the idle engine after it.
    await goodTurn();
    await poll(() => childrenOf(eng.proc.pid).length === 0, { timeoutMs: 8000 });
    await sleep(1500); // the drain after an agent's exit
    baseline = { fds: fdCount(eng.proc.pid) };
  });
  after(async () => {
    await stopAll();
    await fsp.rm(home, { recursive: true, force: true });
  });

  it('hangs mid-turn and ignores session/cancel: the turn is given cancelGraceMs, then the session fails and the agent is stopped', async () => {
    const s = await badSession('hang-on-prompt');
    await s.stream.waitFor((e) => e.event === 'chunk' && e.data === 'working on it...', 10000);
    const t0 = Date.now();
    assert.equal((await s.api.cancelTurn(s.id)).status, 200);
    const msg = await assertFailed(s, /^Bad did not stop its turn within 2 s of being asked to, so it was stopped\.$/);
    const ms = Date.now() - t0;
    assert.ok(ms >= 1800, `failed after ${ms} ms: the agent gets its grace first (${msg})`);
    assert.ok(log().some((e) => e.kind === 'cancel-ignored' && e.agent === s.agent.pid), 'session/cancel was sent');
    await assertCleanAndServing(s.agent);
  });

  it('hangs mid-turn: closing the session stops it', async () => {
    const s = await badSession('hang-on-prompt');
    await s.stream.waitFor('chunk', 10000);
    assert.equal((await s.api.close(s.id)).status, 200);
    await s.stream.waitForEnd();
    await assertCleanAndServing(s.agent);
  });

  it('floods megabytes of chunks: the turn completes, memory stays bounded, and another session is served meanwhile', async () => {
    const rss0 = rssKb(eng.proc.pid);
    const s = await badSession('flood-chunks:24');
    await s.stream.waitFor('chunk', 10000);
    await goodTurn(); // concurrently with the flood
    const tc = await s.stream.waitFor('turn_completed', 60000);
    // turn_completed repeats at most 4 MB of the text, and says when it was cut.
    assert.ok(tc.data.text.length <= 4 * 1024 * 1024 + 100, `turn_completed text: ${tc.data.text.length} bytes`);
    assert.match(tc.data.text, /too long to repeat here\]$/);
    const grown = rssKb(eng.proc.pid) - rss0;
    assert.ok(grown < 512 * 1024, `the engine grew by ${grown} kB for a 24 MB answer`);
    assert.equal((await s.api.close(s.id)).status, 200);
    s.stream.close();
    await assertCleanAndServing(s.agent);
  });

  it('writes a line that never ends: the engine stops reading at 32 MB and fails the session', async () => {
    const s = await badSession('long-line:40');
    await assertFailed(s, /^Bad sent more than 32 MB without a line break on its output, so it was stopped\.$/, 30000);
    await assertCleanAndServing(s.agent);
  });

  it('writes lines that are not JSON, invalid UTF-8 and binary garbage: they are ignored (log events in valid UTF-8) and the turn goes on', async () => {
    const s = await badSession('invalid-bytes', {});
    await s.stream.waitFor('ready', 10000);
    // A second reader takes the raw bytes, to see that what reaches the page is valid UTF-8.
    const raw = rawSend(eng, `GET /session/${s.id}/stream HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nAccept: text/event-stream\r\n\r\n`,
      { untilMatch: /event: turn_completed/, timeoutMs: 15000 });
    await sleep(200);
    assert.equal((await s.api.prompt(s.id, { prompt: 'hello' })).status, 200);
    const tc = await s.stream.waitFor('turn_completed', 15000);
    assert.equal(tc.data.text, 'still here');
    const logs = s.stream.events.filter((e) => e.event === 'log').map((e) => e.data);
    assert.ok(logs.some((l) => l.startsWith('[leuria] ignored output: ') && l.includes('invalid utf-8')), JSON.stringify(logs));
    assert.ok(logs.some((l) => l.startsWith('stderr: ') && l.endsWith(' end')), JSON.stringify(logs));
    const got = await raw;
    assert.ok(!got.timedOut, `the raw reader saw no turn_completed: ${got.text.slice(-500)}`);
    const bytes = Buffer.from(got.text, 'latin1');
    new TextDecoder('utf-8', { fatal: true }).decode(readChunks(bytes.subarray(bytes.indexOf('\r\n\r\n') + 4)).body); // throws on invalid UTF-8
    assert.equal((await s.api.get(s.id)).json.status, 'idle');
    assert.equal((await s.api.close(s.id)).status, 200);
    await s.stream.waitForEnd();
    await assertCleanAndServing(s.agent);
  });

  it('writes only garbage, never a message: the start times out with a plain error', async () => {
    const s = await badSession('garbage-only');
    await assertFailed(s, /^The AI did not start within 6 s$/, 20000);
    await assertCleanAndServing(s.agent);
  });

  for (const [arg, re] of [
    ['3', /^Agent exited with code 3$/],
    ['SIGSEGV', /^Bad stopped unexpectedly \(killed by signal SIGSEGV\)\.$/],
    ['SIGKILL', /^Bad stopped unexpectedly \(killed by signal SIGKILL\)\.$/],
  ]) {
    it(`exits mid-turn (${/^\d/.test(arg) ? `code ${arg}` : arg}): the session fails with a plain error`, async () => {
      const s = await badSession(`exit-mid-turn:${arg}`);
      await assertFailed(s, re);
      await assertCleanAndServing(s.agent);
    });
  }

  it('exits and leaves a child in its process group holding stdout: the engine does not wait on the pipe, and the child is killed', async () => {
    const s = await badSession('grandchild-holds-stdout');
    const t0 = Date.now();
    await assertFailed(s, /^Agent exited with code 1$/);
    assert.ok(Date.now() - t0 < 10000);
    const [child] = log().filter((e) => e.kind === 'descendant' && e.agent === s.agent.pid);
    assert.ok(child && child.pgid === s.agent.pid, `the child is in the agent's group: ${JSON.stringify(child)}`);
    await assertCleanAndServing(s.agent);
  });

  it('exits and leaves a daemon (double fork, setsid) holding stdout: the daemon is found and killed, the pipe closes', async () => {
    const s = await badSession('daemon-holds-stdout');
    await assertFailed(s, /^Agent exited with code 1$/);
    const [daemon] = log().filter((e) => e.kind === 'descendant' && e.agent === s.agent.pid);
    assert.ok(daemon, JSON.stringify(log()));
    assert.notEqual(daemon.pgid, s.agent.pid, 'the daemon left the agent\'s process group');
    assert.equal(daemon.sid, daemon.pid, 'the daemon leads its own session');
    await assertCleanAndServing(s.agent);
  });

  it('starts a proper daemon (double fork, setsid, no descriptors of ours): it is killed when the session ends', async () => {
    const s = await badSession('daemon-detached');
    const tc = await s.stream.waitFor('turn_completed', 15000);
    assert.equal(tc.data.text, 'fine');
    const daemon = await poll(() => log().find((e) => e.kind === 'descendant' && e.agent === s.agent.pid), { timeoutMs: 5000 });
    assert.ok(daemon && daemon.sid === daemon.pid, JSON.stringify(daemon));
    assert.equal((await s.api.close(s.id)).status, 200);
    await s.stream.waitForEnd();
    await assertCleanAndServing(s.agent);
  });

  it('ignores SIGTERM, and so does its child: both are killed after killGraceMs', async () => {
    const s = await badSession('ignore-sigterm', {});
    await s.stream.waitFor('ready', 10000);
    await poll(() => log().some((e) => e.kind === 'descendant' && e.agent === s.agent.pid), { timeoutMs: 5000 });
    assert.equal((await s.api.close(s.id)).status, 200);
    await s.stream.waitForEnd();
    await assertCleanAndServing(s.agent);
    assert.ok(log().some((e) => e.kind === 'sigterm-ignored' && e.agent === s.agent.pid), 'it got SIGTERM first');
  });

  it('never answers initialize (says nothing at all): the start times out with a plain error and the agent is killed', async () => {
    const s = await badSession('silent');
    await assertFailed(s, /^The AI did not start within 6 s$/, 20000);
    await assertCleanAndServing(s.agent);
  });

  for (const mode of ['wrong-id-unknown', 'wrong-id-duplicate', 'wrong-id-type']) {
    it(`answers with wrong ids (${mode.slice(9)}): the session fails at once with a plain error`, async () => {
      const s = await badSession(mode);
      const t0 = Date.now();
      await assertFailed(s, /^Bad lost track of the conversation \(a reply .*\), so it was stopped\.$/);
      assert.ok(Date.now() - t0 < 5000, 'at once, not after a timeout');
      await assertCleanAndServing(s.agent);
    });
  }

  it('sends requests the engine does not offer (an unknown method, terminal/create, fs/read_text_file): each gets -32601 and the turn goes on', async () => {
    const s = await badSession('unsupported-requests');
    const tc = await s.stream.waitFor('turn_completed', 15000);
    assert.equal(tc.data.text, 'survived: x/not_a_method=-32601 terminal/create=-32601 fs/read_text_file=-32601');
    assert.equal((await s.api.close(s.id)).status, 200);
    await s.stream.waitForEnd();
    await assertCleanAndServing(s.agent);
  });
});
