// Scenario 9: a stalled SSE reader while 100,000 tokens stream. S readers (4; 2 with --quick) each
// ask for a 100,000-token burst (each token 100 characters: the turn, 10 MB, must outgrow the kernel's
// buffers between the relay and its reader, several MB on loopback, or nothing ever pushes back) from the upstream (bench/fakes/openai-upstream.mjs, helper CPU, which
// writes as fast as its socket drains and counts the time its writes are blocked), read the response
// head, and then stop reading (the socket paused: the kernel's buffers fill and stay full):
//   engine   one page session per reader, stream opened and paused before approve
//   nginx    nginx relaying the upstream's bytes (proxy_buffering off)
//   node     the Node relay's /llm (it writes each event as it comes, as an event-emitting engine does)
// Once the upstream's counters stop moving for 1 s (every stream blocked or finished; at most 20 s, so
// before the engine's 30 s write deadline), the relay's RSS is read: growth per stalled stream over its
// RSS before, in KB. The upstream says whether it was paused: tokens written per stream when it stopped
// (the median) and whether every stream's writes were blocked then. The readers then resume; what
// arrives is counted (a reader the relay dropped gets less than all), and RSS is read again once all is
// read (what the relay keeps after a turn: the engine keeps the turn's text in the conversation).
// The text the relay read while stalled, which the engine must keep (replay, turn_completed, the
// model's conversation): the text the upstream wrote (its textBytes) less what the relay has not read
// yet (the upstream's own buffer, and the kernel's both sides: tx_queue and rx_queue in /proc/net/tcp),
// in the proportion of text to bytes the upstream wrote. The target bounds the growth beyond two copies of it (docs/PERFORMANCE.md says why
// the target changed).

import { sleep } from '../../tests/e2e/lib/engine.mjs';
import { startNginxRelay, startNodeRelay } from '../lib/contenders.mjs';
import { rssKb, unreadFrom } from '../lib/procfs.mjs';
import { median } from '../lib/stats.mjs';
import { chatBody, openSession, readTokens, script, startLlmEngine, startOpenAiUpstream, until, upstreamStats, within } from '../lib/tokens.mjs';

const N = 100000;
const PAD = 90;  // + `T<µs>;` (about 13 characters): 100-character tokens

const start = {
  engine: (up, s) => startLlmEngine(up, { sites: Math.floor(s / 4) + 1 }).then((e) => Object.assign(e, { pids: () => [e.pid] })),
  nginx: (up) => startNginxRelay(up.port),
  node: (up) => startNodeRelay(up.port),
};

