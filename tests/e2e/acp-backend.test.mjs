// The ACP backend (issue 3, "The ACP backend"): how the engine runs an agent process and speaks ACP to
// it, checked from the scripted agent's side (FAKE_ACP_LOG) and from the page's stream.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  startFakeEngine, stopAll, sessionApi, pairCli, runCli, web, poll, sleep, freshOrigin, waitPidGone, pidExists,
  procStat, ADMIN_TOKEN, FAKE_ACP, pageSession, BIN, useEngineBinary,
} from './helpers.mjs';
import { startSessionTurn as run } from './helpers.mjs';
import { childrenOf } from './lib/proc.mjs';
import { straceUnavailable, straceAttach } from './lib/crash.mjs';

const TMP = os.tmpdir();


const entries = (eng, kind) => eng.readLog().filter((e) => e.kind === kind);
const chunks = (s) => s.events.filter((e) => e.event === 'chunk').map((e) => e.data).join('');
const promptTexts = (entry) => entry.params.prompt.filter((b) => b.type === 'text').map((b) => b.text);

async function agentStart(eng, timeoutMs = 5000) {
  const rec = await poll(() => eng.readLog().find((e) => e.kind === 'start'), { timeoutMs, intervalMs: 50 });
  assert.ok(rec, `the agent never started; log: ${JSON.stringify(eng.readLog())}; engine stderr:\n${eng.stderrLines.join('\n')}`);
  return rec;
}

/** The process is gone (kill(pid, 0) → ESRCH) within timeoutMs: reaped, not a zombie. */
async function assertGone(pid, timeoutMs, what = 'the agent') {
  const gone = await waitPidGone(pid, timeoutMs);
  assert.ok(gone, `${what} (pid ${pid}) still exists after ${timeoutMs} ms: ${JSON.stringify(procStat(pid))}`);
}

/** Link targets of a process's descriptors: {fd: target}. */
function fds(pid) {
  const out = {};
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      out[fd] = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {}
  }
  return out;
}

