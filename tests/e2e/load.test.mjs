// Load (issue 7, "Load"): 1,000 idle connections, 500 open session event streams and 200 WebMCP tool
// channels held at once on loopback, while a client keeps being served (GET /health and session turns
// with the scripted agent); then everything is closed and the engine's descriptors and memory come back.
// The long version is bench/load/run.
//
// Numbers: the full ones on the release build; half under ASan (each connection costs it far more
// time and memory). LEURIA_LOAD_SCALE=<factor> sets the factor; LEURIA_LOAD_HOLD_MS the hold (10 s).
// The engine's default connection cap (1,024, not set by the spec) is below the 1,700 held connections,
// so the run raises it with the test timing maxConnections; the second test keeps the default cap.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { BIN, stopAll } from './helpers.mjs';
import {
  holdIdle, holdSessions, isSanitizerBuild, loadClient, openFilesLimit, percentiles, runLoad, serveClient, startLoadEngine,
  SESSIONS_PER_ORIGIN,
} from './lib/load.mjs';

const ASAN = isSanitizerBuild(BIN);
const FULL = { idle: 1000, streams: 500, channels: 200 };
const HOLD_MS = Number(process.env.LEURIA_LOAD_HOLD_MS || 10000);
// Descriptors besides the held connections: the engine's own files, the agent's pipes, the node runtime.
const FD_RESERVE = 300;

/** The numbers for this run: FULL times the scale, lowered to what the open-files limit allows. */
function numbers(t) {
  let scale = Number(process.env.LEURIA_LOAD_SCALE || (ASAN ? 0.5 : 1));
  // This process and the engine (which inherits the limit) each hold one end of every connection;
  // Node can't raise its own limit (bench/load/run does, through ulimit).
  const limit = openFilesLimit();
  const perScale = FULL.idle + FULL.streams + 2 * FULL.channels;
  if (perScale * scale + FD_RESERVE > limit) {
    scale = Math.max(0.05, (limit - FD_RESERVE) / perScale);
    t.diagnostic(`open-files limit ${limit}: scale lowered to ${scale.toFixed(2)}`);
  }
  const n = Object.fromEntries(Object.entries(FULL).map(([k, v]) => [k, Math.max(4, Math.round(v * scale))]));
  t.diagnostic(`scale ${scale}: ${JSON.stringify(n)}, hold ${HOLD_MS} ms, ${ASAN ? 'ASan' : 'release'} build`);
  return n;
}

const sitesFor = (streams) => Math.ceil(streams / SESSIONS_PER_ORIGIN);
const MB = 1024;

describe('load', { timeout: 600000 }, () => {
  after(stopAll);

  it('holds idle connections, event streams and tool channels while a client is served; descriptors and memory come back', async (t) => {
    const n = numbers(t);
    const held = n.idle + n.streams + n.channels;
    const eng = await startLoadEngine({
      sites: sitesFor(n.streams),
      // The cap above what is held; deadlines past the run, so the idle connections stay for the whole hold.
      timings: { maxConnections: Math.max(1024, held + 100), headerTimeoutMs: 600000, idleTimeoutMs: 600000 },
    });
    const r = await runLoad(eng, { ...n, holdMs: HOLD_MS, log: (s) => t.diagnostic(s) });
    t.diagnostic(`latency (ms) idle ${JSON.stringify(r.latency.idle)}`);
    t.diagnostic(`latency (ms) under load ${JSON.stringify(r.latency.load)}`);

    const expected = { streams: n.streams, channels: n.channels, idle: n.idle };
    assert.deepEqual(r.opened, expected, 'everything opened');
    assert.deepEqual(r.stillOpen, expected, 'everything still open at the end of the hold');
    assert.deepEqual(r.errors, [], 'every request of the client answered');
    const { health, turn } = r.latency.load;
    assert.ok(health.n >= 20 && turn.n >= 2, `the client kept being served: ${JSON.stringify(r.latency.load)}`);
    assert.ok(health.p99 < 2000, `GET /health p99 under load ${health.p99} ms`);
    assert.ok(turn.p99 < 2000, `session turn p99 under load ${turn.p99} ms`);

    const { before, during, after: end } = r.usage;
    assert.ok(during.fds >= before.fds + held, `the engine held every connection: ${JSON.stringify(r.usage)}`);
    assert.ok(end.fds <= before.fds + 2, `descriptors back to the baseline: ${JSON.stringify(r.usage)}`);
    // ASan's quarantine and shadow memory: its RSS says little about the engine's own; checked on other builds.
    if (!ASAN) {
      // Measured on the release build at full scale: +25 MB while held (about 15 KB a connection, most of
      // it the 16 KB read buffer), and the same after closing: glibc keeps the freed small blocks in the
      // heap (RSS stays at the peak; the heap in use returns to within 1 MB). So: a bound per connection
      // while held, nothing added by closing, and a repeat of the run must not grow it much again (measured
      // 1 to 7 MB, shrinking with each repeat; a leak of 6 KB a connection, under half of what each holds,
      // would fail it).
      const perConn = (during.rssKb - before.rssKb) / held;
      assert.ok(perConn < 40, `${perConn.toFixed(1)} KB per held connection: ${JSON.stringify(r.usage)}`);
      assert.ok(end.rssKb <= during.rssKb + 4 * MB, `closing added memory: ${JSON.stringify(r.usage)}`);
      const again = await runLoad(eng, { ...n, holdMs: 2000, idleProbeMs: 1000 });
      assert.deepEqual(again.errors, []);
      const grown = again.usage.after.rssKb - end.rssKb;
      t.diagnostic(`repeat: ${JSON.stringify(again.usage)}; RSS grew ${grown} kB`);
      assert.ok(grown < 6 * held + 4 * MB, `a repeat of the run grew RSS by ${grown} kB`);
      assert.ok(again.usage.after.fds <= before.fds + 2, `descriptors: ${JSON.stringify(again.usage)}`);
    }
    await eng.stop();
  });

  it('at the default cap (1,024), streams and channels keep their slots, idle connections make room, the client is served', async (t) => {
    const n = numbers(t);
    const cap = Math.round(1024 * (n.idle / FULL.idle));
    const eng = await startLoadEngine({
      sites: sitesFor(n.streams),
      timings: { ...(cap === 1024 ? {} : { maxConnections: cap }), headerTimeoutMs: 600000, idleTimeoutMs: 600000 },
    });
    const client = await loadClient(eng);
    const held = await holdSessions(eng, n);
    const idles = await holdIdle(eng, n.idle);
    const served = await serveClient(client, { durationMs: 3000 });
    assert.deepEqual(served.errors, []);
    assert.ok(served.health.length >= 10, `served ${served.health.length}`);
    assert.equal(held.openStreams(), n.streams, 'every stream kept');
    assert.equal(held.openChannels(), n.channels, 'every channel kept');
    // The client's stream and its turns' connections take slots too: at least that many idle ones made room.
    const busy = n.streams + n.channels + 1;
    t.diagnostic(`cap ${cap}: ${idles.open()} of ${n.idle} idle connections still open; client ${JSON.stringify(percentiles(served.health))} ms`);
    assert.ok(idles.open() <= cap - busy, `idle connections open: ${idles.open()} (cap ${cap})`);
    assert.ok(idles.open() >= cap - busy - 10, `only as many closed as needed: ${idles.open()} open (cap ${cap})`);
    assert.equal(eng.stderrLines.filter((l) => l.includes('event=listener.at_cap')).length, 1, 'one log line for the burst');
    idles.close();
    await held.close();
    await eng.stop();
  });
});
