// Sessions and agents for the leuria end-to-end tests: the scripted ACP agent (config, log, startFakeEngine),
// the per-caller session API (sessionApi), and process checks (pidExists, procStat, waitPidGone, rssKb).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ROOT, makeHome, sleep, startEngine, tryJson } from './engine.mjs';
import { openStream, request } from './http.mjs';

/** The scripted ACP agent (tests/fakes/acp-agent.mjs, executable). */
export const FAKE_ACP = path.join(ROOT, 'tests/fakes/acp-agent.mjs');

/**
 * config.json content for the scripted ACP agent as the default AI.
 *   fakeAgentConfig({ id='fake', name='Fake', mode: 'slow,stderr', log: '/tmp/x.log', env: {FAKE_ACP_CHUNKS: 5}, extra: {model: 'big'},
 *                     args: [], command: FAKE_ACP })
 * `agents` adds further agent definitions ({id: {name, command, args, env}}).
 */
export function fakeAgentConfig({ id = 'fake', name = 'Fake', mode, log, env = {}, extra = {}, agents = {}, args = [], command = FAKE_ACP } = {}) {
  const agentEnv = {};
  if (mode) agentEnv.FAKE_ACP_MODE = mode;
  if (log) agentEnv.FAKE_ACP_LOG = log;
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== null) agentEnv[k] = String(v);
  return { agent: id, agents: { [id]: { name, command, args, env: agentEnv }, ...agents }, ...extra };
}

/** FAKE_ACP_LOG entries (JSON lines; a missing file is []). */
export function readFakeLog(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter(Boolean).map(tryJson).filter(Boolean);
}

/**
 * Session routes for one caller: `who` = {origin, token} for a web page, {} (or omitted) for a local process.
 *   const api = sessionApi(engine, {origin, token});
 *   await api.prepare({prompt}); api.approve(id); api.prompt(id, {prompt}); api.cancelTurn(id); api.cancel(id);
 *   api.close(id); api.get(id); api.stream(id)  (an SseStream, see openStream)
 */
export function sessionApi(engine, who = {}) {
  const headers = {};
  if (who.origin) headers.Origin = who.origin;
  if (who.token) headers.Authorization = `Bearer ${who.token}`;
  // A page's POSTs say JSON, body or not (as the SDK's do): the engine answers others with 415.
  const json = who.origin ? { 'Content-Type': 'application/json' } : {};
  const call = (method, p, body, timeoutMs) =>
    request(engine, { method, path: p, headers: method === 'POST' ? { ...headers, ...json } : headers, body, timeoutMs });
  const enc = encodeURIComponent;
  return {
    who,
    call,
    prepare: (body = {}) => call('POST', '/session/prepare', body),
    approve: (id) => call('POST', `/session/${enc(id)}/approve`),
    prompt: (id, body) => call('POST', `/session/${enc(id)}/prompt`, body),
    cancelTurn: (id) => call('POST', `/session/${enc(id)}/cancel-turn`),
    cancel: (id) => call('POST', `/session/${enc(id)}/cancel`),
    close: (id) => call('POST', `/session/${enc(id)}/close`),
    get: (id, { timeoutMs } = {}) => call('GET', `/session/${enc(id)}`, undefined, timeoutMs),
    stream: (id, opts = {}) => openStream(engine, `/session/${enc(id)}/stream`, { headers, ...opts }),
  };
}

/** Whether a process exists (a zombie still exists). */
/** Prepare, open the stream, approve: a session's first turn under way. Returns {api, id, stream}. */
export async function startSessionTurn(eng, body = {}, who = {}) {
  const api = sessionApi(eng, who);
  const r = await api.prepare(body);
  assert.equal(r.status, 201, `prepare: ${r.status} ${r.body}`);
  const id = r.json.sessionId;
  const stream = api.stream(id);
  await stream.response;
  const a = await api.approve(id);
  assert.equal(a.status, 200, `approve: ${a.status} ${a.body}`);
  return { api, id, stream };
}

export function pidExists(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    if (e.code === 'ESRCH') return false;
    if (e.code === 'EPERM') return true;
    throw e;
  }
}

/** {state, ppid, pgid} from /proc/<pid>/stat, or null when it is gone. */
export function procStat(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: f[0], ppid: Number(f[1]), pgid: Number(f[2]) };
}

/** Poll until `pid` no longer exists (kill(pid, 0) → ESRCH). Returns true when gone, false on timeout. */
export async function waitPidGone(pid, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  while (pidExists(pid)) {
    if (Date.now() >= end) return false;
    await sleep(50);
  }
  return true;
}

/** Resident memory of a process in kB (VmRSS from /proc/<pid>/status), or null. */
export function rssKb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * An engine whose default AI is the scripted ACP agent (id `fake`, name "Fake"), logging to `eng.fakeLog`
 * (inside its LEURIA_HOME, which is removed on stop).
 *   startFakeEngine({ id: 'fake', name: 'Fake', mode: 'slow', env: {FAKE_ACP_CHUNKS: 5}, config: {model: 'big'}, agents: {...},
 *                     agentArgs: [...], command: FAKE_ACP,
 *                     timings: {retentionMs: 500}, engineEnv: {...}, app: true, files: {...} })
 * eng.readLog() returns the agent's log entries.
 */
export async function startFakeEngine({ id, name, mode, env, config = {}, agents, agentArgs, command, timings, engineEnv, app, devPairing, args, files = {}, stderrToFile } = {}) {
  const home = await makeHome();
  const log = path.join(home, 'fake-acp.log');
  const eng = await startEngine({
    home, app, devPairing, args, timings, env: engineEnv, stderrToFile,
    files: { 'config.json': fakeAgentConfig({ id, name, mode, log, env, extra: config, agents, args: agentArgs, command }), ...files },
  });
  const stop = eng.stop;
  eng.stop = async () => {
    try {
      return await stop();
    } finally {
      await fsp.rm(home, { recursive: true, force: true }).catch(() => {});
    }
  };
  eng.fakeLog = log;
  eng.readLog = () => readFakeLog(log);
  return eng;
}
