// What the kernel says a process used: CPU time, resident memory, context switches. The bench reads
// these from /proc of the server under test (never from the client), before and after a window.
//
// CPU comes two ways: utime+stime of /proc/<pid>/stat (clock ticks: the figure the method quotes,
// 10 ms resolution at CLK_TCK 100, plenty over a window of seconds), and the scheduler's run time in
// nanoseconds from /proc/<pid>/task/*/schedstat, for windows where ticks are too coarse (an idle
// engine spends a few milliseconds a minute). Both count every thread. A contender made of several
// processes (nginx's master and worker) is measured over all of them: pass every pid.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { descendantsOf } from '../../tests/e2e/lib/proc.mjs';

export const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

const read = (p) => {
  try {
    return fs.readFileSync(p, 'utf8');
  } catch {
    return null;
  }
};
const tasks = (pid) => {
  try {
    return fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
};

/** A process and everything below it (nginx's workers, an engine's agents), pid first. */
export function treePids(pid) {
  return [pid, ...descendantsOf(pid)];
}

/** utime+stime of one process in clock ticks (all its threads, not its reaped children); null when gone. */
export function cpuTicks(pid) {
  const text = read(`/proc/${pid}/stat`);
  if (!text) return null;
  // Fields after the command name (which may hold spaces), counted from field 3 (state).
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}

/** Scheduler run time of one process in ns, summed over its threads. */
export function cpuNs(pid) {
  let ns = 0;
  for (const t of tasks(pid)) {
    const s = read(`/proc/${pid}/task/${t}/schedstat`);
    if (s) ns += Number(s.split(' ')[0]);
  }
  return ns;
}

/** Voluntary and involuntary context switches of one process, summed over its threads. */
export function ctxSwitches(pid) {
  let voluntary = 0;
  let involuntary = 0;
  for (const t of tasks(pid)) {
    const s = read(`/proc/${pid}/task/${t}/status`);
    if (!s) continue;
    voluntary += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(s)?.[1] ?? 0);
    involuntary += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(s)?.[1] ?? 0);
  }
  return { voluntary, involuntary };
}

/** VmRSS in kB, summed over `pids` (shared pages count once per process, as top shows them). */
export function rssKb(pids) {
  let kb = 0;
  for (const pid of [].concat(pids)) {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(read(`/proc/${pid}/status`) || '');
    if (m) kb += Number(m[1]);
  }
  return kb;
}

/**
 * The memory a process touches from now on, from the pages' accessed bits: clearTouched(pids) clears them
 * (/proc/<pid>/clear_refs, 1: all pages), touchedKb(pids) sums the Referenced kB of its private writable
 * mappings (heap, stacks, data: /proc/<pid>/smaps, `rw-p`), summed over `pids`. Only those: a shared
 * library's or the binary's code pages are marked referenced by any process that uses them too. A
 * count of pages, not of time: what a wakeup after a long sleep finds cold, the same at any hour.
 */
export function clearTouched(pids) {
  for (const pid of [].concat(pids)) {
    try {
      fs.writeFileSync(`/proc/${pid}/clear_refs`, '1');
    } catch {
      // gone, or not ours
    }
  }
}

export function touchedKb(pids) {
  let kb = 0;
  for (const pid of [].concat(pids)) {
    let privateWritable = false;
    for (const line of (read(`/proc/${pid}/smaps`) || '').split('\n')) {
      const vma = /^[0-9a-f]+-[0-9a-f]+ (\S+) /.exec(line);
      if (vma) privateWritable = vma[1] === 'rw-p';
      const m = privateWritable && /^Referenced:\s+(\d+) kB/.exec(line);
      if (m) kb += Number(m[1]);
    }
  }
  return kb;
}

/** Thread count of one process. */
export function threads(pid) {
  return tasks(pid).length;
}

/**
 * Start a measured window over `pids` (a number, an array, or a function returning the pids now).
 * stop() returns {cpuUs (from ticks), cpuNsUs (from schedstat, µs), wallMs, voluntary, involuntary}.
 */
export function usageWindow(pids) {
  const list = () => [].concat(typeof pids === 'function' ? pids() : pids);
  const take = () => {
    const ps = list();
    let ticks = 0;
    let ns = 0;
    let voluntary = 0;
    let involuntary = 0;
    for (const p of ps) {
      ticks += cpuTicks(p) ?? 0;
      ns += cpuNs(p);
      const c = ctxSwitches(p);
      voluntary += c.voluntary;
      involuntary += c.involuntary;
    }
    return { ticks, ns, voluntary, involuntary, t: performance.now() };
  };
  const a = take();
  return {
    stop() {
      const b = take();
      return {
        cpuUs: ((b.ticks - a.ticks) * 1e6) / CLK_TCK,
        cpuNsUs: (b.ns - a.ns) / 1000,
        wallMs: b.t - a.t,
        voluntary: b.voluntary - a.voluntary,
        involuntary: b.involuntary - a.involuntary,
      };
    },
  };
}

/**
 * Bytes an upstream listening on 127.0.0.1:`port` has written that its clients have not read yet, from
 * /proc/net/tcp: what waits in the upstream's sockets (tx_queue of the connections from that port:
 * sent and not yet taken by the other side, which a full receive buffer holds back) and in its
 * clients' sockets (rx_queue of the connections to that port). Loopback IPv4 only, where it listens.
 */
export function unreadFrom(port) {
  const text = read('/proc/net/tcp') || '';
  const at = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let sum = 0;
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);  // f[1] local, f[2] remote, f[4] tx_queue:rx_queue (hex)
    if (f.length < 5) continue;
    const [tx, rx] = f[4].split(':').map((h) => parseInt(h, 16));
    if (f[1] === at) sum += tx;
    else if (f[2] === at) sum += rx;
  }
  return sum;
}
