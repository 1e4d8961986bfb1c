// Real agents through the engine (issue 3, "Tests"): a page's session from prepare to `completed`
// with Gemini CLI (`gemini --acp`) and Claude Code's ACP adapter, both pinned in package-lock.json and
// run offline against the scripted model APIs in tests/fakes/.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  startEngine, stopAll, sessionApi, pairCli, web, freshOrigin, makeHome, poll, procStat, waitPidGone,
} from './helpers.mjs';
import { startGeminiServer } from '../fakes/gemini-server.mjs';
import { startAnthropicServer } from '../fakes/anthropic-server.mjs';
import { geminiAgentSpec, claudeAgentSpec, GEMINI_BIN, CLAUDE_ACP_BIN } from '../fakes/real-agents.mjs';

const REPLY = 'Hello from the scripted model.';
const cleanups = [];

/** Every process whose process group is `pgid` (scanning /proc). */
function groupMembers(pgid) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const st = procStat(Number(d));
    if (st && st.pgid === pgid) out.push({ pid: Number(d), ...st });
  }
  return out;
}

/** Direct children of a process. */
function childrenOf(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * One page session through the engine with the agent `id` defined by `spec`:
 * pair, prepare with a prompt, stream, approve, the scripted reply as chunks, turn_completed, close → completed.
 */
async function pageTurn({ id, name, spec, api: modelApi }) {
  const eng = await startEngine({
    files: { 'config.json': { agent: id, agents: { [id]: { name, command: spec.command, args: spec.args, env: spec.env } } } },
  });
  const origin = freshOrigin(id);
  const { token } = await pairCli(eng, origin);
  const h = await web(eng, origin, '/health', { token });
  assert.equal(h.json.agent, name);
  const api = sessionApi(eng, { origin, token });
  const prep = await api.prepare({ prompt: 'Say hello' });
  assert.equal(prep.status, 201, prep.body);
  const sid = prep.json.sessionId;
  const stream = api.stream(sid);
  await stream.response;
  assert.equal((await api.approve(sid)).json.status, 'running');

  const diagnose = async (what) => {
    await new Promise((r) => setTimeout(r, 200));
    const logs = stream.events.filter((e) => e.event === 'log').map((e) => e.data);
    return `${what}\nevents: ${JSON.stringify(stream.names())}\nfailed: ${JSON.stringify(stream.events.find((e) => e.event === 'failed')?.data)}\n` +
      `agent log events (last 30):\n${logs.slice(-30).join('\n')}\nmodel API requests: ${JSON.stringify(modelApi.requests.map((r) => `${r.method} ${r.path} (${r.kind})`))}\n` +
      `engine stderr:\n${eng.stderrLines.slice(-20).join('\n')}\nengine exit: ${JSON.stringify(eng.exitInfo)}`;
  };
  let tc;
  try {
    tc = await stream.waitFor((e) => e.event === 'turn_completed' || e.event === 'failed', 60000);
  } catch (e) {
    throw new Error(await diagnose(`no turn_completed: ${e.message.slice(0, 200)}`));
  }
  if (tc.event === 'failed') throw new Error(await diagnose('the session failed'));
  const text = stream.events.filter((e) => e.event === 'chunk').map((e) => e.data).join('');
  assert.equal(text, REPLY, await diagnose('chunks differ from the scripted reply'));
  assert.equal(tc.data.text, REPLY);
  assert.ok(Number.isInteger(tc.data.durationMs));
  assert.deepEqual(stream.formatErrors, []);
  assert.equal((await api.get(sid)).json.status, 'idle');

  // the agent's process group, before closing
  const kids = childrenOf(eng.proc.pid);
  assert.equal(kids.length, 1, `one agent process under the engine: ${kids}`);
  const agentPid = kids[0];
  assert.equal(procStat(agentPid).pgid, agentPid, 'the agent leads its own process group');
  const folder = path.join(os.tmpdir(), `leuria-${sid}`);
  assert.equal(fs.readlinkSync(`/proc/${agentPid}/cwd`), folder);

  const c = await api.close(sid);
  assert.deepEqual(c.json, { sessionId: sid, status: 'completed' });
  await stream.waitFor('completed', 5000);
  await stream.waitForEnd(5000);
  assert.equal(stream.names().at(-1), 'completed');
  // nothing of the agent keeps running (zombies re-parented to a non-reaping PID 1 aside)
  assert.ok(await waitPidGone(agentPid, 8000), `agent ${agentPid} still exists: ${JSON.stringify(procStat(agentPid))}`);
  const alive = await poll(() => {
    const left = groupMembers(agentPid).filter((p) => p.state !== 'Z');
    return left.length === 0 ? true : null;
  }, { timeoutMs: 8000, intervalMs: 100 });
  assert.ok(alive, `processes of the agent's group still run: ${JSON.stringify(groupMembers(agentPid))}`);
  assert.ok(await poll(() => !fs.existsSync(folder), { timeoutMs: 3000 }), `${folder} removed`);
  return { eng, stream };
}

describe('real agents through the engine', { timeout: 150000 }, () => {
  after(async () => {
    try {
      await stopAll();
    } finally {
      for (const c of cleanups) await c().catch(() => {});
    }
  });

  it('Gemini CLI (gemini --acp): a page\'s text turn from prepare to completed', { timeout: 90000 }, async () => {
    assert.ok(fs.existsSync(GEMINI_BIN), `${GEMINI_BIN} is missing: run npm ci`);
    const api = await startGeminiServer({ reply: REPLY });
    const home = await makeHome();
    cleanups.push(async () => {
      await api.close();
      await fsp.rm(home, { recursive: true, force: true });
    });
    const { stream } = await pageTurn({ id: 'gemini-real', name: 'Gemini CLI', spec: geminiAgentSpec({ apiUrl: api.url, home }), api });
    assert.ok(api.requests.some((r) => r.kind === 'turn'), JSON.stringify(api.requests.map((r) => r.path)));
    assert.ok(!stream.events.some((e) => e.event === 'permission'));
  });

  it('Claude Code\'s adapter (claude-agent-acp): a page\'s text turn from prepare to completed', { timeout: 90000 }, async () => {
    assert.ok(fs.existsSync(CLAUDE_ACP_BIN), `${CLAUDE_ACP_BIN} is missing: run npm ci`);
    const api = await startAnthropicServer({ reply: REPLY });
    const home = await makeHome();
    cleanups.push(async () => {
      await api.close();
      await fsp.rm(home, { recursive: true, force: true });
    });
    const { stream } = await pageTurn({ id: 'claude-acp', name: 'Claude Code', spec: claudeAgentSpec({ apiUrl: api.url, home }), api });
    const turns = api.requests.filter((r) => r.kind === 'turn');
    assert.equal(turns.length, 1, JSON.stringify(api.requests.map((r) => r.kind)));
    assert.deepEqual(turns[0].body.tools ?? [], [], 'Claude\'s built-in tools are off');
    // the auto-mode warning (an "informational" chunk) never reaches the page: only the reply is in the chunks
    assert.ok(!stream.events.some((e) => e.event === 'chunk' && /auto mode/i.test(e.data)));
  });
});
