// Scenario 3: token relay through an ACP agent. The scripted agent (tests/fakes/acp-agent.mjs, mode
// many-chunks, on the official ACP SDK) answers a prompt with N `agent_message_chunk`s (10,000; 2,000
// with --quick) written as fast as it can, and the relay turns them into the page's `chunk` events:
//   engine   a page's session (the agent is the default AI; started through `taskset -c 1`, so it runs
//            on the helper CPU from its first instruction)
//   node     the Node relay's ACP routes (bench/baselines/node-relay.mjs /acp/…, the SDK's client side),
//            spawning the same agent the same way
//   floor    build-bench/floors/acp-relay: the same routes in C, one read of the agent and one write to
//            the page per wakeup, no JSON parser (what the kernel's share of a chunk costs on its own)
// CPU per chunk = the relay process's own scheduler time (its pid only, not the agent's) from just
// before the prompt (the session already approved, its agent up and idle) to turn_completed, over N.
// Each round runs one unmeasured session first (agent start, code paths warm), then the measured one.
// The reader is the driver on CPU 1 (a throughput client); every chunk's text is checked to arrive.

import { startFloorAcpRelay } from '../lib/contenders.mjs';
import { usageWindow } from '../lib/procfs.mjs';
import { acpAgentArgv, fire, openSession, readTokens, startAcpEngine, startNodeAcpRelay, within } from '../lib/tokens.mjs';

const CHUNK = /chunk (\d+)\\n/g;  // "chunk <i>\n" as it appears inside a JSON string

async function engineTurn(eng, site) {
  const sess = await openSession(eng, site, { keep: false, token: CHUNK, sep: '\n' });
  try {
    const a = await sess.post('approve');
    if (a.status !== 200) throw new Error(`approve: ${a.status} ${a.body}`);
    await within(sess.reader.waitText('event: ready'), 15000, 'the agent never became ready');
    const w = usageWindow([eng.pid]);
    const p = sess.post('prompt', { prompt: 'go' });
    const out = await within(sess.reader.done, 120000, 'the turn');
    const u = w.stop();
    const r = await p;
    if (r.status !== 200) throw new Error(`prompt: ${r.status} ${r.body}`);
    return { out, u };
  } finally {
    sess.reader.close();
    await sess.close();
  }
}

// The Node relay and the C floor serve the same /acp routes.
async function relayTurn(srv) {
  const reader = readTokens(srv.port, { path: '/acp/stream', end: 'event: turn_completed', keep: false, token: CHUNK, sep: '\n' });
  try {
    await within(reader.waitText('event: ready'), 15000, 'the agent never became ready');
    const id = /"id":"([^"]+)"/.exec(reader.prefix())?.[1];
    const w = usageWindow([srv.pid]);
    const p = fire(srv.port, { path: `/acp/${id}/prompt`, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: 'go' }) });
    const out = await within(reader.done, 120000, 'the turn');
    const u = w.stop();
    const r = await p;
    if (r.status !== 200) throw new Error(`prompt: ${r.status} ${r.body}`);
    return { out, u };
  } finally {
    reader.close();
  }
}

export default {
  id: '3',
  title: 'Token relay through an ACP agent (agent_message_chunk as fast as the agent writes)',
  contenders: ['floor', 'engine', 'node'],  // the floor first: the others are also shown beyond it
  baseline: 'node',
  figures: {
    cpu_us: { label: 'relay CPU per chunk', unit: 'µs', better: 'lower' },
    chunks_per_s: { label: 'chunks per second', unit: '/s', better: 'higher' },
    beyond_floor_us: { label: 'relay CPU per chunk beyond the C floor', unit: 'µs', better: 'lower' },
    wakeups_per_chunk: { label: 'relay wakeups per chunk (context switches)', unit: '', better: 'lower' },
    cpu_ticks_us: { label: 'relay CPU per chunk (utime+stime ticks)', unit: 'µs', better: 'lower' },
  },
  targets: [
    // Changed from "CPU per chunk ≤ 3 µs" (docs/PERFORMANCE.md says why): the agent writes one line per
    // chunk, slower than any relay reads them, so every relay wakes every few chunks, and the C floor,
    // which does nothing but read, frame and write, spends 4.2–4.6 µs per chunk on those wakeups alone.
    { figure: 'beyond_floor_us', contender: 'engine', max: 3, text: 'CPU per chunk ≤ 3 µs beyond the C floor' },
    // Changed from the totals' ratio (docs/PERFORMANCE.md says why): on the machine of the latest tables the
    // C floor itself is only 3.1–3.9× below Node, so the totals asked the engine to beat the floor. As in
    // scenario 2 (paced), a fraction: the engine's CPU beyond the floor at most a quarter of Node's.
    { figure: 'beyond_floor_us', contender: 'engine', vs: 'node', max: 0.25, text: '≥ 4× less CPU than the Node relay (beyond the C floor: engine’s ≤ ¼ of Node’s)' },
  ],
  notes: 'tests/fakes/acp-agent.mjs many-chunks on CPU 1 (taskset in the agent command); relay on CPU 0; reader on CPU 1. ' +
    'CPU from schedstat of the relay process alone, prompt to turn_completed, per chunk; beyond the C floor = minus the floor\'s of the same round; ' +
    'wakeups = the relay\'s context switches (voluntary and not) per chunk.',

  async setup(ctx) {
    const n = ctx.quick ? 2000 : 10000;
    return { n, floorCpu: null, agentEnv: { FAKE_ACP_MODE: 'many-chunks', FAKE_ACP_CHUNKS: String(n) } };
  },

  async round(contender, ctx) {
    const { n, agentEnv } = ctx.state;
    let srv;
    let run;
    if (contender === 'engine') {
      srv = await startAcpEngine(agentEnv);
      run = () => engineTurn(srv, srv.sites[0]);
    } else if (contender === 'floor') {
      srv = await startFloorAcpRelay(acpAgentArgv(), agentEnv);
      run = () => relayTurn(srv);
    } else {
      srv = await startNodeAcpRelay(acpAgentArgv(), agentEnv);
      run = () => relayTurn(srv);
    }
    try {
      await run();  // warm: one whole session, unmeasured
      const { out, u } = await run();
      if (out.tokens !== n) throw new Error(`${out.tokens} of ${n} chunks arrived`);
      const cpu = u.cpuNsUs / n;
      if (contender === 'floor') ctx.state.floorCpu = cpu;
      const floor = ctx.state.floorCpu;
      return {
        figures: {
          cpu_us: cpu,
          beyond_floor_us: contender !== 'floor' && floor != null ? cpu - floor : null,
          wakeups_per_chunk: (u.voluntary + u.involuntary) / n,
          chunks_per_s: n / (u.wallMs / 1000),
          cpu_ticks_us: u.cpuUs / n,
        },
        extra: { n, cpu: u, bytes: out.bytes },
      };
    } finally {
      await srv.stop();
    }
  },
};
