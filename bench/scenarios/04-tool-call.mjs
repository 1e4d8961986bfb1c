// Scenario 4: the tool-call relay. An MCP client POSTs `tools/call` to /webmcp/mcp (Bearer: the
// channel token) → the engine sends `callTool` on the page's WebSocket → the page answers
// `toolResponse` at once → the engine answers the POST (SSE, as MCP clients ask). One call at a time.
//
// The client and the page are one small C program (bench/clients/toolcall.c), pinned to CPU 0 with
// the server: a Node client adds ~5 µs per hop at p50 and a p99 of hundreds of µs (docs/PERFORMANCE.md).
// It sends the same request bytes to every contender and keeps the connection alive when the server
// lets it (a server that closes it after each answer makes the client pay a connect per call, timed).
//   engine  the release engine; a prepared session (no AI), its page registered with the same C client
//   sdk     the MCP TypeScript SDK's server (bench/baselines/mcp-sdk-server.mjs): the echo tool runs in
//           its own process, so it has no page hop at all
//   floor   what the machine can do: the HTTP floor (floors/epoll-http answering the same request with
//           a body of the engine's size, same client, kept alive) plus the TCP ping-pong floor
//           (floors/tcp-pingpong's echo, messages of the page's size, timed by the same client's
//           `echo` mode); latency and CPU are the sums (the plotted distribution adds the two
//           percentile by percentile: an approximation of the sum's distribution)
// Figures: p50/p99 per call; the server's CPU per call from /proc (utime+stime, and schedstat beside
// it) over the client's whole run, warm-up calls included (all calls are alike).

import { startFloorEcho, startFloorHttp, startLoadEngine, startMcpSdkServer } from '../lib/contenders.mjs';
import { usageWindow } from '../lib/procfs.mjs';
import { counts, mcpArgs, pageChannel, pingpong, toolcall } from '../lib/toolcall.mjs';

const TEXT = 'hello';
// What the engine answers a call with (the HTTP floor sends a body this size) and the mean size of the
// page's two WebSocket frames (callTool in, about 86 B; toolResponse out, about 68 B).
const ENGINE_BODY = `event: message\ndata: {"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"${TEXT}"}],"isError":false}}\n\n`;
const PAGE_FRAME_BYTES = 77;

/** One run of the client against `srv`, with the server's CPU over exactly that run. */
async function measure(srv, port, args, cnt, cpu) {
  const w = usageWindow(srv.pids());
  const r = await toolcall('call', port, ['--text', TEXT, ...args], cnt, cpu);
  const u = w.stop();
  const calls = cnt.n + cnt.warmup;
  return { r, u, cpuUs: u.cpuUs / calls, cpuNsUs: u.cpuNsUs / calls };
}

function figuresOf(m) {
  return {
    p50_us: m.r.p50_us, p99_us: m.r.p99_us, cpu_us: m.cpuUs, cpu_ns_us: m.cpuNsUs,
    connects_per_call: m.r.connects / m.r.n, resp_bytes: m.r.resp_bytes,
  };
}

export default {
  id: '4',
  title: 'Tool-call relay: tools/call on /webmcp/mcp → page WebSocket → toolResponse → reply',
  contenders: ['engine', 'sdk', 'floor'],
  baseline: 'floor',
  figures: {
    p50_us: { label: 'p50 per call', unit: 'µs', better: 'lower' },
    p99_us: { label: 'p99 per call', unit: 'µs', better: 'lower' },
    cpu_us: { label: 'server CPU per call (utime+stime)', unit: 'µs', better: 'lower' },
    cpu_ns_us: { label: 'server CPU per call (schedstat)', unit: 'µs', better: 'lower' },
    connects_per_call: { label: 'TCP connections per call', unit: '', better: 'lower' },
    resp_bytes: { label: 'bytes per HTTP answer', unit: 'B', better: 'lower' },
    http_p50_us: { label: 'floor: HTTP part, p50', unit: 'µs', better: 'lower' },
    tcp_p50_us: { label: 'floor: TCP ping-pong part, p50', unit: 'µs', better: 'lower' },
  },
  targets: [
    { figure: 'p50_us', contender: 'engine', vs: 'floor', max: 1.5, text: 'p50 ≤ 1.5× floor (HTTP floor + TCP ping-pong)' },
    { figure: 'cpu_us', contender: 'engine', max: 40, text: 'engine CPU ≤ 40 µs per call' },
  ],
  distUnit: { calls: 'µs' },
  notes: 'Lean C client and page (bench/clients/toolcall.c) on CPU 0 with the server; one call at a time; ' +
    'the floor sums the p50 (and p99, percentile by percentile in the plot: an approximation) of epoll-http ' +
    'and tcp-pingpong serve (timed by toolcall echo) measured in the same round. CPU per call over all calls of the run, warm-up included.',

  async setup(ctx) {
    return { cnt: counts(ctx.quick) };
  },

  async round(contender, ctx) {
    const { cnt } = ctx.state;
    const cpu = ctx.cpu.latencyClient;
    if (contender === 'engine') {
      const eng = await startLoadEngine({ sites: 1 });
      try {
        const page = await pageChannel(eng);
        const args = [...(await mcpArgs(eng, page.token)), '--channel', page.channel, '--origin', page.origin];
        const m = await measure(eng, eng.port, args, cnt, cpu);
        return { figures: figuresOf(m), dists: { calls: m.r.dist }, extra: { client: { ...m.r, dist: undefined }, usage: m.u } };
      } finally {
        await eng.stop();
      }
    }
    if (contender === 'sdk') {
      const srv = await startMcpSdkServer();
      try {
        const m = await measure(srv, srv.port, await mcpArgs(srv.port, 'sdk-bearer-0123456789abcdef0123456789abcdef01'), cnt, cpu);
        return { figures: figuresOf(m), dists: { calls: m.r.dist }, extra: { client: { ...m.r, dist: undefined }, usage: m.u } };
      } finally {
        await srv.stop();
      }
    }
    // floor: the HTTP leg with the same client and request bytes, then the page's round trip.
    const http = await startFloorHttp(ENGINE_BODY);
    const echo = await startFloorEcho();
    try {
      const fake = ['--bearer', 'x'.repeat(43), '--session', 'y'.repeat(22), '--version', '2025-06-18'];
      const h = await measure(http, http.port, fake, cnt, cpu);
      const w = usageWindow(echo.pids());
      const p = await pingpong(echo.port, PAGE_FRAME_BYTES, cnt, cpu);
      const u = w.stop();
      const trips = cnt.n + cnt.warmup;
      return {
        figures: {
          p50_us: h.r.p50_us + p.p50_us, p99_us: h.r.p99_us + p.p99_us,
          cpu_us: h.cpuUs + u.cpuUs / trips, cpu_ns_us: h.cpuNsUs + u.cpuNsUs / trips,
          connects_per_call: h.r.connects / h.r.n, resp_bytes: h.r.resp_bytes,
          http_p50_us: h.r.p50_us, tcp_p50_us: p.p50_us,
        },
        dists: { calls: p.dist.map(([q, v]) => [q, v + h.r.dist.find(([k]) => k === q)[1]]) },
        extra: { http: h.r, httpUsage: h.u, tcp: p, tcpUsage: u },
      };
    } finally {
      await echo.stop();
      await http.stop();
    }
  },
};
