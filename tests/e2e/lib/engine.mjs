// Engine processes for the leuria end-to-end tests: paths and constants, the child environment, LEURIA_HOME
// files, starting/stopping engines (with the sanitizer-report check on stop), one-shot CLI runs.
//
// Everything here talks to a real engine binary (LEURIA_BIN, default build/leuria).
// This module owns the set of live engines and the process-exit cleanup that kills them.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
// The binary every start spawns. `let`, so that an importer sees a change (ES modules bind live).
export let BIN = process.env.LEURIA_BIN || path.join(ROOT, 'build/leuria');
/**
 * Makes the engines started from now on run `bin` (bench/run.mjs --ab: a second binary's rounds,
 * between the first's). Returns the binary it replaced.
 */
export function useEngineBinary(bin) {
  const before = BIN;
  BIN = bin;
  return before;
}
export const VERSION = '0.1.0';
export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef-0123456789';

// Timings used unless a test says otherwise: short claim long-poll so tests stay fast.
export const DEFAULT_TIMINGS = { claimWaitMs: 300 };

const live = new Set();

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Environment for a child engine: the runner's environment without any LEURIA_* variable, plus `extra`. */
export function cleanEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('LEURIA_')) env[k] = v;
  for (const [k, v] of Object.entries(extra)) if (v !== undefined && v !== null) env[k] = String(v);
  return env;
}

export function timingsString(timings) {
  if (timings == null) return undefined;
  if (typeof timings === 'string') return timings;
  return Object.entries(timings).map(([k, v]) => `${k}=${v}`).join(',');
}

export async function makeHome() {
  return fsp.mkdtemp(path.join(os.tmpdir(), 'leuria-e2e-'));
}

function binExistsOrThrow() {
  if (!fs.existsSync(BIN) && BIN.includes('/')) {
    throw new Error(`engine binary not found at ${BIN} (build it with cmake --build build, or set LEURIA_BIN)`);
  }
}

function splitLines(stream, onLine) {
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    buf += chunk;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      onLine(buf.slice(0, i).replace(/\r$/, ''));
      buf = buf.slice(i + 1);
    }
  });
  stream.on('end', () => {
    if (buf.length) onLine(buf);
    buf = '';
  });
}

function matches(matcher, line) {
  if (typeof matcher === 'function') return matcher(line);
  return matcher.test(line);
}

