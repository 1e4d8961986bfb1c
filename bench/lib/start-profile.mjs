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
import { chatBody, startLlmEngine, startOpenAiUpstream } from './tokens.mjs';
import { BATCH, PROMPT, closeSessions, prepareSessions, timed } from '../scenarios/05-first-token.mjs';

const TRIALS = Number(process.argv[2] || 64);

async function batch(eng, client) {
  for (const s of await prepareSessions(eng)) {
    eng.used.push(s);
    const args = `${eng.port} ${s.id} ${s.site.origin} ${s.site.token}`;
    const opened = await client.ask(`open ${args}`);
    if (opened !== 'open') throw new Error(`firsttoken open: ${opened}`);
    await timed(client, `approve ${args}`);
  }
  await closeSessions(eng);
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
