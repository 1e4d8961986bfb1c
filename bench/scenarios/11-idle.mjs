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
//   touched    the private memory (heap, stacks, data) the engine touched during the window, in KB,
//              from the pages' accessed bits (/proc/<pid>/clear_refs at its start, the Referenced kB
//              of its rw-p mappings in smaps at its end; code pages are left out, as any process that
//              shares them marks them too): the pages each ping slot finds cold. On a VM a cold
//              page's first touch after an idle spell costs from a fraction of a µs to several, by the
//              hour; the count is the same at every hour, so it shows what the engine's layout costs
//              where the CPU figure cannot.
// Beside it, the idle floor (bench/floors/idle.c): a C program that keeps the same 100 channels and 100
// streams alive and does nothing else: the same ping, pong and keep-alive on each, on the engine's 1 s
// grid, no framing or parsing. What it spends is what keeping those connections costs on this machine.

import net from 'node:net';
import { sleep } from '../../tests/e2e/lib/engine.mjs';
import { holdSessions, SESSIONS_PER_ORIGIN } from '../../tests/e2e/lib/load.mjs';
import { startFloorIdle, startLoadEngine } from '../lib/contenders.mjs';
import { clearTouched, threads, touchedKb, usageWindow } from '../lib/procfs.mjs';

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

/**
 * The idle floor's peers, held as the engine's pages are: SESSIONS channels, each answering a ping with
 * a pong, and SESSIONS streams, each counting keep-alives. The same shape as holdSessions' answer.
 */
async function holdFloorPeers(port) {
  const socks = [];
  const counts = { appPings: 0, keepAlives: 0 };
  const open = (kind) => new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.setNoDelay(true);
    s.once('error', reject);
    s.once('connect', () => {
      s.write(kind);
      resolve(s);
    });
    s.on('data', (d) => {
      if (kind === 'c') {
        counts.appPings += String(d).split('{"type":"ping"}').length - 1;
        s.write('{"type":"pong"}');
      } else {
        counts.keepAlives += String(d).split(':\n\n').length - 1;
      }
    });
  });
  for (let i = 0; i < SESSIONS; i++) {
    socks.push(await open('c'));
    socks.push(await open('s'));
  }
  return {
    received: () => ({ appPings: counts.appPings, wsPings: 0, keepAlives: counts.keepAlives }),
    open: () => socks.filter((s) => !s.destroyed).length,
    close: () => socks.forEach((s) => s.destroy()),
  };
}

/** What the engine's pages have received so far, holdFloorPeers' way. */
function enginePeers(held) {
  const wsPings = { n: 0 };
  for (const s of held.sessions) s.page.sock.ws.on('ping', () => wsPings.n++);
  return {
    received: () => received(held, wsPings),
    open: () => held.openStreams() + held.openChannels(),
  };
}

export default {
  id: '11',
  title: 'Idle: 100 sessions for 60 s',
  contenders: ['engine', 'floor'],
  figures: {
    cpu_pct: { label: 'CPU (schedstat)', unit: '%', better: 'lower' },
    cpu_pct_ticks: { label: 'CPU (utime+stime)', unit: '%', better: 'lower' },
    wakeups_per_s: { label: 'wakeups per second', unit: '/s', better: 'lower' },
    wakeups_per_session_min: { label: 'wakeups per session per minute', unit: '', better: 'lower' },
    allowed_per_session_min: { label: 'allowed by pings, per session per minute', unit: '', better: 'lower' },
    wakeups_vs_allowed: { label: 'wakeups / allowed', unit: '×', better: 'lower' },
    ws_pings_per_session_min: { label: 'WebSocket ping frames per session per minute', unit: '', better: 'lower' },
    touched_kb: { label: 'memory touched while idle', unit: 'KB', better: 'lower' },
    involuntary: { label: 'involuntary switches', unit: '', better: 'lower' },
    threads: { label: 'engine threads', unit: '', better: 'lower' },
  },
  targets: [
    { figure: 'cpu_pct', contender: 'engine', max: 0.05, text: 'CPU ≤ 0.05% while idle' },
    { figure: 'wakeups_vs_allowed', contender: 'engine', max: 1, text: 'no timers beyond the spec’s pings (wakeups ≤ pings sent + pongs read + keep-alives)' },
  ],
  notes: 'The pages live in the bench process (CPU 1); their sessions are prepared, not approved: no AI runs. ' +
    'The floor (bench/floors/idle.c) keeps the same connections alive with the same bytes on the same grid.',

  async setup(ctx) {
    return { windowMs: ctx.quick ? 20000 : 60000 };
  },

  async round(contender, ctx) {
    const server = contender === 'engine'
      ? await startLoadEngine({ sites: Math.ceil(SESSIONS / SESSIONS_PER_ORIGIN) })
      : await startFloorIdle();
    let held;
    let peers;
    try {
      if (contender === 'engine') {
        held = await holdSessions(server, { streams: SESSIONS, channels: SESSIONS });
        peers = enginePeers(held);
      } else {
        held = await holdFloorPeers(server.port);
        peers = held;
      }
      await sleep(2000);  // the setup's last answers and acks are not idleness
      const r0 = peers.received();
      const pids = server.pids();
      const w = usageWindow(pids);
      clearTouched(pids);
      await sleep(ctx.state.windowMs);
      const touched = touchedKb(pids);
      const u = w.stop();
      const r1 = peers.received();
      if (peers.open() !== 2 * SESSIONS) {
        throw new Error(`connections dropped while idle: ${peers.open()} of ${2 * SESSIONS} open`);
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
          touched_kb: touched,
          involuntary: u.involuntary,
          threads: threads(server.pid),
        },
        extra: { usage: u, received: d, sessions: SESSIONS },
      };
    } finally {
      if (held) await Promise.resolve(held.close()).catch((e) => ctx.log(`closing sessions: ${e.message}`));
      await server.stop();
    }
  },
};
