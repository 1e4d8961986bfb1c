// Scenario 6: the page's tool channel echo. The page sends {"type":"ping"} on its channel
// (ws://…/webmcp/channel/<id>?token=…) and the engine answers {"type":"pong"} (spec, "Page → engine":
// the page may ping; the engine also pings every 15 s, which the client answers as the spec asks).
// One round trip at a time, the client (bench/clients/toolcall.c `ping`, C, masked frames as a
// browser sends them) pinned to CPU 0 with the server.
//   engine  the release engine; a prepared session (no AI), its page registered
//   node    bench/baselines/node-ws-echo.mjs: `ws`, parsing the message and answering pong, the same bytes
//   floor   floors/tcp-pingpong serve: a C echo over loopback TCP, timed by the same client's `echo`
//           mode, messages of 19 B (the mean of the ping frame, 21 B, and the pong frame, 17 B), no
//           WebSocket framing at all
// Figures: p50/p99 per round trip; the server's CPU per round trip from /proc over the whole run.

import { startFloorEcho, startLoadEngine, startNodeWsEcho } from '../lib/contenders.mjs';
import { usageWindow } from '../lib/procfs.mjs';
import { counts, pageChannel, pingpong, toolcall } from '../lib/toolcall.mjs';

const FRAME_BYTES = 19;

export default {
  id: '6',
  title: 'Page tool channel echo (ping → pong on the tool channel)',
  contenders: ['engine', 'node', 'floor'],
  baseline: 'floor',
  figures: {
    p50_us: { label: 'p50 per round trip', unit: 'µs', better: 'lower' },
    p99_us: { label: 'p99 per round trip', unit: 'µs', better: 'lower' },
    cpu_us: { label: 'server CPU per round trip (utime+stime)', unit: 'µs', better: 'lower' },
    cpu_ns_us: { label: 'server CPU per round trip (schedstat)', unit: 'µs', better: 'lower' },
  },
  targets: [
    { figure: 'p50_us', contender: 'engine', vs: 'floor', max: 1.4, text: 'p50 ≤ 1.4× the C TCP floor' },
  ],
  distUnit: { echo: 'µs' },
  notes: 'C WebSocket client (bench/clients/toolcall.c ping) on CPU 0 with the server; one round trip at a time; ' +
    'the floor is tcp-pingpong serve timed by toolcall echo (blocking C, as tcp-pingpong client), 19-byte messages. CPU over all round trips, warm-up included.',

  async setup(ctx) {
    return { cnt: counts(ctx.quick) };
  },

  async round(contender, ctx) {
    const { cnt } = ctx.state;
    const cpu = ctx.cpu.latencyClient;
    const trips = cnt.n + cnt.warmup;
    let srv;
    try {
      let run;
      if (contender === 'engine') {
        srv = await startLoadEngine({ sites: 1 });
        const page = await pageChannel(srv);
        run = () => toolcall('ping', srv.port, ['--channel', page.channel, '--origin', page.origin], cnt, cpu);
      } else if (contender === 'node') {
        srv = await startNodeWsEcho();
        run = () => toolcall('ping', srv.port, ['--channel', '/'], cnt, cpu);
      } else {
        srv = await startFloorEcho();
        run = () => pingpong(srv.port, FRAME_BYTES, cnt, cpu);
      }
      const w = usageWindow(srv.pids());
      const r = await run();
      const u = w.stop();
      return {
        figures: { p50_us: r.p50_us, p99_us: r.p99_us, cpu_us: u.cpuUs / trips, cpu_ns_us: u.cpuNsUs / trips },
        dists: { echo: r.dist },
        extra: { client: { ...r, dist: undefined }, usage: u },
      };
    } finally {
      if (srv) await srv.stop();
    }
  },
};
