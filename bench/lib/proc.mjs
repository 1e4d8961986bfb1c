// Processes of the bench: start one pinned to a CPU, wait for its "listening on <port>" line, stop it.
// Pinning is the method's first rule: the server under test runs on CPU 0; a latency client runs on
// the same CPU (a wakeup on the other vCPU of this VM costs 60-120 µs and would be measured instead of
// the server), a throughput client on CPU 1 (so the two do not share one CPU's time).

import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import { descendantsOf } from '../../tests/e2e/lib/proc.mjs';

export const CPU = { server: 0, latencyClient: 0, throughputClient: 1, helper: 1 };

const live = new Set();
process.on('exit', () => {
  // Each one's descendants too: nginx's worker outlived its master's SIGKILL (found orphaned after
  // bench/hot-functions stopped a run of scenario 7).
  const pids = [...live].flatMap((p) => (p.exitCode === null && p.signalCode === null ? [p.pid, ...descendantsOf(p.pid)] : []));
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
});
// A driver stopped by a signal takes its contenders with it (the 'exit' handler above runs only on an exit).
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]]) process.on(signal, () => process.exit(code));

/** Calls `fn` with each line of a readable stream, as text without its newline. */
function eachLine(stream, fn) {
  let buf = '';
  stream.setEncoding('utf8').on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      fn(line);
    }
  });
}

/** A free loopback port now (for servers that must be told a port, like nginx). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Pin a running process and all its threads to `cpu` (for processes started by code we reuse). */
export function pin(pid, cpu) {
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

/**
 * Spawn `cmd args` under `taskset -c cpu` (so it runs pinned from its first instruction, and everything
 * it forks inherits the CPU). With `ready` (a RegExp with the port as group 1, default /listening on
 * (\d+)/), resolves once a stdout line matches; `ready: null` resolves at once (nginx says nothing).
 * Returns {proc, pid, port, lines, stderr, exited, stop()}.
 */
export async function spawnPinned(cmd, args = [], { cpu = CPU.server, env, cwd, ready = /listening on (\d+)/, timeoutMs = 15000 } = {}) {
  const proc = spawn('taskset', ['-c', String(cpu), cmd, ...args], {
    env: env || process.env, cwd, stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(proc);
  const h = { proc, pid: proc.pid, port: 0, lines: [], stderr: '', exitInfo: null };
  h.exited = new Promise((r) => proc.on('exit', (code, signal) => {
    live.delete(proc);
    h.exitInfo = { code, signal };
    r(h.exitInfo);
  }));
  proc.stderr.setEncoding('utf8').on('data', (d) => (h.stderr += d));
  let onLine = () => {};
  eachLine(proc.stdout, (line) => {
    h.lines.push(line);
    onLine(line);
  });
  h.stop = async (signal = 'SIGTERM') => {
    if (!h.exitInfo) {
      proc.kill(signal);
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await h.exited;
      clearTimeout(t);
    }
    return h.exitInfo;
  };
  if (!ready) return h;
  await new Promise((resolve, reject) => {
    const fail = (why) => reject(new Error(`${cmd} ${args.join(' ')}: ${why}\nstdout: ${h.lines.join('\n')}\nstderr: ${h.stderr}`));
    const timer = setTimeout(() => {
      h.stop('SIGKILL');
      fail(`no line matching ${ready} within ${timeoutMs} ms`);
    }, timeoutMs);
    const check = (line) => {
      const m = ready.exec(line);
      if (!m) return;
      h.port = Number(m[1]);
      clearTimeout(timer);
      resolve();
    };
    onLine = check;
    h.lines.forEach(check);
    h.exited.then((e) => {
      clearTimeout(timer);
      fail(`exited ${JSON.stringify(e)} before it was ready`);
    });
  });
  onLine = () => {};
  return h;
}

/** Run a command to completion, pinned; resolves {code, stdout, stderr}. */
export function runPinned(cmd, args, { cpu, env, timeoutMs = 600000 } = {}) {
  return new Promise((resolve, reject) => {
    const proc = spawn('taskset', ['-c', String(cpu), cmd, ...args], { env: env || process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(proc);
    let stdout = '';
    let stderr = '';
    proc.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    proc.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    proc.on('error', reject);
    proc.on('close', (code) => {
      clearTimeout(timer);
      live.delete(proc);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * A client that runs one trial per line: `cmd args` pinned to `cpu`, each line written to its stdin
 * answered by one line on its stdout (scenario 5's lean client). Returns {ask(line) → the answer line,
 * stop()}; a client that exits fails the trials waiting on it.
 */
export function spawnLineClient(cmd, args, { cpu }) {
  const proc = spawn('taskset', ['-c', String(cpu), cmd, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  live.add(proc);
  const waiting = [];
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  eachLine(proc.stdout, (line) => waiting.shift()?.resolve(line));
  const closed = new Promise((r) => proc.on('close', (code) => {
    live.delete(proc);
    for (const w of waiting.splice(0)) w.reject(new Error(`${cmd} exited (${code}) ${stderr}`));
    r();
  }));
  proc.stdin.on('error', () => {});  // an exited client: its trials fail above
  return {
    ask(line) {
      const answer = new Promise((resolve, reject) => waiting.push({ resolve, reject }));
      proc.stdin.write(`${line}\n`);
      return answer;
    },
    stop() {
      proc.stdin.end();
      return closed;
    },
  };
}
