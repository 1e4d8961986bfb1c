// `node bench/lib/instructions.mjs WORKLOAD [ARGS…]`, for bench/instructions: one workload with the engine
// (LEURIA_BIN, which bench/instructions points at the engine under callgrind, started with its counting
// off) counting only while the measured part runs. Prints `units <n> <what>` for the script to divide by.
//   acp [CHUNKS] [TURNS]         a paced ACP turn: the scripted agent (tests/fakes/acp-agent.mjs, mode slow)
//                                writes one agent_message_chunk a millisecond, CHUNKS (2,000) a turn; one turn
//                                uncounted, then TURNS (2) counted, prompt to turn_completed
//   streams [N] [EVERY] [SECS]   scenario 7's streams, slowed so that the engine keeps up under valgrind: N
//                                (1,000) sessions streaming from the C model server, one event every EVERY ms
//                                (1,000) each, to the C reader; counted for SECS (20) once they all flow
//   toolcall [CALLS]             scenario 4's tool calls: the lean C client (build-bench/clients/toolcall) as
//                                the MCP client and the page, one call at a time on one kept connection; 200
//                                calls uncounted, then CALLS (2,000) counted
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { sleep } from '../../tests/e2e/lib/engine.mjs';
import { pool } from '../../tests/e2e/lib/load.mjs';
import { openOne, startPacedUpstream } from '../scenarios/07-many-streams.mjs';
import { CLIENTS } from './env.mjs';
import { startLoadEngine } from './contenders.mjs';
import { mcpArgs, pageChannel, toolcall as toolcallClient } from './toolcall.mjs';
import { CPU, spawnLineClient } from './proc.mjs';
import { chatBody, openSession, script, startAcpEngine, startLlmEngine, until, within } from './tokens.mjs';

const counting = (pid, on) => execFileSync('callgrind_control', ['-i', on ? 'on' : 'off', String(pid)], { stdio: 'ignore' });

async function acp(chunks = 2000, turns = 2) {
  const CHUNK = /chunk (\d+)\\n/g;  // "chunk <i>\n" inside a JSON string, as scenario 3 counts them
  const eng = await startAcpEngine({ FAKE_ACP_MODE: 'slow', FAKE_ACP_DELAY_MS: '1', FAKE_ACP_CHUNKS: String(chunks) });
  let counted = 0;
  try {
    for (let t = 0; t <= turns; t++) {
      const sess = await openSession(eng, eng.sites[0], { keep: false, token: CHUNK, sep: '\n' });
      try {
        const a = await sess.post('approve');
        if (a.status !== 200) throw new Error(`approve: ${a.status} ${a.body}`);
        await within(sess.reader.waitText('event: ready'), 120000, 'the agent never became ready');
        if (t > 0) counting(eng.pid, true);
        const p = sess.post('prompt', { prompt: 'go' });
        const out = await within(sess.reader.done, 600000, 'the turn');
        if (t > 0) counting(eng.pid, false);
        const r = await p;
        if (r.status !== 200) throw new Error(`prompt: ${r.status} ${r.body}`);
        if (out.tokens !== chunks) throw new Error(`${out.tokens} of ${chunks} chunks arrived`);
        if (t > 0) counted += out.tokens;
      } finally {
        sess.reader.close();
        await sess.close();
      }
    }
  } finally {
    await eng.stop();
  }
  return { n: counted, what: 'chunk' };
}

async function streams(n = 1000, every = 1000, seconds = 20) {
  const up = await startPacedUpstream();
  const eng = await startLlmEngine(up, { sites: Math.ceil(n / 4) });
  const prompt = script({ count: 0, every });
  const reader = spawnLineClient(path.join(CLIENTS, 'sse-reader'), [chatBody(prompt)], { cpu: CPU.helper });
  try {
    await pool(Array.from({ length: n }, (_, i) => i), 8, (i) => openOne('engine', eng, reader, i, prompt));
    await until(async () => {
      const [all, flowing, failed] = (await reader.ask('count')).split(' ').map(Number);
      return flowing + failed >= all;
    }, { timeoutMs: 120000, ms: 200 });
    await sleep(3000);  // past the streams' first tokens
    await reader.ask('mark');
    counting(eng.pid, true);
    await sleep(seconds * 1000);
    counting(eng.pid, false);
    const events = Number((await reader.ask('take')).split(' ')[0]);
    await reader.ask('close').catch(() => {});
    return { n: events, what: 'event' };
  } finally {
    await reader.stop();
    await eng.stop();
    await up.stop();
  }
}

async function toolcall(calls = 2000) {
  const eng = await startLoadEngine({ sites: 1 });
  try {
    const page = await pageChannel(eng);
    const args = [...(await mcpArgs(eng, page.token)), '--channel', page.channel, '--origin', page.origin, '--text', 'hello'];
    await toolcallClient('call', eng.port, args, { n: 200, warmup: 0 }, CPU.latencyClient);
    counting(eng.pid, true);
    const r = await toolcallClient('call', eng.port, args, { n: calls, warmup: 0 }, CPU.latencyClient);
    counting(eng.pid, false);
    return { n: r.n, what: 'call' };
  } finally {
    await eng.stop();
  }
}

const [workload, ...args] = process.argv.slice(2);
const numbers = args.map(Number);
const run = { acp, streams, toolcall }[workload];
if (!run || numbers.some((x) => !(x > 0))) {
  console.error('usage: node bench/lib/instructions.mjs acp [CHUNKS] [TURNS] | streams [N] [EVERY_MS] [SECONDS] | toolcall [CALLS]');
  process.exit(2);
}
const { n, what } = await run(...numbers);
console.log(`units ${n} ${what}`);
process.exit(0);
