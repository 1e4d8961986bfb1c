// Scenario 11: idle. 100 sessions as pages hold them (prepared, event stream open, tool channel open,
// nothing happening) for 60 s (20 s with --quick: still long enough to hold one 15 s ping of every
// session), and the engine's cost of just keeping them:
//   CPU %      of the window, from the scheduler's run time (/proc/<pid>/task/*/schedstat, in ns: a
//              target of 0.05% of 60 s is 30 ms, three clock ticks, too coarse for utime+stime;
//              the tick figure is reported beside it)
//   wakeups    voluntary context switches of the engine's threads (each is one return from
//              epoll_wait/a blocking call), per second and per session per minute
//   allowed    what the pings account for, counted on the pages' side during the same window: each
//              app-level ping the engine sends (tool channel, every 15 s) and the pong it then reads,
//              and each keep-alive comment on an event stream (every 15 s). Wakeups above that are
//              timers beyond the spec's pings (WebSocket protocol pings are counted and shown apart).

import { sleep } from '../../tests/e2e/lib/engine.mjs';
import { holdSessions, SESSIONS_PER_ORIGIN } from '../../tests/e2e/lib/load.mjs';
import { startLoadEngine } from '../lib/contenders.mjs';
import { threads, usageWindow } from '../lib/procfs.mjs';

const SESSIONS = 100;

/** What the pages have received so far: app-level pings, WebSocket ping frames, stream keep-alives. */
function received(held, wsPings) {
  let appPings = 0;
  let keepAlives = 0;
  for (const s of held.sessions) {
    appPings += s.page ? s.page.messages.filter((m) => m.type === 'ping').length : 0;
    keepAlives += s.stream.raw.split('\n\n').filter((block) => block.startsWith(':')).length;
  }
  return { appPings, wsPings: wsPings.n, keepAlives };
}

export default {
  id: '11',
  title: 'Idle: 100 sessions for 60 s',
  contenders: ['engine'],
  figures: {
    cpu_pct: { label: 'CPU (schedstat)', unit: '%', better: 'lower' },
    cpu_pct_ticks: { label: 'CPU (utime+stime)', unit: '%', better: 'lower' },
    wakeups_per_s: { label: 'wakeups per second', unit: '/s', better: 'lower' },
    wakeups_per_session_min: { label: 'wakeups per session per minute', unit: '', better: 'lower' },
    allowed_per_session_min: { label: 'allowed by pings, per session per minute', unit: '', better: 'lower' },
    wakeups_vs_allowed: { label: 'wakeups / allowed', unit: '×', better: 'lower' },
    ws_pings_per_session_min: { label: 'WebSocket ping frames per session per minute', unit: '', better: 'lower' },
    involuntary: { label: 'involuntary switches', unit: '', better: 'lower' },
    threads: { label: 'engine threads', unit: '', better: 'lower' },
  },
  targets: [
    { figure: 'cpu_pct', contender: 'engine', max: 0.05, text: 'CPU ≤ 0.05% while idle' },
    { figure: 'wakeups_vs_allowed', contender: 'engine', max: 1, text: 'no timers beyond the spec’s pings (wakeups ≤ pings sent + pongs read + keep-alives)' },
  ],
  notes: 'The pages live in the bench process (CPU 1); their sessions are prepared, not approved: no AI runs.',

  async setup(ctx) {
    return { windowMs: ctx.quick ? 20000 : 60000 };
  },

  async round(contender, ctx) {
    const eng = await startLoadEngine({ sites: Math.ceil(SESSIONS / SESSIONS_PER_ORIGIN) });
    let held;
    try {
      held = await holdSessions(eng, { streams: SESSIONS, channels: SESSIONS });
      const wsPings = { n: 0 };
      for (const s of held.sessions) s.page.sock.ws.on('ping', () => wsPings.n++);
      await sleep(2000);  // the setup's last answers and acks are not idleness
      const r0 = received(held, wsPings);
      const w = usageWindow(eng.pids());
      await sleep(ctx.state.windowMs);
      const u = w.stop();
      const r1 = received(held, wsPings);
      if (held.openStreams() !== SESSIONS || held.openChannels() !== SESSIONS) {
        throw new Error(`sessions dropped while idle: ${held.openStreams()} streams, ${held.openChannels()} channels open`);
      }
      const d = { appPings: r1.appPings - r0.appPings, wsPings: r1.wsPings - r0.wsPings, keepAlives: r1.keepAlives - r0.keepAlives };
      const allowed = 2 * d.appPings + d.keepAlives;  // a ping written, its pong read; a keep-alive written
      const perSessionMin = (x) => (x * 60000) / u.wallMs / SESSIONS;
      return {
        figures: {
          cpu_pct: (100 * u.cpuNsUs) / (u.wallMs * 1000),
          cpu_pct_ticks: (100 * u.cpuUs) / (u.wallMs * 1000),
          wakeups_per_s: (u.voluntary * 1000) / u.wallMs,
          wakeups_per_session_min: perSessionMin(u.voluntary),
          allowed_per_session_min: perSessionMin(allowed),
          wakeups_vs_allowed: allowed ? u.voluntary / allowed : null,
          ws_pings_per_session_min: perSessionMin(d.wsPings),
          involuntary: u.involuntary,
          threads: threads(eng.pid),
        },
        extra: { usage: u, received: d, sessions: SESSIONS },
      };
    } finally {
      if (held) await held.close().catch((e) => ctx.log(`closing sessions: ${e.message}`));
      await eng.stop();
    }
  },
};