export function tryJson(s) {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

/**
 * Start an engine and wait until it announces its port.
 *
 * opts:
 *   args     argv for the engine (default ['--port','0','--no-open'])
 *   app      true: add --app and LEURIA_ADMIN_TOKEN (default token ADMIN_TOKEN)
 *   devPairing true: add --dev-pairing and the admin token
 *   adminToken override the admin token (null: don't set it)
 *   timings  object or string for LEURIA_TEST_TIMINGS (merged over DEFAULT_TIMINGS when an object)
 *   home     existing LEURIA_HOME to use (not deleted on stop); default: a fresh mkdtemp dir, deleted on stop
 *   files    {name: content} written into LEURIA_HOME (0600) before the engine starts; an object content is
 *            JSON-encoded (e.g. {"config.json": {...}, "providers.json": {...}})
 *   env      extra env variables
 *   stderrToFile true: the engine's stderr goes to a file in its home (read into stderrLines at stop and
 *            into error messages), not to a pipe this process reads: the benchmarks' engines, whose log
 *            lines would otherwise wake the driver on the CPU the model server runs on (bench/lib/contenders.mjs)
 *   readyTimeoutMs  default 10000
 */
export async function startEngine(opts = {}) {
  binExistsOrThrow();
  let args = opts.args ? [...opts.args] : ['--port', '0', '--no-open'];
  if (opts.app) args.unshift('--app');
  if (opts.devPairing) args.unshift('--dev-pairing');
  const ownHome = !opts.home;
  const home = opts.home || (await makeHome());
  if (opts.files) await writeHomeFiles(home, opts.files);
  const timings =
    typeof opts.timings === 'string' ? opts.timings : timingsString({ ...DEFAULT_TIMINGS, ...(opts.timings || {}) });
  const envExtra = { LEURIA_HOME: home, LEURIA_TEST_TIMINGS: timings, ...(opts.env || {}) };
  if ((opts.app || opts.devPairing) && opts.adminToken !== null) envExtra.LEURIA_ADMIN_TOKEN = opts.adminToken || ADMIN_TOKEN;
  const env = cleanEnv(envExtra);

  const stderrPath = opts.stderrToFile ? path.join(home, 'engine-stderr.log') : null;
  const stderrFd = stderrPath ? fs.openSync(stderrPath, 'a', 0o600) : null;
  const proc = spawn(BIN, args, { env, stdio: ['ignore', 'pipe', stderrFd ?? 'pipe'] });
  if (stderrFd !== null) fs.closeSync(stderrFd);
  const lines = [];
  const stderrLines = [];
  /** With stderrToFile: stderrLines brought up to date from the file (a no-op otherwise). */
  const readStderr = () => {
    if (!stderrPath) return stderrLines;
    let text = '';
    try {
      text = fs.readFileSync(stderrPath, 'utf8');
    } catch {}
    stderrLines.length = 0;
    for (const l of text.split('\n')) if (l) stderrLines.push(l);
    return stderrLines;
  };
  const waiters = new Set();
  let exitInfo = null;
  const exited = new Promise((resolve) => {
    proc.on('exit', (code, signal) => {
      exitInfo = { code, signal };
      for (const w of waiters) w.onExit();
      resolve(exitInfo);
    });
  });
  proc.on('error', (err) => {
    exitInfo = { code: null, signal: null, error: err };
    for (const w of waiters) w.onExit();
  });

  const onLine = (line) => {
    lines.push(line);
    for (const w of waiters) w.check();
  };
  splitLines(proc.stdout, onLine);
  if (!stderrPath) splitLines(proc.stderr, (l) => stderrLines.push(l));
  // Node may report the exit before it has read the pipe's last lines (the stop's log line, a
  // sanitizer's report): stop() waits for the pipe to close too. Agents never hold the engine's stderr.
  const stderrClosed = stderrPath ? Promise.resolve() : new Promise((resolve) => proc.stderr.once('close', resolve));

  /** Wait for a stdout line matching `matcher` at index >= from (default 0). Resolves with the line. */
  function waitForLine(matcher, timeoutMs = 5000, { from = 0 } = {}) {
    return new Promise((resolve, reject) => {
      const w = {
        check() {
          for (let i = from; i < lines.length; i++) {
            if (matches(matcher, lines[i])) {
              done();
              resolve(lines[i]);
              return true;
            }
          }
          return false;
        },
        onExit() {
          // give a final chance to stdout lines still being flushed
          setTimeout(() => {
            if (waiters.has(w) && !w.check()) {
              done();
              reject(new Error(`engine exited (${JSON.stringify(exitInfo)}) before a line matching ${matcher}; stdout:\n${lines.join('\n')}\nstderr:\n${readStderr().join('\n')}`));
            }
          }, 50);
        },
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for a stdout line matching ${matcher}; stdout:\n${lines.join('\n')}\nstderr:\n${readStderr().join('\n')}`));
      }, timeoutMs);
      function done() {
        clearTimeout(timer);
        waiters.delete(w);
      }
      waiters.add(w);
      if (!w.check() && exitInfo) w.onExit();
    });
  }

  /** stdout lines parsed as JSON (non-JSON lines skipped). */
  function jsonLines(from = 0) {
    return lines.slice(from).map(tryJson).filter((x) => x && typeof x === 'object');
  }

  function waitForJson(pred, timeoutMs = 5000, opts2 = {}) {
    return waitForLine((l) => {
      const j = tryJson(l);
      return j && typeof j === 'object' && pred(j);
    }, timeoutMs, opts2).then((l) => JSON.parse(l));
  }

  let stopped = false;
  async function stop() {
    if (stopped) return exited;
    stopped = true;
    live.delete(engine);
    if (!exitInfo) {
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
    }
    await Promise.race([stderrClosed, new Promise((r) => setTimeout(r, 2000).unref())]);
    readStderr();
    if (ownHome) await fsp.rm(home, { recursive: true, force: true }).catch(() => {});
    // Under the ASan + UBSan build, any report on stderr fails the suite, and a clean stop (SIGTERM)
    // must exit 0.
    const report = stderrLines.find((l) => SANITIZER_REPORT.test(l));
    if (report) throw new Error(`sanitizer report from the engine:\n${stderrLines.join('\n')}`);
    if (exitInfo && exitInfo.signal === 'SIGKILL') throw new Error('the engine did not stop within 3 s of SIGTERM');
    return exitInfo;
  }

  const engine = {
    proc, home, lines, stderrLines, args, env, exited,
    port: 0, base: '',
    get exitInfo() { return exitInfo; },
    waitForLine, waitForJson, jsonLines, stop,
  };
  live.add(engine);

  const isApp = args.includes('--app') || args.includes('--dev-pairing');
  try {
    const first = await waitForLine(
      (l) => /^Leuria engine listening on http:\/\/127\.0\.0\.1:\d+$/.test(l) || tryJson(l)?.type === 'ready',
      opts.readyTimeoutMs || 10000,
    );
    const j = tryJson(first);
    engine.port = j ? j.port : Number(/:(\d+)$/.exec(first)[1]);
    assert.ok(Number.isInteger(engine.port) && engine.port > 0, `bad port in ready line: ${first}`);
    assert.equal(lines[0], first, `the ready line must be the first stdout line (mode ${isApp ? 'app' : 'cli'}); stdout:\n${lines.join('\n')}`);
  } catch (e) {
    await stop();
    throw e;
  }
  engine.base = `http://127.0.0.1:${engine.port}`;
  engine.ownOrigin = engine.base;
  return engine;
}

const SANITIZER_REPORT = /AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:/;

// As many at a time as the machine has CPUs (two where CI runs). Stopped all at once, a suite's engines (two dozen
// ASan binaries in acp-backend.test.mjs, each ending its agents, then checked for leaks at exit) shared two
// CPUs, and one of them once missed the 3 s each is given to stop: the deadline measured the machine, not
// the engine. Every engine is stopped whatever another one's stop says; the first failure is thrown.
/** Stop every engine started by this process that is still running. Use in `after` hooks. */
export async function stopAll() {
  const queue = [...live];
  const errors = [];
  const worker = async () => {
    for (let e = queue.shift(); e; e = queue.shift()) {
      try {
        await e.stop();
      } catch (err) {
        errors.push(err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, os.availableParallelism()) }, worker));
  if (errors.length) throw errors[0];
}

process.on('exit', () => {
  for (const e of live) {
    try {
      e.proc.kill('SIGKILL');
    } catch {}
  }
});

/**
 * Run the binary to completion (one-shot CLI commands, or an engine expected to fail).
 * Returns {code, signal, stdout, stderr, timedOut, ms}.
 */
export async function runCli(args, { home, env = {}, timeoutMs = 10000, noHomeEnv = false } = {}) {
  binExistsOrThrow();
  const extra = { ...env };
  if (!noHomeEnv) extra.LEURIA_HOME = home || (await makeHome());
  const t0 = Date.now();
  const proc = spawn(BIN, args, { env: cleanEnv(extra), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
  proc.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    proc.kill('SIGKILL');
  }, timeoutMs);
  const [code, signal] = await new Promise((resolve, reject) => {
    proc.on('error', reject);
    proc.on('close', (c, s) => resolve([c, s]));
  });
  clearTimeout(timer);
  if (!home && !noHomeEnv) await fsp.rm(extra.LEURIA_HOME, { recursive: true, force: true }).catch(() => {});
  return { code, signal, stdout, stderr, timedOut, ms: Date.now() - t0 };
}

/** Write {name: content} into a LEURIA_HOME (made 0700 if missing); objects are JSON-encoded, files are 0600. */
export async function writeHomeFiles(home, files) {
  await fsp.mkdir(home, { recursive: true, mode: 0o700 });
  for (const [name, content] of Object.entries(files)) {
    const text = typeof content === 'string' || Buffer.isBuffer(content) ? content : JSON.stringify(content, null, 2);
    await fsp.writeFile(path.join(home, name), text, { mode: 0o600 });
  }
}