/** One reader through `srv`, its response head read, then paused; the answer under way. */
async function stalledReader(contender, srv, i, prompt) {
  if (contender === 'engine') {
    const sess = await openSession(srv, srv.sites[Math.floor(i / 4)], { prompt, keep: false });
    sess.reader.sock.pause();
    const a = await sess.post('approve');
    if (a.status !== 200) throw new Error(`approve: ${a.status} ${a.body}`);
    return sess.reader;
  }
  const reader = contender === 'node'
    ? readTokens(srv.port, { path: `/llm?prompt=${encodeURIComponent(prompt)}`, end: 'event: turn_completed', keep: false })
    : readTokens(srv.port, { method: 'POST', path: '/v1/chat/completions', end: 'data: [DONE]', keep: false, headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' }, body: chatBody(prompt) });
  const status = await reader.opened;
  reader.sock.pause();
  if (status !== 200) throw new Error(`stream ${i}: status ${status}`);
  return reader;
}

async function settledRss(srv) {
  await sleep(300);
  return rssKb(srv.pids());
}

export default {
  id: '9',
  title: 'A stalled SSE reader while 100k tokens stream',
  contenders: ['engine', 'nginx', 'node'],
  baseline: 'nginx',
  figures: {
    growth_kb: { label: 'RSS growth per stalled stream', unit: 'KB', better: 'lower' },
    text_kb: { label: 'turn text the relay read per stream while stalled', unit: 'KB', better: 'lower' },
    beyond_text_kb: { label: 'growth beyond the kept text (engine: 2 copies)', unit: 'KB', better: 'lower' },
    upstream_written: { label: 'tokens the upstream wrote while stalled (median)', unit: '', better: 'lower' },
    upstream_paused: { label: 'upstream paused (every stream blocked: 1)', unit: '', better: 'higher' },
    stall_s: { label: 'time until the upstream stopped moving', unit: 's', better: 'lower' },
    delivered_pct: { label: 'tokens delivered after the reader resumed', unit: '%', better: 'higher' },
    after_kb: { label: 'RSS growth per stream once all was read', unit: 'KB', better: 'lower' },
  },
  targets: [
    // Changed from "RSS growth ≤ 256 KB per stream" (docs/PERFORMANCE.md says why): the text that
    // reached the stalled reader's socket is delivered, and the spec makes the engine keep it.
    { figure: 'beyond_text_kb', contender: 'engine', max: 256, text: 'RSS growth ≤ 256 KB per stalled stream beyond the turn text it keeps' },
    { figure: 'upstream_paused', contender: 'engine', min: 1, text: 'upstream paused by backpressure' },
  ],
  notes: 'Upstream and readers on CPU 1, relay on CPU 0. 100k-token bursts of 100-character tokens; readers paused after the response head. ' +
    'RSS (VmRSS, all the relay\'s processes) before and once the upstream stopped moving; upstream counters from its /stats; ' +
    'text read = text written less the relay\'s unread bytes from the upstream (/proc/net/tcp rx_queue).',

  async setup(ctx) {
    return { upstream: await startOpenAiUpstream(), s: ctx.quick ? 2 : 4 };
  },
  async teardown(ctx) {
    await ctx.state.upstream.stop();
  },

  async round(contender, ctx) {
    const { upstream, s } = ctx.state;
    const srv = await start[contender](upstream, s);
    const readers = [];
    try {
      // One whole short answer first, read to the end: the relay's first-use memory is in the base.
      const warm = await stalledReader(contender, srv, s, script({ count: 200 }));  // (the engine: a site of its own)
      warm.sock.resume();
      await within(warm.done, 10000, 'warm-up answer');
      warm.close();
      const base = await settledRss(srv);

      const tag = `s9-${contender}-${ctx.round}`;
      const t0 = performance.now();
      for (let i = 0; i < s; i++) readers.push(await stalledReader(contender, srv, i, script({ count: N, tag, pad: PAD })));
      // Settled: the upstream's counters unchanged for 1 s (blocked or finished).
      let last = -1;
      let sameSince = performance.now();
      let stats = [];
      await until(async () => {
        stats = await upstreamStats(upstream, tag);
        const total = stats.reduce((a, x) => a + x.written, 0);
        if (total !== last) {
          last = total;
          sameSince = performance.now();
        }
        return stats.length === s && performance.now() - sameSince >= 1000;
      }, { timeoutMs: 20000, ms: 100 });
      const stallS = (performance.now() - t0 - 1000) / 1000;
      const stalled = rssKb(srv.pids());
      const unread = unreadFrom(upstream.port) + stats.reduce((a, x) => a + x.pending, 0);
      const written = stats.reduce((a, x) => a + x.textBytes, 0);
      const bytes = stats.reduce((a, x) => a + x.bytes, 0);
      const textKb = Math.max(0, written - (bytes ? (unread * written) / bytes : 0)) / s / 1024;
      const paused = stats.length === s && stats.every((x) => x.blockedNow && x.written < N);

      for (const r of readers) r.sock.resume();
      const outs = await within(Promise.all(readers.map((r) => r.done)), 120000, 'the resumed readers');
      const delivered = outs.reduce((a, o) => a + o.tokens, 0);
      for (const r of readers) r.close();
      const after = await settledRss(srv);
      return {
        figures: {
          growth_kb: (stalled - base) / s,
          text_kb: textKb,
          // The engine keeps a turn's text twice: the session's (replay, turn_completed) and the
          // model's conversation (sent again with the next prompt).
          beyond_text_kb: contender === 'engine' ? (stalled - base) / s - 2 * textKb : null,
          upstream_written: median(stats.map((x) => x.written)),
          upstream_paused: paused ? 1 : 0,
          stall_s: stallS,
          delivered_pct: (100 * delivered) / (N * s),
          after_kb: (after - base) / s,
        },
        extra: { s, n: N, pad: PAD, unreadBytes: unread, rssKb: { base, stalled, after }, upstream: stats, delivered: outs.map((o) => o.tokens) },
      };
    } finally {
      for (const r of readers) r.close();
      await srv.stop();
    }
  },
};