describe('ACP backend', { timeout: 120000 }, () => {
  after(stopAll);

  it('the agent runs in a new empty <tmp>/leuria-<sessionId>, in its own process group, with a fixed argv, no engine secrets and no inherited descriptors', async () => {
    const agentArgs = ['--flag', 'two words', '$HOME;echo hi', '*', ''];
    const eng = await startFakeEngine({
      agentArgs,
      engineEnv: { CLAUDECODE: '1', LEURIA_ADMIN_TOKEN: ADMIN_TOKEN, LEURIA_OTHER_SECRET: 'x', SAFE_VARIABLE: 'kept' },
    });
    const { api, id, stream } = await run(eng, {});
    await stream.waitFor('ready');
    const rec = await agentStart(eng);
    const folder = path.join(TMP, `leuria-${id}`);
    assert.equal(rec.cwd, folder);
    assert.ok(fs.statSync(folder).isDirectory());
    assert.deepEqual(fs.readdirSync(folder), [], 'a new empty folder');
    assert.equal(rec.pgid, rec.pid, `own process group: pgid ${rec.pgid}, pid ${rec.pid}`);
    assert.equal(rec.ppid, eng.proc.pid, 'the engine spawned it directly (no shell in between)');
    assert.deepEqual(rec.argv, agentArgs, 'arguments passed as they are, never through a shell');
    const leaked = rec.env.filter((k) => k.startsWith('LEURIA_') || k === 'CLAUDECODE');
    assert.deepEqual(leaked, [], `engine secrets in the agent's environment: ${leaked}`);
    assert.ok(rec.env.includes('SAFE_VARIABLE'), 'the rest of the environment is passed on');
    assert.ok(rec.env.includes('FAKE_ACP_LOG'), 'the agent\'s own env from config.json');
    assert.ok(rec.env.includes('PATH'));

    // no descriptor of the engine leaks into the agent beyond its stdio
    const mine = fds(eng.proc.pid);
    const engineTargets = new Set(Object.values(mine).filter((t) => /^(socket|pipe):|^\//.test(t)));
    const theirs = fds(rec.pid);
    const inherited = Object.entries(theirs).filter(([fd, t]) => Number(fd) > 2 && engineTargets.has(t) && !t.startsWith('/dev/'));
    assert.deepEqual(inherited, [], `the agent holds the engine's descriptors: ${JSON.stringify(inherited)}`);
    const homeFiles = Object.entries(theirs).filter(([, t]) => t.startsWith(eng.home) && !t.endsWith('fake-acp.log'));
    assert.deepEqual(homeFiles, [], 'no engine file is open in the agent');

    assert.equal((await api.close(id)).status, 200);
    await stream.waitForEnd();
    await assertGone(rec.pid, 5000);
    assert.ok(await poll(() => !fs.existsSync(folder), { timeoutMs: 3000 }), `${folder} is removed after the session`);
  });

  it('removes the folder (and what the agent wrote in it) after the session ends', async () => {
    const eng = await startFakeEngine({ mode: 'write-files' });
    const { api, id, stream } = await run(eng, { prompt: 'hello' });
    await stream.waitFor('turn_completed');
    const rec = await agentStart(eng);
    const folder = path.join(TMP, `leuria-${id}`);
    assert.equal(rec.wroteFile, path.join(folder, 'fake-agent-was-here.txt'));
    assert.ok(fs.existsSync(path.join(folder, 'fake-agent-was-here.txt')));
    assert.ok(fs.existsSync(path.join(folder, 'fake-session-file.txt')), 'session/new cwd is the same folder');
    await api.cancel(id);
    await stream.waitForEnd();
    await assertGone(rec.pid, 5000);
    assert.ok(await poll(() => !fs.existsSync(folder), { timeoutMs: 3000 }), `${folder} still exists: ${fs.existsSync(folder) && fs.readdirSync(folder)}`);
  });

  it('a <tmp>/leuria-<sessionId> already there (another user\'s, with planted settings) is not used: the agent gets a new folder beside it', async () => {
    const eng = await startFakeEngine({ mode: 'write-files' });
    const api = sessionApi(eng);
    const p = await api.prepare({ prompt: 'hello' });
    assert.equal(p.status, 201);
    const id = p.json.sessionId;
    const planted = path.join(TMP, `leuria-${id}`);
    fs.mkdirSync(planted, { mode: 0o777 });
    fs.writeFileSync(path.join(planted, 'settings.json'), '{"planted":true}');
    try {
      const stream = await api.stream(id);
      assert.equal((await api.approve(id)).status, 200);
      await stream.waitFor('turn_completed');
      const rec = await agentStart(eng);
      const folder = path.dirname(rec.wroteFile);
      assert.notEqual(folder, planted);
      assert.match(path.basename(folder), new RegExp(`^leuria-${id.replace(/[-]/g, '\\-')}-[A-Za-z0-9]{6}$`));
      assert.equal(fs.statSync(folder).mode & 0o777, 0o700);
      assert.deepEqual(fs.readdirSync(folder).sort(), ['fake-agent-was-here.txt', 'fake-session-file.txt']);
      assert.equal(entries(eng, 'session/new')[0].params.cwd, folder);
      await api.close(id);
      await stream.waitForEnd();
      assert.ok(await poll(() => !fs.existsSync(folder), { timeoutMs: 3000 }), 'its own folder is removed');
      assert.deepEqual(fs.readdirSync(planted), ['settings.json'], 'the other folder is left as it was');
    } finally {
      fs.rmSync(planted, { recursive: true, force: true });
    }
  });

  it('initialize without file-system or terminal capabilities; session/new with the folder and the page MCP server', async () => {
    const eng = await startFakeEngine();
    const { id, stream } = await run(eng, { prompt: 'hi' });
    await stream.waitFor('turn_completed');
    const [init] = entries(eng, 'initialize');
    assert.ok(init, JSON.stringify(eng.readLog()));
    assert.equal(init.params.protocolVersion, 1);
    const caps = init.params.clientCapabilities || {};
    assert.ok(!caps.terminal, `terminal capability: ${JSON.stringify(caps)}`);
    assert.ok(!caps.fs || (!caps.fs.readTextFile && !caps.fs.writeTextFile), `fs capability: ${JSON.stringify(caps)}`);
    const [nw] = entries(eng, 'session/new');
    assert.equal(nw.params.cwd, path.join(TMP, `leuria-${id}`));
    // The page's tools, as an HTTP MCP server named webmcp, with the channel token as bearer.
    assert.equal(nw.params.mcpServers.length, 1);
    assert.equal(nw.params.mcpServers[0].type, 'http');
    assert.equal(nw.params.mcpServers[0].name, 'webmcp');
    assert.equal(nw.params.mcpServers[0].url, `http://127.0.0.1:${eng.port}/webmcp/mcp`);
    assert.match(nw.params.mcpServers[0].headers[0].value, /^Bearer [A-Za-z0-9_-]{43}$/);
    // Claude Code's lockdown goes to every agent (ACP agents ignore _meta they don't know): an agent
    // taken for another is still locked down. Its system prompt and maxTurns go only to Claude.
    assert.deepEqual(nw.params._meta?.claudeCode?.options?.tools, [], JSON.stringify(nw.params));
    assert.ok(!('systemPrompt' in nw.params._meta));
    // the order of the conversation
    const kinds = eng.readLog().map((e) => e.kind).filter((k) => k !== 'start' && k !== 'other');
    assert.deepEqual(kinds, ['initialize', 'session/new', 'prompt']);
    const [pr] = entries(eng, 'prompt');
    assert.deepEqual(pr.params.prompt, [{ type: 'text', text: 'hi' }]);
  });

  // Claude Code is known by the name its adapter reports in initialize (agentInfo.name).
  const CLAUDE_ENV = { FAKE_ACP_AGENT_NAME: '@agentclientprotocol/claude-agent-acp' };

  it('Claude Code (agentInfo @agentclientprotocol/claude-agent-acp) gets _meta.claudeCode.options with its built-in tools off, and the systemPrompt as _meta.systemPrompt', async () => {
    const eng = await startFakeEngine({ id: 'claude-acp', name: 'Claude Code', env: CLAUDE_ENV });
    const { stream } = await run(eng, { prompt: 'hi', systemPrompt: 'You sell mugs.' });
    await stream.waitFor('turn_completed');
    const [nw] = entries(eng, 'session/new');
    const o = nw.params._meta?.claudeCode?.options;
    assert.ok(o, JSON.stringify(nw.params));
    assert.deepEqual(o.tools, []);
    assert.deepEqual(o.allowedTools, ['mcp__webmcp']);
    for (const t of ['Bash', 'Edit', 'Write', 'Read', 'Glob', 'Grep', 'WebFetch', 'WebSearch', 'Task', 'NotebookEdit', 'TodoWrite']) {
      assert.ok(o.disallowedTools.includes(t), `${t} must be disallowed: ${o.disallowedTools}`);
    }
    assert.deepEqual(o.settingSources, []);
    assert.equal(o.strictMcpConfig, true);
    assert.equal(o.maxTurns, undefined, 'no maxTurns asked: Claude Code\'s own loop decides');
    assert.equal(nw.params._meta.systemPrompt, 'You sell mugs.');
    const [pr] = entries(eng, 'prompt');
    assert.ok(!JSON.stringify(pr.params.prompt).includes('You sell mugs.'), 'Claude gets the system prompt once, in _meta');
  });

  /** The lockdown Claude Code's options carry, as session/new sent it. */
  function assertLockedDown(nw) {
    const o = nw.params._meta?.claudeCode?.options;
    assert.ok(o, `no _meta.claudeCode.options in session/new: ${JSON.stringify(nw.params)}`);
    assert.deepEqual(o.tools, []);
    assert.deepEqual(o.allowedTools, ['mcp__webmcp']);
    for (const t of ['Bash', 'Read', 'Write', 'Edit', 'WebFetch']) assert.ok(o.disallowedTools.includes(t), t);
    assert.deepEqual(o.settingSources, []);
    assert.equal(o.strictMcpConfig, true);
  }

  it('Claude added under another id and started through another command (`npx …`) is still locked down, and known by its agentInfo name', async () => {
    // `leuria agents add my-claude npx @agentclientprotocol/claude-agent-acp`: neither the id nor the
    // command says "claude"; the name it reports in initialize does.
    const eng = await startFakeEngine({
      id: 'my-claude', name: 'My Claude', command: '/usr/bin/env', agentArgs: ['node', FAKE_ACP],
      env: { FAKE_ACP_AGENT_NAME: '@agentclientprotocol/claude-agent-acp' },
    });
    const { stream } = await run(eng, { prompt: 'hi', systemPrompt: 'You sell mugs.', maxTurns: 4 });
    await stream.waitFor('turn_completed');
    const [nw] = entries(eng, 'session/new');
    assertLockedDown(nw);
    assert.equal(nw.params._meta.systemPrompt, 'You sell mugs.');
    assert.equal(nw.params._meta.claudeCode.options.maxTurns, 4);
    assert.ok(!JSON.stringify(entries(eng, 'prompt')[0].params.prompt).includes('You sell mugs.'));

    // One that says nothing of itself (no agentInfo) is locked down all the same.
    const anon = await startFakeEngine({
      id: 'my-claude', name: 'My Claude', command: '/usr/bin/env', agentArgs: ['node', FAKE_ACP],
      env: { FAKE_ACP_AGENT_NAME: '-' },
    });
    const a = await run(anon, { prompt: 'hi', systemPrompt: 'You sell mugs.' });
    await a.stream.waitFor('turn_completed');
    assertLockedDown(entries(anon, 'session/new')[0]);
    // Not known to be Claude: the system prompt comes ahead of the first prompt, so it is not lost.
    assert.ok(promptTexts(entries(anon, 'prompt')[0]).join('\n').includes('You sell mugs.'));
  });

  it('an agent that is not Claude but runs from a path saying "claude" keeps the page\'s system prompt', async () => {
    const dir = fs.mkdtempSync(path.join(TMP, 'leuria-claude-tools-'));
    const cmd = path.join(dir, 'claude-wrapper');
    fs.symlinkSync(FAKE_ACP, cmd);
    try {
      const eng = await startFakeEngine({ command: cmd });
      const { stream } = await run(eng, { prompt: 'What do you sell?', systemPrompt: 'You sell mugs.' });
      await stream.waitFor('turn_completed');
      const [nw] = entries(eng, 'session/new');
      assertLockedDown(nw);
      assert.ok(!('systemPrompt' in nw.params._meta), JSON.stringify(nw.params._meta));
      assert.ok(promptTexts(entries(eng, 'prompt')[0]).join('\n').includes('You sell mugs.'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('Claude Code gets the page\'s maxTurns, clamped to 1..50, as its own maxTurns; another agent gets nothing for it', async () => {
    const eng = await startFakeEngine({ id: 'claude-acp', name: 'Claude Code', env: CLAUDE_ENV });
    for (const [asked, sent] of [[3, 3], [99, 50]]) {
      const { stream } = await run(eng, { prompt: 'hi', maxTurns: asked });
      await stream.waitFor('turn_completed');
      assert.equal(entries(eng, 'session/new').at(-1).params._meta.claudeCode.options.maxTurns, sent);
    }
    const other = await startFakeEngine();
    const { stream } = await run(other, { prompt: 'hi', maxTurns: 3 });
    await stream.waitFor('turn_completed');
    assert.ok(!JSON.stringify(entries(other, 'session/new')[0].params).includes('maxTurns'));
  });

  it('a non-Claude agent gets the systemPrompt ahead of the first prompt only', async () => {
    const eng = await startFakeEngine();
    const { api, id, stream } = await run(eng, { prompt: 'What do you sell?', systemPrompt: 'You sell mugs. Be brief.' });
    await stream.waitFor('turn_completed');
    assert.equal((await api.prompt(id, { prompt: 'And cups?' })).status, 200);
    await stream.waitFor((e) => e.event === 'turn_completed' && e.data.text.includes('And cups?'));
    const [first, second] = entries(eng, 'prompt');
    const t1 = promptTexts(first).join('\n');
    const i = t1.indexOf('You sell mugs. Be brief.');
    assert.ok(i >= 0, `system prompt missing from the first prompt: ${t1}`);
    assert.ok(i < t1.indexOf('What do you sell?'), `system prompt must come first: ${t1}`);
    assert.ok(!promptTexts(second).join('\n').includes('You sell mugs.'), 'only ahead of the first prompt');
    assert.ok(!entries(eng, 'session/new')[0].params._meta?.systemPrompt);
  });

  it('modes: switches to "default" (tool calls ask permission) before the first prompt', async () => {
    const eng = await startFakeEngine({ mode: 'modes' });
    const { stream } = await run(eng, { prompt: 'hi' });
    await stream.waitFor('turn_completed');
    const log = eng.readLog();
    const sm = log.filter((e) => e.kind === 'set_mode');
    assert.equal(sm.length, 1, JSON.stringify(log.map((e) => e.kind)));
    assert.equal(sm[0].params.modeId, 'default');
    assert.ok(log.indexOf(sm[0]) < log.findIndex((e) => e.kind === 'prompt'));
    // no mode switch for an agent without modes (checked in the initialize test: only initialize, session/new, prompt)
  });

  it('modes: an agent that refuses to switch to "default" (it would run tools without asking) is not started', async () => {
    const eng = await startFakeEngine({ mode: 'modes,refuse-set-mode' });
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 8000);
    assert.match(f.data, /^Fake could not switch to the mode that asks before using tools \(.*modes are locked\)$/, f.data);
    assert.equal(entries(eng, 'prompt').length, 0, 'no prompt reached it');
    assert.equal((await api.get(id)).json.status, 'failed');
    await assertGone((await agentStart(eng)).pid, 5000);
  });

  it('a permission request that crosses session/cancel is answered "cancelled", even for a page tool', async () => {
    const eng = await startFakeEngine({ mode: 'permission-after-cancel' });
    const lookup = { name: 'lookup', description: 'Look up', inputSchema: { type: 'object', properties: {} } };
    const { api, sid, stream } = await pageSession(eng, { prompt: 'use lookup', tools: [lookup], handler: () => 'x' });
    assert.ok(await poll(() => entries(eng, 'waiting-for-cancel').length > 0, { timeoutMs: 8000 }), JSON.stringify(eng.readLog()));
    assert.equal((await api.cancelTurn(sid)).status, 200);
    const answered = await poll(() => entries(eng, 'permission')[0], { timeoutMs: 8000 });
    assert.ok(answered, JSON.stringify(eng.readLog()));
    assert.deepEqual(answered.response.outcome, { outcome: 'cancelled' });
    assert.ok(await poll(async () => (await api.get(sid)).json.status === 'idle', { timeoutMs: 5000 }), 'the session stays usable');
    assert.ok(!stream.events.some((e) => e.event === 'permission' && e.data.allow), JSON.stringify(stream.events));
  });

  it('a page tool call in flight when the page cancels the turn ends, so the turn ends cancelled and the session stays usable', async () => {
    const eng = await startFakeEngine({ mode: 'mcp-call', timings: { cancelGraceMs: 3000 } });
    const lookup = { name: 'lookup', description: 'Look up', inputSchema: { type: 'object', properties: {} } };
    let called = false;
    const { api, sid } = await pageSession(eng, {
      prompt: 'use lookup', tools: [lookup], handler: () => { called = true; return new Promise(() => {}); },
    });
    assert.ok(await poll(() => called, { timeoutMs: 8000 }), 'the page got the call');
    assert.equal((await api.cancelTurn(sid)).status, 200);
    const s = await poll(async () => { const g = (await api.get(sid)).json; return g.status !== 'running' && g; }, { timeoutMs: 6000 });
    assert.equal(s.status, 'idle', JSON.stringify(s));
  });

  it('an agent that closes its output but keeps running fails the session promptly and is stopped', async () => {
    const eng = await startFakeEngine({ mode: 'close-stdout-on-prompt', timings: { killGraceMs: 500 } });
    const t0 = Date.now();
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 8000);
    assert.equal(f.data, 'Fake closed its output, so it was stopped.');
    assert.ok(entries(eng, 'closed-fd').length === 1, JSON.stringify(eng.readLog()));
    assert.ok(Date.now() - t0 < 6000, `failed after ${Date.now() - t0} ms`);
    assert.equal((await api.get(id)).json.error, f.data);
    await assertGone((await agentStart(eng)).pid, 5000);
  });

  it('an agent that closes its input but keeps running fails the session at the next write (here the cancel)', async () => {
    const eng = await startFakeEngine({ mode: 'close-stdin-on-prompt', timings: { killGraceMs: 500 } });
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    assert.ok(await poll(() => entries(eng, 'closed-fd').length > 0, { timeoutMs: 8000 }), JSON.stringify(eng.readLog()));
    assert.equal((await api.cancelTurn(id)).status, 200);
    const f = await stream.waitFor('failed', 8000);
    assert.equal(f.data, 'Fake closed its input, so it was stopped.');
    await assertGone((await agentStart(eng)).pid, 5000);
  });

  it('models: session/set_model with the configured model; set_config_option when the agent offers a model option; nothing without a model', async () => {
    // config "model" + legacy models list → session/set_model
    const a = await startFakeEngine({ mode: 'models', config: { model: 'big' } });
    const ra = await run(a, { prompt: 'hi' });
    await ra.stream.waitFor('turn_completed');
    const sa = entries(a, 'set_model');
    assert.equal(sa.length, 1, JSON.stringify(a.readLog().map((e) => e.kind)));
    assert.equal(sa[0].params.modelId, 'big');
    assert.equal(entries(a, 'set_config_option').length, 0);
    assert.ok(a.readLog().indexOf(sa[0]) < a.readLog().findIndex((e) => e.kind === 'prompt'));

    // with config options → session/set_config_option, not set_model
    const b = await startFakeEngine({ mode: 'models', env: { FAKE_ACP_CONFIG_OPTIONS: 1 }, config: { model: 'big' } });
    const rb = await run(b, { prompt: 'hi' });
    await rb.stream.waitFor('turn_completed');
    const sb = entries(b, 'set_config_option');
    assert.equal(sb.length, 1, JSON.stringify(b.readLog().map((e) => e.kind)));
    assert.equal(sb[0].params.configId, 'model');
    assert.equal(sb[0].params.value, 'big');
    assert.equal(entries(b, 'set_model').length, 0);

    // no model chosen → no model call
    const c = await startFakeEngine({ mode: 'models,modes' });
    const rc = await run(c, { prompt: 'hi' });
    await rc.stream.waitFor('turn_completed');
    assert.equal(entries(c, 'set_model').length + entries(c, 'set_config_option').length, 0);
  });

  it('leuria sites use <origin> fake --model big: that site\'s sessions choose the model', async () => {
    const eng = await startFakeEngine({ mode: 'models' });
    const origin = freshOrigin('model');
    const { token } = await pairCli(eng, origin);
    const r = await runCli(['sites', 'use', origin, 'fake', '--model', 'big'], { home: eng.home });
    assert.equal(r.code, 0, r.stderr);
    await sleep(300); // the engine picks up grants.json through inotify
    const h = await web(eng, origin, '/health', { token });
    assert.match(h.json.agent, /^Fake/, h.body);
    const { stream } = await run(eng, { prompt: 'hi' }, { origin, token });
    await stream.waitFor('turn_completed');
    const sm = entries(eng, 'set_model');
    assert.equal(sm.length, 1, JSON.stringify(eng.readLog().map((e) => e.kind)));
    assert.equal(sm[0].params.modelId, 'big');
    // a local caller still gets the default, without a model
    const l = await run(eng, { prompt: 'hi' });
    await l.stream.waitFor('turn_completed');
    assert.equal(entries(eng, 'set_model').length, 1);
  });

  for (const [style, rejectId] of [['claude', 'reject'], ['old', 'reject'], ['gemini', 'cancel']]) {
    it(`permission requests (${style} option ids) are refused, chosen by kind, and reported as permission events`, async () => {
      const eng = await startFakeEngine({ mode: 'permission', env: { FAKE_ACP_OPTION_STYLE: style } });
      const { stream } = await run(eng, { prompt: 'use tools' });
      const tc = await stream.waitFor('turn_completed', 8000);
      const perms = stream.events.filter((e) => e.event === 'permission').map((e) => e.data);
      assert.deepEqual(perms, [
        { toolName: 'mcp__webmcp__lookup', allow: false },
        { toolName: 'Bash', allow: false },
      ]);
      assert.match(tc.data.text, new RegExp(`permissions: mcp__webmcp__lookup=${rejectId} Bash=${rejectId}$`));
      const answers = entries(eng, 'permission');
      assert.equal(answers.length, 2);
      for (const a of answers) {
        assert.ok(a.response, `the request was answered: ${JSON.stringify(a)}`);
        assert.deepEqual(a.response.outcome, { outcome: 'selected', optionId: rejectId });
      }
      // the agent's tool calls are relayed as tool_call events
      const calls = stream.events.filter((e) => e.event === 'tool_call').map((e) => e.data);
      assert.ok(calls.length >= 2, JSON.stringify(calls));
      for (const c of calls) assert.equal(typeof c.toolCallId, 'string');
      assert.ok(calls.some((c) => c.status === 'failed'), JSON.stringify(calls));
      if (style !== 'gemini') assert.ok(calls.some((c) => c.status === 'pending' && c.title === 'Bash'), JSON.stringify(calls));
    });
  }

  it('stderr lines become log events; thoughts become thought events', async () => {
    const eng = await startFakeEngine({ mode: 'stderr' });
    const { stream } = await run(eng, { prompt: 'hi' });
    await stream.waitFor('turn_completed');
    const logs = stream.events.filter((e) => e.event === 'log').map((e) => e.data);
    assert.ok(logs.includes('fake-agent: stderr line 1'), JSON.stringify(logs));
    assert.ok(logs.includes('fake-agent: stderr line 2'), JSON.stringify(logs));
    assert.deepEqual(stream.events.filter((e) => e.event === 'thought').map((e) => e.data), ['Thinking.']);
    assert.equal(chunks(stream), 'echo: hi');
  });

  it('attachments: images as image blocks when the agent accepts them, text files wrapped in <file name="…">', async () => {
    const eng = await startFakeEngine();
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64');
    const { api, id, stream } = await run(eng, {
      prompt: 'Look',
      attachments: [
        { type: 'image', mimeType: 'image/png', data: png, name: 'pic.png' },
        { type: 'text', text: 'line 1\nline 2', name: 'notes.txt', mimeType: 'text/plain' },
      ],
    });
    const tc = await stream.waitFor('turn_completed');
    const [pr] = entries(eng, 'prompt');
    const blocks = pr.params.prompt;
    const img = blocks.find((b) => b.type === 'image');
    assert.ok(img, JSON.stringify(blocks));
    assert.equal(img.mimeType, 'image/png');
    assert.equal(img.data, png);
    const texts = promptTexts(pr).join('\n');
    assert.ok(texts.includes('Look'));
    assert.ok(texts.includes('<file name="notes.txt">line 1\nline 2</file>'), texts);
    assert.ok(tc.data.text.includes('[image image/png]'), tc.data.text);
    // follow-up prompts take attachments too
    assert.equal((await api.prompt(id, { prompt: 'More', attachments: [{ type: 'text', text: 'x,y', name: 'data.csv' }] })).status, 200);
    await stream.waitFor((e) => e.event === 'turn_completed' && e.data.text.includes('More'));
    const second = entries(eng, 'prompt')[1];
    assert.ok(promptTexts(second).join('\n').includes('<file name="data.csv">x,y</file>'), JSON.stringify(second.params.prompt));
  });

  it('attachments: an agent that cannot read images gets a short note instead', async () => {
    const eng = await startFakeEngine({ mode: 'no-images' });
    const { stream } = await run(eng, {
      prompt: 'Look',
      attachments: [{ type: 'image', mimeType: 'image/jpeg', data: '/9j/4AAQSkZJRg==', name: 'photo.jpg' }],
    });
    const tc = await stream.waitFor('turn_completed');
    const [pr] = entries(eng, 'prompt');
    assert.ok(!pr.params.prompt.some((b) => b.type === 'image'), JSON.stringify(pr.params.prompt));
    const notes = promptTexts(pr).filter((t) => t !== 'Look');
    assert.ok(notes.length >= 1, JSON.stringify(pr.params.prompt));
    const note = notes.join('\n');
    assert.match(note, /image/i);
    assert.ok(note.length < 300, `a short note: ${note}`);
    assert.ok(!note.includes('/9j/4AAQ'), 'the image data is not pasted as text');
    assert.ok(!tc.data.text.includes('[image'), tc.data.text);
  });

  it('an agent that crashes mid-turn fails the session with "Agent exited with code 3"', async () => {
    const eng = await startFakeEngine({ mode: 'crash-on-prompt' });
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 8000);
    assert.equal(f.data, 'Agent exited with code 3');
    await stream.waitForEnd();
    const g = await api.get(id);
    assert.equal(g.json.status, 'failed');
    assert.equal(g.json.error, 'Agent exited with code 3');
    await assertGone((await agentStart(eng)).pid, 3000);
  });

  it('started with SIGCHLD ignored (a launcher may pass that on), the engine still learns an agent\'s exit code', async () => {
    // Ignored, the kernel reaps children itself, and the exit code 3 would read as 0 (a completed turn).
    const dir = fs.mkdtempSync(path.join(TMP, 'leuria-sigchld-'));
    const wrapper = path.join(dir, 'leuria-sigchld-ignored');
    // perl (Debian's perl-base is essential): dash's `trap '' CHLD` leaves SIGCHLD as it was.
    fs.writeFileSync(wrapper, `#!/bin/sh\nexec perl -e '$SIG{CHLD} = "IGNORE"; exec { $ARGV[0] } @ARGV or die "exec: $!"' '${BIN}' "$@"\n`, { mode: 0o755 });
    const before = useEngineBinary(wrapper);
    let eng;
    try {
      eng = await startFakeEngine({ mode: 'crash-on-prompt' });
    } finally {
      useEngineBinary(before);
    }
    try {
      const { api, id, stream } = await run(eng, { prompt: 'hi' });
      assert.equal((await stream.waitFor('failed', 8000)).data, 'Agent exited with code 3');
      assert.equal((await api.get(id)).json.status, 'failed');
    } finally {
      await eng.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an agent that exits 0 mid-turn completes the session', async () => {
    const eng = await startFakeEngine({ mode: 'exit0-on-prompt' });
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    await stream.waitFor('completed', 8000);
    await stream.waitForEnd();
    assert.ok(!stream.names().includes('failed'));
    const g = await api.get(id);
    assert.equal(g.json.status, 'completed');
    assert.ok(!('error' in g.json), g.body);
    await assertGone((await agentStart(eng)).pid, 3000);
  });

  it('an agent that exits at start fails the session with a plain message', async () => {
    const eng = await startFakeEngine({ mode: 'exit-on-start' });
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 8000);
    assert.equal(typeof f.data, 'string');
    assert.ok(f.data.length > 0 && f.data.length < 300 && !f.data.includes('\n'), f.data);
    const g = await api.get(id);
    assert.equal(g.json.status, 'failed');
    assert.equal(g.json.error, f.data);
    await assertGone((await agentStart(eng)).pid, 3000);
    assert.ok(await poll(() => !fs.existsSync(path.join(TMP, `leuria-${id}`)), { timeoutMs: 3000 }), 'folder removed');
  });

  it('an agent that never answers initialize fails after startTimeoutMs ("The AI did not start within 1 s") and is killed', async () => {
    const eng = await startFakeEngine({ mode: 'hang-on-initialize', timings: { startTimeoutMs: 1000, killGraceMs: 500 } });
    const t0 = Date.now();
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 6000);
    const ms = Date.now() - t0;
    assert.equal(f.data, 'The AI did not start within 1 s');
    assert.ok(ms >= 900 && ms < 4000, `failed after ${ms} ms`);
    assert.equal((await api.get(id)).json.error, 'The AI did not start within 1 s');
    // Killed: by its pid when it lived to log its start (on a loaded machine Node may take longer than the
    // 1 s to get there, and the engine kills it first); either way the engine has no child left.
    const rec = await poll(() => eng.readLog().find((e) => e.kind === 'start'), { timeoutMs: 2000, intervalMs: 50 });
    if (rec) await assertGone(rec.pid, 3000);
    assert.ok(await poll(() => childrenOf(eng.proc.pid).length === 0, { timeoutMs: 3000 }),
      `the engine's children: ${JSON.stringify(childrenOf(eng.proc.pid))}`);
    assert.ok(await poll(() => !fs.existsSync(path.join(TMP, `leuria-${id}`)), { timeoutMs: 3000 }), 'folder removed');
  });

  it('an agent that writes garbage to stdout still works', async () => {
    const eng = await startFakeEngine({ mode: 'garbage' });
    const { api, id, stream } = await run(eng, { prompt: 'still fine?' });
    const tc = await stream.waitFor('turn_completed', 8000);
    assert.equal(tc.data.text, 'echo: still fine?');
    assert.equal((await api.get(id)).json.status, 'idle');
    assert.ok(!stream.names().includes('failed'));
  });

  it('an agent that ignores SIGTERM is killed (SIGKILL) after killGraceMs', async () => {
    const eng = await startFakeEngine({ mode: 'ignore-sigterm', timings: { killGraceMs: 500 } });
    const { api, id, stream } = await run(eng, {});
    await stream.waitFor('ready');
    const rec = await agentStart(eng);
    const t0 = Date.now();
    assert.equal((await api.cancel(id)).json.status, 'cancelled');
    await stream.waitFor('cancelled');
    await assertGone(rec.pid, 2500);
    const ms = Date.now() - t0;
    assert.ok(entries(eng, 'sigterm-ignored').length >= 1, 'it got SIGTERM first');
    assert.ok(ms >= 400, `killed after ${ms} ms: SIGKILL must wait for the grace period`);
    assert.ok(await poll(() => !fs.existsSync(path.join(TMP, `leuria-${id}`)), { timeoutMs: 3000 }), 'folder removed');
  });

  it('an agent that stays after stdin closes is ended by SIGTERM', async () => {
    const eng = await startFakeEngine({ mode: 'stay-after-stdin-close', timings: { killGraceMs: 10000 } });
    const { api, id, stream } = await run(eng, {});
    await stream.waitFor('ready');
    const rec = await agentStart(eng);
    await api.close(id);
    await assertGone(rec.pid, 3000);
  });

  it('the agent\'s own children (its process group) are gone after the session ends', async () => {
    const eng = await startFakeEngine({ mode: 'spawn-grandchild', timings: { killGraceMs: 500 } });
    const { api, id, stream } = await run(eng, {});
    await stream.waitFor('ready');
    const rec = await agentStart(eng);
    const gc = rec.grandchildPid;
    assert.ok(Number.isInteger(gc), JSON.stringify(rec));
    assert.equal(procStat(gc)?.pgid, rec.pid, 'the grandchild is in the agent\'s group');
    await api.close(id);
    await stream.waitForEnd();
    await assertGone(rec.pid, 3000);
    // The grandchild must not keep running. Once its parent is gone it is re-parented to PID 1, which in
    // some containers does not reap: a zombie there has stopped and is not the engine's to reap.
    const stopped = await poll(() => {
      const st = procStat(gc);
      return !st || (st.state === 'Z' && st.ppid !== eng.proc.pid);
    }, { timeoutMs: 3000, intervalMs: 50 });
    assert.ok(stopped, `grandchild ${gc} still runs: ${JSON.stringify(procStat(gc))}`);
  });

  it('a live agent is ended when the engine stops', async () => {
    const eng = await startFakeEngine({ timings: { killGraceMs: 500 } });
    const { stream } = await run(eng, {});
    await stream.waitFor('ready');
    const rec = await agentStart(eng);
    await eng.stop();
    await assertGone(rec.pid, 3000);
    assert.ok(!pidExists(rec.pid));
    // The agent had its grace: the engine waited before it stopped.
    const stopping = eng.stderrLines.find((l) => l.includes('event=engine.stopping'));
    assert.match(stopping ?? '', /live_sessions=1 child_processes=true grace_ms=200/, eng.stderrLines.join('\n'));
  });

  it('a command that does not exist fails the session with a plain message', async () => {
    const eng = await startFakeEngine({ name: 'Ghost', command: path.join(TMP, 'leuria-no-such-agent', 'ghost-agent') });
    const { api, id, stream } = await run(eng, { prompt: 'hi' });
    const f = await stream.waitFor('failed', 8000);
    assert.equal(typeof f.data, 'string');
    assert.ok(f.data.length > 0 && f.data.length < 300 && !f.data.includes('\n'), JSON.stringify(f.data));
    assert.ok(!/^\s*[{[]/.test(f.data), `plain words, not JSON: ${f.data}`);
    const g = await api.get(id);
    assert.equal(g.json.status, 'failed');
    assert.equal(g.json.error, f.data);
    assert.ok(await poll(() => !fs.existsSync(path.join(TMP, `leuria-${id}`)), { timeoutMs: 3000 }), 'folder removed');
    // the engine is fine
    assert.equal((await sessionApi(eng).prepare({})).status, 201);
  });
});

// Some sandboxes refuse pidfd_open (an older container seccomp profile says EPERM; valgrind 3.19 and kernels
// before 5.3 say ENOSYS). strace, attached to the running engine, makes the kernel's answer EPERM.
describe('ACP backend where pidfd_open is refused', { skip: straceUnavailable(['pidfd_open']) || false, timeout: 120000 }, () => {
  after(stopAll);
  const threads = (pid) => fs.readdirSync(`/proc/${pid}/task`).length;

  for (const [name, mode, end] of [
    ['a turn completes and a closed session\'s agent is gone', undefined, 'close'],
    ['an agent that crashes mid-turn still fails the session with "Agent exited with code 3"', 'crash-on-prompt', 'crash'],
    ['an agent that ignores SIGTERM is still killed after killGraceMs', 'ignore-sigterm', 'cancel'],
  ]) {
    it(name, async () => {
      const eng = await startFakeEngine({ mode, timings: { killGraceMs: 500 } });
      const trace = await straceAttach(eng.proc.pid, ['-e', 'trace=pidfd_open', '-e', 'inject=pidfd_open:error=EPERM']);
      try {
        const before = threads(eng.proc.pid);
        const { api, id, stream } = await run(eng, end === 'cancel' ? {} : { prompt: 'hi' });
        const rec = await agentStart(eng);
        if (end === 'close') {
          const tc = await stream.waitFor('turn_completed', 15000);
          assert.equal(tc.data.text, 'echo: hi');
          assert.equal((await api.close(id)).status, 200);
        } else if (end === 'crash') {
          assert.equal((await stream.waitFor('failed', 15000)).data, 'Agent exited with code 3');
        } else {
          await stream.waitFor('ready', 15000);
          assert.equal((await api.cancel(id)).json.status, 'cancelled');
        }
        await stream.waitForEnd();
        await assertGone(rec.pid, 5000);
        assert.ok(await poll(() => childrenOf(eng.proc.pid).length === 0, { timeoutMs: 5000 }),
          `the engine's children (a zombie is one): ${JSON.stringify(childrenOf(eng.proc.pid))}`);
        // The thread that watched the agent ended with it.
        assert.ok(await poll(() => threads(eng.proc.pid) <= before, { timeoutMs: 5000 }),
          `threads: ${threads(eng.proc.pid)}, before the session ${before}`);
        assert.match(trace.log(), /pidfd_open\(\d+, 0\)\s+= -1 EPERM .*\(INJECTED\)/, 'the engine asked for a pidfd and was refused');
        assert.ok(eng.stderrLines.some((l) => /event=child\.exit_watch_thread reason="Operation not permitted"/.test(l)),
          eng.stderrLines.slice(-10).join('\n'));
        // The engine still serves.
        assert.equal((await sessionApi(eng).prepare({})).status, 201);
      } finally {
        await trace.detach();
      }
    });
  }
});
