// Scenario 5: prepare → approve → first token, warm upstream. K times per round (100; 20 with --quick,
// after 5 unmeasured), the time from sending a request to reading the first token of the answer:
//   engine   a page's session prepared with its prompt and its event stream open; the clock starts
//            as the approve is sent (a fresh connection, as a page's fetch) and stops at the first
//            `chunk` read from the stream. The engine starts the llm:bench backend (GET /v1/models,
//            "reach the server once", skipped here: the server answered another session's start
//            within 30 s) and streams POST /v1/chat/completions on a kept connection.
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
// The client (the driver) runs on the server's CPU 0 while it times; the upstream on CPU 1 (both
// direct and relayed requests cross CPUs once to reach it). "added" = p50 − direct p50 of the round.

import { startNginxRelay, startNodeRelay } from '../lib/contenders.mjs';
import { summary } from '../lib/stats.mjs';
import { chatBody, fire, nowUs, onCpu, openSession, readTokens, script, startLlmEngine, startOpenAiUpstream, within } from '../lib/tokens.mjs';

const WARM = 5;
const PROMPT = script({ count: 3 });

function chat(port) {
  return readTokens(port, {
    method: 'POST', path: '/v1/chat/completions', end: 'data: [DONE]',
    headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' }, body: chatBody(PROMPT),
  });
}

async function firstToken(reader, t0, what) {
  const out = await within(reader.done, 10000, what);
  reader.close();
  if (!out.firstAt) throw new Error(`${what}: no token (status ${out.status}, ${out.bytes} bytes)`);
  return out.firstAt - t0;
}

const trial = {
  async direct(ctx) {
    const port = ctx.state.upstream.port;
    let t0 = nowUs();
    const plain = await firstToken(chat(port), t0, 'direct');
    t0 = nowUs();
    const m = await fire(port, { method: 'GET', path: '/v1/models' });
    if (m.status !== 200) throw new Error(`GET /v1/models: ${m.status}`);
    const models = await firstToken(chat(port), t0, 'direct, models + chat');
    return { first: plain, models };
  },
  async engine(ctx, srv, i) {
    const site = srv.sites[i % srv.sites.length];
    const sess = await openSession(srv, site, { prompt: PROMPT });
    try {
      const t0 = nowUs();
      const a = sess.post('approve');
      const first = await firstToken(sess.reader, t0, 'engine');
      const r = await a;
      if (r.status !== 200) throw new Error(`approve: ${r.status} ${r.body}`);
      return { first };
    } finally {
      sess.reader.close();
      await sess.close();
    }
  },
  async nginx(ctx, srv) {
    const t0 = nowUs();
    return { first: await firstToken(chat(srv.port), t0, 'nginx') };
  },
  async node(ctx, srv) {
    const t0 = nowUs();
    return { first: await firstToken(readTokens(srv.port, { path: `/llm?prompt=${encodeURIComponent(PROMPT)}`, end: 'event: turn_completed' }), t0, 'node') };
  },
};

const start = {
  direct: async () => ({ stop: async () => {} }),
  engine: (up) => startLlmEngine(up, { sites: 4 }),
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
  notes: 'Client (driver) on CPU 0 with the server, upstream on CPU 1; fresh connection per request; ' +
    'engine: approve sent with the stream already open, first `chunk` read; nginx keeps its upstream ' +
    'connections, as the engine does. K trials per round, p50 over them.',

  async setup(ctx) {
    return { upstream: await startOpenAiUpstream(), k: ctx.quick ? 20 : 100, direct: null, nginx: null };
  },
  async teardown(ctx) {
    await ctx.state.upstream.stop();
  },

  async round(contender, ctx) {
    const srv = await start[contender](ctx.state.upstream);
    try {
      const rows = await onCpu(ctx.cpu.latencyClient, async () => {
        const out = [];
        for (let i = 0; i < WARM + ctx.state.k; i++) {
          const r = await trial[contender](ctx, srv, i);
          if (i >= WARM) out.push(r);
        }
        return out;
      });
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
