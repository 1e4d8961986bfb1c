// `node bench/lib/start-profile.mjs [TRIALS]`: scenario 5's engine trials, for bench/hot-functions, with
// the engine (LEURIA_BIN, which bench/hot-functions points at the engine under callgrind, started with its
// instrumentation off) counting only while they run: what a session's start runs, each function of it,
// however little it takes (a sampling profiler misses most of them, and each is a page of code to touch).
// Each trial is scenario 5's: 16 sessions prepared at a time with their prompt, then for each its stream
// opened and its approve sent on fresh connections, until the first token comes; then they are closed.
// One batch goes first, uncounted, so that what runs once (the first connection to the model server, its
// GET /v1/models) is left out. The engine and the model server stop at the end; callgrind writes its file.

import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { CLIENTS } from './env.mjs';
import { spawnLineClient } from './proc.mjs';
import { chatBody, script, startLlmEngine, startOpenAiUpstream } from './tokens.mjs';
import { sessionApi } from '../../tests/e2e/lib/sessions.mjs';

const TRIALS = Number(process.argv[2] || 64);
const BATCH = 16;  // 4 sites × the engine's 4 live sessions per site, as in scenario 5
const PROMPT = script({ count: 3 });

async function batch(eng, client) {
  const sessions = [];
  for (let j = 0; j < BATCH; j++) {
    const site = eng.sites[j % eng.sites.length];
    const api = sessionApi(eng, site);
    const r = await api.prepare({ prompt: PROMPT });
    if (r.status !== 201) throw new Error(`prepare: ${r.status} ${r.body}`);
    sessions.push({ site, api, id: r.json.sessionId });
  }
  for (const s of sessions) {
    const args = `${eng.port} ${s.id} ${s.site.origin} ${s.site.token}`;
    for (const line of [`open ${args}`, `approve ${args}`]) {
      const out = await client.ask(line);
      if (out.startsWith('error')) throw new Error(`firsttoken ${line.split(' ')[0]}: ${out.slice(6)}`);
    }
  }
  for (const s of sessions) await s.api.close(s.id);
}

const upstream = await startOpenAiUpstream();
const eng = await startLlmEngine(upstream, { sites: 4 });
const client = spawnLineClient(path.join(CLIENTS, 'firsttoken'), [chatBody(PROMPT)], { cpu: 0 });
const instrument = (on) => execFileSync('callgrind_control', ['-i', on ? 'on' : 'off', String(eng.pid)], { stdio: 'ignore' });
try {
  await batch(eng, client);
  instrument(true);
  for (let n = 0; n < TRIALS; n += BATCH) await batch(eng, client);
  instrument(false);
  console.log(`${TRIALS} trials counted (engine pid ${eng.pid})`);
} finally {
  await client.stop();
  await eng.stop();
  await upstream.stop();
}
