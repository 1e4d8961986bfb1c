// Crashes and the disk, for the leuria end-to-end tests: a seeded random source, killing an engine
// with SIGKILL, what a LEURIA_HOME holds (temp files, strict JSON), the engine's listening sockets
// from /proc, and strace attached to a running process to inject disk faults.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BIN, cleanEnv } from './engine.mjs';

/** Whether LEURIA_BIN is the ASan + UBSan build (slower to start: tests do fewer rounds). */
export const SANITIZED = /asan/i.test(BIN);

/** A seed from LEURIA_CRASH_SEED, else a fresh one; print it so a failure can be replayed. */
export function crashSeed() {
  const fromEnv = Number(process.env.LEURIA_CRASH_SEED);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : 1 + Math.floor(Math.random() * 0x7ffffffe);
}

/** mulberry32: a small seeded generator; returns () => a number in [0, 1). */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * SIGKILL an engine started with startEngine and wait for it to be gone. The engine is then
 * forgotten by stopAll; a sanitizer report it printed before dying still fails the test.
 */
export async function killHard(eng) {
  if (!eng.exitInfo) eng.proc.kill('SIGKILL');
  await eng.exited;
  await eng.stop().catch((e) => {
    if (!/did not stop within/.test(e.message)) throw e;
  });
}

/** Temp files a writer left in `home` (name.tmp, name.tmp-<pid>). */
export function tempFiles(home) {
  return fs.readdirSync(home).filter((n) => /\.tmp(-\d+)?$/.test(n));
}

/** The parsed JSON file in `home`, null when missing; throws with the text when it doesn't parse (torn). */
export function readStrictJson(home, name) {
  let text;
  try {
    text = fs.readFileSync(path.join(home, name), 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw e;
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${name} does not parse (${e.message}): ${JSON.stringify(text)}`);
  }
}

// /proc/net/tcp addresses are hex in host byte order per 32-bit word.
function decodeAddr(hex) {
  const [addr, port] = hex.split(':');
  const words = addr.match(/.{8}/g).map((w) => w.match(/../g).reverse().join(''));
  const bytes = words.join('').match(/../g).map((b) => parseInt(b, 16));
  const ip = bytes.length === 4 ? bytes.join('.') : words.join('').match(/.{4}/g).join(':');
  return { ip, port: parseInt(port, 16) };
}

/** Every listening TCP socket of process `pid`: [{family: 'tcp'|'tcp6', ip, port}] (from /proc). */
export function listeningSockets(pid) {
  const inodes = new Set();
  for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) {
    let link = '';
    try {
      link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue;
    }
    const m = /^socket:\[(\d+)\]$/.exec(link);
    if (m) inodes.add(m[1]);
  }
  const out = [];
  for (const family of ['tcp', 'tcp6']) {
    // The process's own network namespace.
    const rows = fs.readFileSync(`/proc/${pid}/net/${family}`, 'utf8').trim().split('\n').slice(1);
    for (const row of rows) {
      const f = row.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      const [, local, , state, , , , , , inode] = f;
      if (state === '0A' && inodes.has(inode)) out.push({ family, ...decodeAddr(local) });
    }
  }
  return out;
}

/**
 * Why strace can't be used here (null when `strace -f true` works, i.e. ptrace is allowed), and, given
 * `syscalls`, also when this strace does not know one of them by name (e.g. ['pidfd_open'], Linux 5.3's).
 */
export function straceUnavailable(syscalls = []) {
  const filter = syscalls.length ? ['-e', `trace=${syscalls.join(',')}`] : [];
  const r = spawnSync('strace', ['-f', ...filter, '-o', '/dev/null', 'true'], { encoding: 'utf8' });
  if (r.error) return `strace is not installed (${r.error.code}); scripts/lib.sh lists it in TEST_PACKAGES`;
  if (r.status !== 0) {
    // Asked again without the names: is it ptrace that is refused, or a name that is unknown?
    const known = syscalls.length > 0 && spawnSync('strace', ['-f', '-o', '/dev/null', 'true']).status === 0;
    return known ? `this strace does not know ${syscalls.join(', ')}: ${r.stderr.trim()}`
      : `strace cannot trace here (ptrace refused?): ${r.stderr.trim()}`;
  }
  return null;
}

/**
 * Attach strace to a running process (all its threads) with `args` (e.g. ['-P', file, '-e',
 * 'inject=fsync:error=EIO']), once it reports being attached. detach() stops strace, which
 * leaves the process running; log() is what strace traced.
 */
export async function straceAttach(pid, args, { timeoutMs = 10000 } = {}) {
  const logFile = path.join(fs.mkdtempSync('/tmp/leuria-strace-'), 'trace.log');
  const proc = spawn('strace', ['-p', String(pid), '-f', '-qq', '-o', logFile, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const exited = new Promise((r) => proc.on('exit', r));
  // With -qq strace says nothing on attach: the log file appearing, and the threads' status
  // showing a tracer, mean it is in place.
  const end = Date.now() + timeoutMs;
  for (;;) {
    const traced = fs.readdirSync(`/proc/${pid}/task`).every((t) => {
      const status = fs.readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8');
      return /^TracerPid:\s+[1-9]/m.test(status);
    });
    if (traced && fs.existsSync(logFile)) break;
    if (proc.exitCode !== null || Date.now() > end) {
      proc.kill('SIGKILL');
      throw new Error(`strace did not attach to ${pid}: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    log: () => fs.readFileSync(logFile, 'utf8'),
    async detach() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
      fs.rmSync(path.dirname(logFile), { recursive: true, force: true });
    },
  };
}

/**
 * Run a one-shot leuria command under strace (`straceArgs`, e.g. ['-P', file, '-e', 'inject=...']).
 * Returns {code, stdout, stderr, trace}.
 */
export async function runCliTraced(straceArgs, cliArgs, { home, timeoutMs = 30000 } = {}) {
  const dir = fs.mkdtempSync('/tmp/leuria-strace-');
  const logFile = path.join(dir, 'trace.log');
  // LeakSanitizer can't run under ptrace (it says so and exits); the rest of ASan and UBSan can.
  const asan = [...(process.env.ASAN_OPTIONS || '').split(':').filter((o) => o && !o.startsWith('detect_leaks=')), 'detect_leaks=0'];
  const proc = spawn('strace', ['-f', '-qq', '-o', logFile, ...straceArgs, '--', BIN, ...cliArgs], {
    env: cleanEnv({ LEURIA_HOME: home, ASAN_OPTIONS: asan.join(':') }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  proc.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
  const code = await new Promise((r) => proc.on('close', r));
  clearTimeout(timer);
  const trace = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '';
  fs.rmSync(dir, { recursive: true, force: true });
  return { code, stdout, stderr, trace };
}
