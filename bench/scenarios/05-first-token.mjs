// Scenario 5: prepare → approve → first token, warm upstream. K times per round (100; 20 with --quick,
// after 5 unmeasured), the time from sending a request to reading the first token of the answer, timed
// by a lean C client (bench/clients/firsttoken.c) on the server's CPU 0; the driver (Node, on CPU 1)
// prepares and closes the engine's sessions, off the clock, 16 at a time (below):
//   engine   a page's session prepared with its prompt; the client opens its event stream (a line of
//            its own, off the clock), then, on the next line, the clock starts as the approve is sent
//            (a fresh connection kept alive, as a page's fetch: no `Connection: close` since 2026-12-05)
//            and stops at the first `chunk` read from the stream. The engine starts the llm:bench
//            backend (GET /v1/models, "reach the server once", skipped here: the server answered another
//            session's start within 30 s) and streams POST /v1/chat/completions on a kept connection.
//   direct   the same chat request straight to the upstream (a fresh connection): the issue's
//            comparison. Its rounds also time GET /v1/models then the chat request, the two requests
//            the engine makes ("direct, models + chat"), to show what of the added time is that
//            extra round trip.
//   nginx    the same chat request through nginx (a fresh connection to nginx, which keeps its
//            upstream connections alive, as the engine does): what a relay that only passes bytes
//            adds here, two more hops between processes (client → relay → upstream and back), with
//            none of the engine's work (no session, no approve, no translation of the stream).
//            For scale, not a target: "beyond nginx" is what the engine adds beyond those hops
//   node     the Node relay's /llm (one upstream request), for scale
// The upstream runs on CPU 1 (both direct and relayed requests cross CPUs once to reach it). "added" =
// p50 − direct p50 of the round. Until 2026-12-02 the driver itself was the client, on CPU 0, and
// prepared each session just before its trial: its own handling of the approve's answer and the
// stream's first events ran on the server's CPU while the token was on its way, and its prepare's
// work on CPU 1 slowed the upstream's answer to the engine (to 2-3× its answer to nginx, in a perf
// trace); both counted against the engine only (docs/PERFORMANCE.md, scenario 5). Since 2026-12-04 the
// upstream is warmed before the first round (UPSTREAM_WARMUP) and keeps no finished response alive,
// each timed request waits IDLE_US after its line, the engine's stream is opened on a line of its own,
// and the engine's log goes to a file (bench/lib/contenders.mjs): each of these had moved one
// contender's figures and not another's (docs/PERFORMANCE.md, findings, "scenario 5, the harness").

import path from 'node:path';
import { startNginxRelay, startNodeRelay } from '../lib/contenders.mjs';
import { CLIENTS } from '../lib/env.mjs';
import { spawnLineClient } from '../lib/proc.mjs';
import { summary } from '../lib/stats.mjs';
import { chatBody, script, startLlmEngine, startOpenAiUpstream } from '../lib/tokens.mjs';
import { sessionApi } from '../../tests/e2e/lib/sessions.mjs';

const WARM = 5;
// Each timed request waits this long after the client reads its line, so that the model server's CPU is
// idle when it comes, for every contender alike (bench/clients/firsttoken.c says why).
const IDLE_US = 1000;
// The model server (Node) answers a fresh connection about twice as fast once V8 has optimised that path:
// without these, the direct request's p50 fell from about 440 to 190 µs between a run's third round and
// its fourth, and every "added" figure read against it grew round by round. Before the first round, this
// many GET /v1/models + chat pairs on fresh connections, and as many chat requests through nginx (a kept
// connection, the relays' way).
const UPSTREAM_WARMUP = 1000;
export const PROMPT = script({ count: 3 });
// The engine's sessions are prepared this many at a time (4 sites × the engine's 4 live sessions per
// site), their trials then run back to back, and they are closed before the next batch: between two
// trials the driver only hands the client its next line, as it does for the other contenders.
const SITES = 4;
export const BATCH = SITES * 4;
const FIRSTTOKEN = path.join(CLIENTS, 'firsttoken');

/** One trial of the lean client: its µs, or a thrown error with its reason. */
export async function timed(client, line) {
  const out = await client.ask(line);
  if (out.startsWith('error')) throw new Error(`firsttoken ${line.split(' ')[0]}: ${out.slice(6)}`);
  return Number(out);
}

/** BATCH sessions prepared on the engine `srv` (not approved), for the next trials (bench/lib/start-profile.mjs
 * runs them too). */
export async function prepareSessions(srv) {
  const out = [];
  for (let j = 0; j < BATCH; j++) {
    const site = srv.sites[j % srv.sites.length];
    const api = sessionApi(srv, site);
    const r = await api.prepare({ prompt: PROMPT });
    if (r.status !== 201) throw new Error(`prepare: ${r.status} ${r.body}`);
    out.push({ site, api, id: r.json.sessionId });
  }
  srv.used = [];
  return out;
}

/** Closes the sessions the trials have used, freeing their sites' places for the next batch. */
export async function closeSessions(srv) {
  for (const s of srv.used || []) await s.api.close(s.id).catch(() => {});
  srv.used = [];
}

const trial = {
  async direct(ctx, srv, i, client) {
    const port = ctx.state.upstream.port;
    return { first: await timed(client, `chat ${port}`), models: await timed(client, `models-chat ${port}`) };
  },
  async engine(ctx, srv, i, client) {
    if (!srv.ready?.length) {
      await closeSessions(srv);
      srv.ready = await prepareSessions(srv);
    }
    const s = srv.ready.shift();
    srv.used.push(s);
    const args = `${srv.port} ${s.id} ${s.site.origin} ${s.site.token}`;
    const opened = await client.ask(`open ${args}`);
    if (opened !== 'open') throw new Error(`firsttoken open: ${opened}`);
    return { first: await timed(client, `approve ${args}`) };
  },
  async nginx(ctx, srv, i, client) {
    return { first: await timed(client, `chat ${srv.port}`) };
  },
  async node(ctx, srv, i, client) {
    return { first: await timed(client, `get ${srv.port} /llm?prompt=${encodeURIComponent(PROMPT)}`) };
  },
};

const start = {
  direct: async () => ({ stop: async () => {} }),
  engine: (up) => startLlmEngine(up, { sites: SITES }),
  nginx: (up) => startNginxRelay(up.port),
  node: (up) => startNodeRelay(up.port),
};

export default {
  id: '5',
  title: 'Prepare → approve → first token, warm upstream',
  contenders: ['direct', 'nginx', 'engine', 'node'],  // direct and nginx first: the others are read beyond them
  baseline: 'direct',
  figures: {
    first_p50_us: { label: 'to the first token, p50', unit: 'µs', better: 'lower' },
    first_p90_us: { label: 'to the first token, p90', unit: 'µs', better: 'lower' },
    added_p50_us: { label: 'added p50 (minus direct)', unit: 'µs', better: 'lower' },
    models_p50_us: { label: 'direct, models + chat, p50', unit: 'µs', better: 'lower' },
    added_vs_models_p50_us: { label: 'added p50 (minus direct models + chat)', unit: 'µs', better: 'lower' },
    beyond_nginx_p50_us: { label: 'p50 beyond nginx’s (what the engine adds beyond a byte relay)', unit: 'µs', better: 'lower' },
  },
  targets: [
    { figure: 'added_p50_us', contender: 'engine', max: 100, text: 'added ≤ 100 µs (approve → first token vs straight to the upstream)' },
  ],
  notes: 'Lean C client (bench/clients/firsttoken.c) on CPU 0 with the server, upstream on CPU 1 (warmed ' +
    `by ${UPSTREAM_WARMUP} requests each way first); fresh connection per request, each ${IDLE_US} µs after its line (the ` +
    'upstream CPU idle for every contender); engine: approve sent with the stream already open (off the clock), ' +
    'first `chunk` read; nginx keeps its upstream connections, as the engine does. K trials per round, p50 over them.',

  async setup(ctx) {
    const upstream = await startOpenAiUpstream();
    // Fresh connections (direct) and a kept one (through nginx): the two ways the contenders reach it.
    const relay = await startNginxRelay(upstream.port);
    const client = spawnLineClient(FIRSTTOKEN, [chatBody(PROMPT)], { cpu: ctx.cpu.latencyClient });
    try {
      for (let i = 0; i < (ctx.quick ? 50 : UPSTREAM_WARMUP); i++) {
        await timed(client, `models-chat ${upstream.port}`);
        await timed(client, `chat ${relay.port}`);
      }
    } finally {
      await client.stop();
      await relay.stop();
    }
    return { upstream, k: ctx.quick ? 20 : 100, direct: null, nginx: null };
  },
  async teardown(ctx) {
    await ctx.state.upstream.stop();
  },

  async round(contender, ctx) {
    const srv = await start[contender](ctx.state.upstream);
    try {
      const client = spawnLineClient(FIRSTTOKEN, [chatBody(PROMPT), String(IDLE_US)], { cpu: ctx.cpu.latencyClient });
      const rows = [];
      try {
        for (let i = 0; i < WARM + ctx.state.k; i++) {
          const r = await trial[contender](ctx, srv, i, client);
          if (i >= WARM) rows.push(r);
        }
      } finally {
        await client.stop();
      }
      const s = summary(rows.map((r) => r.first));
      const figures = { first_p50_us: s.p50, first_p90_us: s.p90 };
      if (contender === 'direct') {
        const m = summary(rows.map((r) => r.models));
        ctx.state.direct = { p50: s.p50, models: m.p50 };
        figures.models_p50_us = m.p50;
      }
      if (contender === 'nginx') ctx.state.nginx = s.p50;
      if (ctx.state.direct) {
        figures.added_p50_us = s.p50 - ctx.state.direct.p50;
        figures.added_vs_models_p50_us = s.p50 - ctx.state.direct.models;
      }
      if (ctx.state.nginx != null && contender !== 'direct') figures.beyond_nginx_p50_us = s.p50 - ctx.state.nginx;
      return { figures, extra: { k: rows.length, first: s, samples: rows } };
    } finally {
      await srv.stop();
    }
  },
};
