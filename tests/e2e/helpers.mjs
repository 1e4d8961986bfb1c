// Shared helpers for the leuria end-to-end tests.
//
// Everything here talks to a real engine binary (LEURIA_BIN, default build/leuria) over real sockets.
// HTTP goes through node:http `request` (not fetch) so that tests can set any header, Host and Origin included.

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = process.env.LEURIA_BIN || path.join(ROOT, 'build/leuria');
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

  const proc = spawn(BIN, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = [];
  const stderrLines = [];
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
  splitLines(proc.stderr, (l) => stderrLines.push(l));

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
              reject(new Error(`engine exited (${JSON.stringify(exitInfo)}) before a line matching ${matcher}; stdout:\n${lines.join('\n')}\nstderr:\n${stderrLines.join('\n')}`));
            }
          }, 50);
        },
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for a stdout line matching ${matcher}; stdout:\n${lines.join('\n')}\nstderr:\n${stderrLines.join('\n')}`));
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

/** Stop every engine started by this process that is still running. Use in `after` hooks. */
export async function stopAll() {
  await Promise.all([...live].map((e) => e.stop()));
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

// ---------------------------------------------------------------- HTTP

function portOf(target) {
  return typeof target === 'number' ? target : target.port;
}

/**
 * Raw HTTP request with full control over headers.
 *   request(engineOrPort, { method='GET', path='/', headers={}, body, host, noHost, timeoutMs=8000 })
 * `headers.Host` (or `host`) overrides the default Host `127.0.0.1:<port>`; `noHost: true` sends none.
 * `body`: string/Buffer sent as is; any other value is JSON-encoded with Content-Type application/json.
 * Resolves {status, headers (lower-case keys), rawHeaders, body (string), json (parsed or undefined), ms}.
 */
export function request(target, { method = 'GET', path: p = '/', headers = {}, body, host, noHost = false, timeoutMs = 8000 } = {}) {
  const port = portOf(target);
  const h = {};
  let hasHost = false;
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || v === null) continue;
    if (k.toLowerCase() === 'host') hasHost = true;
    h[k] = v;
  }
  if (!hasHost && !noHost) h.Host = host || `127.0.0.1:${port}`;
  let payload;
  if (body !== undefined) {
    if (typeof body === 'string' || Buffer.isBuffer(body)) payload = body;
    else {
      payload = JSON.stringify(body);
      if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['Content-Type'] = 'application/json';
    }
  }
  if (payload !== undefined) h['Content-Length'] = Buffer.byteLength(payload);
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: p, headers: h, agent: false, setHost: false },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode, headers: res.headers, rawHeaders: res.rawHeaders, body: text, json: tryJson(text), ms: Date.now() - t0 });
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new Error(`request ${method} ${p} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** A request from a web page: sets Origin, and Authorization when `token` is given. */
export function web(target, origin, p, { method, body, token, headers = {}, timeoutMs } = {}) {
  const h = { Origin: origin, ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  return request(target, { method: method || (body !== undefined ? 'POST' : 'GET'), path: p, headers: h, body, timeoutMs });
}

/** A request from a local process (no Origin). */
export function local(target, p, { method, body, token, headers = {}, timeoutMs } = {}) {
  const h = { ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  return request(target, { method: method || (body !== undefined ? 'POST' : 'GET'), path: p, headers: h, body, timeoutMs });
}

/** A request from the engine's own page (Origin http://127.0.0.1:<port>). */
export function own(engine, p, opts = {}) {
  return web(engine, `http://127.0.0.1:${engine.port}`, p, opts);
}

/** Admin API call (app mode). */
export function admin(engine, p, { method, body, token = ADMIN_TOKEN, headers = {}, timeoutMs } = {}) {
  const h = { ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  return request(engine, { method: method || (body !== undefined ? 'POST' : 'GET'), path: p, headers: h, body, timeoutMs });
}

// ---------------------------------------------------------------- raw sockets

function parseRawResponse(buf, closed) {
  const sep = buf.indexOf('\r\n\r\n');
  if (sep < 0) return null;
  const head = buf.subarray(0, sep).toString('latin1');
  const [statusLine, ...hl] = head.split('\r\n');
  const m = /^HTTP\/\d\.\d (\d{3})/.exec(statusLine);
  if (!m) throw new Error(`bad status line: ${JSON.stringify(statusLine)}`);
  const headers = {};
  for (const l of hl) {
    const i = l.indexOf(':');
    if (i < 0) continue;
    const k = l.slice(0, i).trim().toLowerCase();
    const v = l.slice(i + 1).trim();
    headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
  }
  let rest = buf.subarray(sep + 4);
  let body;
  if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    if (rest.length < n) return null;
    body = rest.subarray(0, n);
  } else if (/chunked/i.test(headers['transfer-encoding'] || '')) {
    const parts = [];
    let off = 0;
    for (;;) {
      const e = rest.indexOf('\r\n', off);
      if (e < 0) return null;
      const size = parseInt(rest.subarray(off, e).toString('latin1'), 16);
      if (Number.isNaN(size)) throw new Error('bad chunk size');
      if (size === 0) break;
      if (rest.length < e + 2 + size + 2) return null;
      parts.push(rest.subarray(e + 2, e + 2 + size));
      off = e + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  } else if (Number(m[1]) === 204 || Number(m[1]) === 304) {
    body = Buffer.alloc(0);
  } else {
    if (!closed) return null;
    body = rest;
  }
  const text = body.toString('utf8');
  return { status: Number(m[1]), statusLine, headers, body: text, json: tryJson(text) };
}

/**
 * Send arbitrary bytes on a fresh TCP connection and read one HTTP response.
 * Resolves {status, statusLine, headers, body, json, raw, ms} as soon as a complete response has arrived,
 * or rejects on timeout / if the connection closes without a response.
 */
export function rawHttp(target, data, { timeoutMs = 5000 } = {}) {
  const port = portOf(target);
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    let settled = false;
    const finish = (err, res) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve({ ...res, raw: buf.toString('latin1'), ms: Date.now() - t0 });
    };
    const tryParse = (closed) => {
      try {
        const r = parseRawResponse(buf, closed);
        if (r) finish(null, r);
        else if (closed) finish(new Error(`connection closed without a complete response; got ${JSON.stringify(buf.toString('latin1').slice(0, 500))}`));
      } catch (e) {
        finish(e);
      }
    };
    const timer = setTimeout(() => finish(new Error(`raw request timed out after ${timeoutMs} ms; got ${JSON.stringify(buf.toString('latin1').slice(0, 500))}`)), timeoutMs);
    sock.on('connect', () => sock.write(data));
    sock.on('data', (c) => {
      buf = Buffer.concat([buf, c]);
      tryParse(false);
    });
    sock.on('end', () => tryParse(true));
    sock.on('close', () => tryParse(true));
    sock.on('error', (e) => {
      // a server may reset after answering early (413/431): keep what we have
      if (buf.length) tryParse(true);
      else finish(e);
    });
  });
}

/**
 * Send arbitrary bytes and collect everything the server sends until it closes the connection,
 * `untilMatch` (a RegExp on the latin1 text received so far) matches, or `timeoutMs` passes.
 * Resolves {text, closed, timedOut, error}.
 */
export function rawSend(target, data, { timeoutMs = 3000, untilMatch } = {}) {
  const port = portOf(target);
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (extra) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ text: buf.toString('latin1'), closed: false, timedOut: false, ...extra });
    };
    const timer = setTimeout(() => finish({ timedOut: true }), timeoutMs);
    sock.on('connect', () => {
      for (const part of Array.isArray(data) ? data : [data]) sock.write(part);
    });
    sock.on('data', (c) => {
      buf = Buffer.concat([buf, c]);
      if (untilMatch && untilMatch.test(buf.toString('latin1'))) finish({});
    });
    sock.on('close', () => finish({ closed: true }));
    sock.on('error', (e) => finish({ closed: true, error: e.code || String(e) }));
  });
}

// ---------------------------------------------------------------- assertions & utils

export function nonce(bytes = 24) {
  return crypto.randomBytes(bytes).toString('base64url');
}

export function sha256hex(s) {
  return crypto.createHash('sha256').update(s).digest('hex');
}

let originCounter = 0;
/** A fresh web origin for this test run, e.g. https://t3-ab12.example */
export function freshOrigin(prefix = 't') {
  return `https://${prefix}${++originCounter}-${crypto.randomBytes(3).toString('hex')}.example`;
}

export const TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;
export const REQUEST_ID_RE = /^[A-Za-z0-9_-]{24}$/;

export function assertJsonType(res) {
  assert.match(res.headers['content-type'] || '', /^application\/json\b/i, `Content-Type of ${res.status} response should be application/json`);
}

/** Assert an error response {error, code?} with status (and message / code when given). */
export function assertError(res, status, { error, code } = {}) {
  const ctx = `response: ${res.status} ${res.body}`;
  assert.equal(res.status, status, ctx);
  assertJsonType(res);
  assert.ok(res.json && typeof res.json === 'object' && !Array.isArray(res.json), `error body must be a JSON object; ${ctx}`);
  assert.equal(typeof res.json.error, 'string', `error must be a string; ${ctx}`);
  assert.ok(res.json.error.length > 0, ctx);
  for (const k of Object.keys(res.json)) assert.ok(k === 'error' || k === 'code', `unexpected key ${k} in error body; ${ctx}`);
  if (res.json.code !== undefined) assert.equal(typeof res.json.code, 'string', ctx);
  if (error instanceof RegExp) assert.match(res.json.error, error, ctx);
  else if (error !== undefined) assert.equal(res.json.error, error, ctx);
  if (code !== undefined) assert.equal(res.json.code, code, ctx);
}

export function accessControlHeaders(res) {
  return Object.keys(res.headers).filter((k) => k.startsWith('access-control-'));
}

/** Silence: 403, empty body, no Access-Control-* headers. */
export function assertSilent(res, what = '') {
  const ctx = `${what} response: ${res.status} ${JSON.stringify(res.headers)} ${JSON.stringify(res.body)}`;
  assert.equal(res.status, 403, ctx);
  assert.equal(res.body, '', `silent response must have an empty body; ${ctx}`);
  assert.deepEqual(accessControlHeaders(res), [], `silent response must carry no Access-Control-* headers; ${ctx}`);
}

export function assertCors(res, origin) {
  const ctx = `response: ${res.status} ${JSON.stringify(res.headers)}`;
  assert.equal(res.headers['access-control-allow-origin'], origin, ctx);
  assert.match(res.headers.vary || '', /\bOrigin\b/i, `Vary must include Origin; ${ctx}`);
  assert.equal(res.headers['access-control-allow-private-network'], 'true', ctx);
}

/** Poll `fn` until it returns a truthy value or `timeoutMs` passes; returns the last value. */
export async function poll(fn, { timeoutMs = 3000, intervalMs = 100 } = {}) {
  const end = Date.now() + timeoutMs;
  let v;
  for (;;) {
    v = await fn();
    if (v || Date.now() >= end) return v;
    await sleep(intervalMs);
  }
}

/** A port that was just free: bind port 0, note the port, close. */
export async function closedPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** A TCP server occupying a port on 127.0.0.1. Returns {port, close()}. */
export async function busyPort() {
  const srv = net.createServer((s) => s.destroy());
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { port: srv.address().port, close: () => new Promise((r) => srv.close(r)) };
}

export const APPROVE_RE = /Approve or deny at http:\/\/127\.0\.0\.1:(\d+)\/connect\/([A-Za-z0-9_-]+)$/;

/** Claim from a web origin (CLI or app mode). */
export function claim(engine, origin, body, opts = {}) {
  return web(engine, origin, '/connect/claim', { method: 'POST', body, timeoutMs: 30000, ...opts });
}

/**
 * CLI mode: start a claim and return {requestId, claimPromise, from} once the engine printed the approval line.
 */
export async function startCliClaim(engine, origin, body) {
  const from = engine.lines.length;
  const claimPromise = claim(engine, origin, body);
  claimPromise.catch(() => {});
  const line = await engine.waitForLine(APPROVE_RE, 5000, { from });
  const m = APPROVE_RE.exec(line);
  assert.equal(Number(m[1]), engine.port, `approval line names the wrong port: ${line}`);
  return { requestId: m[2], claimPromise, from };
}

/** Keep claiming with the same nonce while the answer is pending; returns the first non-pending response. */
export async function claimUntilDecided(engine, origin, body, first, { maxMs = 10000 } = {}) {
  const end = Date.now() + maxMs;
  let res = first ? await first : await claim(engine, origin, body);
  while (res.status === 200 && res.json?.status === 'pending' && Date.now() < end) res = await claim(engine, origin, body);
  return res;
}

/** CLI mode: pair `origin` end to end (claim, decide allow from the engine's page, collect). Returns {token, requestId, nonce}. */
export async function pairCli(engine, origin, { app, needs, nonce: n = nonce() } = {}) {
  const body = { nonce: n };
  if (app !== undefined) body.app = app;
  if (needs !== undefined) body.needs = needs;
  const { requestId, claimPromise } = await startCliClaim(engine, origin, body);
  const d = await own(engine, `/connect/${requestId}/decide`, { body: { allow: true } });
  assert.equal(d.status, 200, `decide: ${d.status} ${d.body}`);
  const res = await claimUntilDecided(engine, origin, body, claimPromise);
  assert.equal(res.status, 200, `claim after allow: ${res.status} ${res.body}`);
  assert.equal(res.json?.status, 'allowed', `claim after allow: ${res.body}`);
  assert.match(res.json.token, TOKEN_RE);
  return { token: res.json.token, requestId, nonce: n };
}

/** App mode: link, decide through the admin API, collect. Returns {token, requestId, nonce}. */
export async function pairApp(engine, origin, { app, needs, nonce: n = nonce(), allow = true } = {}) {
  const linkBody = { origin, nonce: n };
  if (app !== undefined) linkBody.app = app;
  if (needs !== undefined) linkBody.needs = needs;
  const l = await admin(engine, '/admin/pairing/link', { body: linkBody });
  assert.equal(l.status, 201, `link: ${l.status} ${l.body}`);
  const { requestId } = l.json;
  const d = await admin(engine, `/admin/pairing/${requestId}`, { body: { allow } });
  assert.equal(d.status, 200, `admin decide: ${d.status} ${d.body}`);
  const res = await claimUntilDecided(engine, origin, { nonce: n });
  assert.equal(res.status, 200, `claim after decision: ${res.status} ${res.body}`);
  if (allow) {
    assert.equal(res.json?.status, 'allowed', res.body);
    assert.match(res.json.token, TOKEN_RE);
  } else assert.equal(res.json?.status, 'denied', res.body);
  return { token: res.json.token, requestId, nonce: n };
}

export async function readGrants(home) {
  const text = await fsp.readFile(path.join(home, 'grants.json'), 'utf8');
  return JSON.parse(text);
}

export function findGrant(file, origin) {
  return (file.grants || []).find((g) => g.origin === origin);
}

export function fileMode(p) {
  return fs.statSync(p).mode & 0o777;
}

// ---------------------------------------------------------------- sessions, streams, agents (issue 3)

/** Write {name: content} into a LEURIA_HOME (made 0700 if missing); objects are JSON-encoded, files are 0600. */
export async function writeHomeFiles(home, files) {
  await fsp.mkdir(home, { recursive: true, mode: 0o700 });
  for (const [name, content] of Object.entries(files)) {
    const text = typeof content === 'string' || Buffer.isBuffer(content) ? content : JSON.stringify(content, null, 2);
    await fsp.writeFile(path.join(home, name), text, { mode: 0o600 });
  }
}

/** The scripted ACP agent (tests/fakes/acp-agent.mjs, executable). */
export const FAKE_ACP = path.join(ROOT, 'tests/fakes/acp-agent.mjs');

/**
 * config.json content for the scripted ACP agent as the default AI.
 *   fakeAgentConfig({ id='fake', name='Fake', mode: 'slow,stderr', log: '/tmp/x.log', env: {FAKE_ACP_CHUNKS: 5}, extra: {model: 'big'},
 *                     args: [], command: FAKE_ACP })
 * `agents` adds further agent definitions ({id: {name, command, args, env}}).
 */
export function fakeAgentConfig({ id = 'fake', name = 'Fake', mode, log, env = {}, extra = {}, agents = {}, args = [], command = FAKE_ACP } = {}) {
  const agentEnv = {};
  if (mode) agentEnv.FAKE_ACP_MODE = mode;
  if (log) agentEnv.FAKE_ACP_LOG = log;
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== null) agentEnv[k] = String(v);
  return { agent: id, agents: { [id]: { name, command, args, env: agentEnv }, ...agents }, ...extra };
}

/** FAKE_ACP_LOG entries (JSON lines; a missing file is []). */
export function readFakeLog(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text.split('\n').filter(Boolean).map(tryJson).filter(Boolean);
}

/**
 * Session routes for one caller: `who` = {origin, token} for a web page, {} (or omitted) for a local process.
 *   const api = sessionApi(engine, {origin, token});
 *   await api.prepare({prompt}); api.approve(id); api.prompt(id, {prompt}); api.cancelTurn(id); api.cancel(id);
 *   api.close(id); api.get(id); api.stream(id)  (an SseStream, see openStream)
 */
export function sessionApi(engine, who = {}) {
  const headers = {};
  if (who.origin) headers.Origin = who.origin;
  if (who.token) headers.Authorization = `Bearer ${who.token}`;
  const call = (method, p, body, timeoutMs) => request(engine, { method, path: p, headers, body, timeoutMs });
  const enc = encodeURIComponent;
  return {
    who,
    call,
    prepare: (body = {}) => call('POST', '/session/prepare', body),
    approve: (id) => call('POST', `/session/${enc(id)}/approve`),
    prompt: (id, body) => call('POST', `/session/${enc(id)}/prompt`, body),
    cancelTurn: (id) => call('POST', `/session/${enc(id)}/cancel-turn`),
    cancel: (id) => call('POST', `/session/${enc(id)}/cancel`),
    close: (id) => call('POST', `/session/${enc(id)}/close`),
    get: (id, { timeoutMs } = {}) => call('GET', `/session/${enc(id)}`, undefined, timeoutMs),
    stream: (id, opts = {}) => openStream(engine, `/session/${enc(id)}/stream`, { headers, ...opts }),
  };
}

/**
 * Open a server-sent-events stream and parse it strictly as the engine writes it:
 * each event is exactly `event: <name>\ndata: <one-line JSON>\n\n`; comment lines (`:`…`\n\n`) are allowed.
 * Anything else (CR, several data lines, unparsable JSON, other fields) is recorded in `formatErrors`.
 *
 * Returns an SseStream:
 *   response        promise of {status, headers} (resolves when the headers arrive)
 *   events          [{event, data, dataText}] in order (comments not included)
 *   raw             every byte received, as text
 *   formatErrors    strings
 *   ended           promise resolved when the server ends the response (or the socket closes)
 *   isEnded()       whether it ended
 *   waitFor(pred | name, timeoutMs=5000)  first event (from index 0) matching; rejects on timeout or end
 *   waitForEnd(timeoutMs=5000)
 *   names()         event names so far
 *   close()         drop the connection
 */
export function openStream(target, p, { headers = {}, timeoutMs = 60000 } = {}) {
  const port = portOf(target);
  const h = { Host: `127.0.0.1:${port}`, Accept: 'text/event-stream', ...headers };
  const s = {
    events: [], raw: '', formatErrors: [], status: 0, headers: null, body: '',
    _ended: false, _waiters: new Set(),
  };
  let pending = '';
  let endResolve;
  s.ended = new Promise((r) => (endResolve = r));
  const notify = () => {
    for (const w of s._waiters) w();
  };
  const finish = () => {
    if (s._ended) return;
    s._ended = true;
    if (pending.length) s.formatErrors.push(`stream ended inside an event: ${JSON.stringify(pending)}`);
    clearTimeout(timer);
    endResolve();
    notify();
  };
  const parseBlocks = () => {
    let i;
    while ((i = pending.indexOf('\n\n')) >= 0) {
      const block = pending.slice(0, i);
      pending = pending.slice(i + 2);
      if (block.startsWith(':')) {
        if (block.includes('\n')) s.formatErrors.push(`comment block spans lines: ${JSON.stringify(block)}`);
        continue;
      }
      const m = /^event: ([^\n]+)\ndata: ([^\n]*)$/.exec(block);
      if (!m) {
        s.formatErrors.push(`not "event: <name>\\ndata: <json>": ${JSON.stringify(block)}`);
        continue;
      }
      let data;
      try {
        data = JSON.parse(m[2]);
      } catch {
        s.formatErrors.push(`data is not JSON: ${JSON.stringify(m[2])}`);
      }
      s.events.push({ event: m[1], data, dataText: m[2] });
    }
    notify();
  };
  let responseResolve;
  let responseReject;
  s.response = new Promise((res, rej) => {
    responseResolve = res;
    responseReject = rej;
  });
  s.response.catch(() => {});
  const req = http.request({ host: '127.0.0.1', port, method: 'GET', path: p, headers: h, agent: false, setHost: false }, (res) => {
    s.status = res.statusCode;
    s.headers = res.headers;
    responseResolve({ status: res.statusCode, headers: res.headers });
    res.setEncoding('utf8');
    res.on('data', (c) => {
      s.raw += c;
      if (res.statusCode === 200) {
        if (c.includes('\r')) s.formatErrors.push(`CR in the stream: ${JSON.stringify(c.slice(0, 200))}`);
        pending += c;
        parseBlocks();
      } else s.body += c;
    });
    res.on('end', finish);
    res.on('close', finish);
    res.on('error', finish);
  });
  req.on('error', (e) => {
    responseReject(e);
    finish();
  });
  req.end();
  const timer = setTimeout(() => req.destroy(), timeoutMs);
  timer.unref?.();
  s.req = req;
  s.isEnded = () => s._ended;
  s.names = () => s.events.map((e) => e.event);
  s.close = () => {
    req.destroy();
    finish();
  };
  s.waitFor = (pred, ms = 5000, { from = 0 } = {}) => {
    const test = typeof pred === 'string' ? (e) => e.event === pred : pred;
    return new Promise((resolve, reject) => {
      const check = () => {
        for (let k = from; k < s.events.length; k++) {
          if (test(s.events[k])) {
            done();
            resolve(s.events[k]);
            return;
          }
        }
        if (s._ended) {
          done();
          reject(new Error(`stream ended before the awaited event (${pred}); events: ${JSON.stringify(s.events).slice(0, 3000)}`));
        }
      };
      const t = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${ms} ms waiting for an event (${pred}); events: ${JSON.stringify(s.events).slice(0, 3000)}`));
      }, ms);
      const done = () => {
        clearTimeout(t);
        s._waiters.delete(check);
      };
      s._waiters.add(check);
      check();
    });
  };
  s.waitForEnd = (ms = 5000) =>
    Promise.race([
      s.ended,
      sleep(ms).then(() => {
        throw new Error(`stream did not end within ${ms} ms; events: ${JSON.stringify(s.names())}`);
      }),
    ]);
  return s;
}

/** Whether a process exists (a zombie still exists). */
export function pidExists(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    if (e.code === 'ESRCH') return false;
    if (e.code === 'EPERM') return true;
    throw e;
  }
}

/** {state, ppid, pgid} from /proc/<pid>/stat, or null when it is gone. */
export function procStat(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: f[0], ppid: Number(f[1]), pgid: Number(f[2]) };
}

/** Poll until `pid` no longer exists (kill(pid, 0) → ESRCH). Returns true when gone, false on timeout. */
export async function waitPidGone(pid, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  while (pidExists(pid)) {
    if (Date.now() >= end) return false;
    await sleep(50);
  }
  return true;
}

/** Resident memory of a process in kB (VmRSS from /proc/<pid>/status), or null. */
export function rssKb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * An engine whose default AI is the scripted ACP agent (id `fake`, name "Fake"), logging to `eng.fakeLog`
 * (inside its LEURIA_HOME, which is removed on stop).
 *   startFakeEngine({ id: 'fake', name: 'Fake', mode: 'slow', env: {FAKE_ACP_CHUNKS: 5}, config: {model: 'big'}, agents: {...},
 *                     agentArgs: [...], command: FAKE_ACP,
 *                     timings: {retentionMs: 500}, engineEnv: {...}, app: true, files: {...} })
 * eng.readLog() returns the agent's log entries.
 */
export async function startFakeEngine({ id, name, mode, env, config = {}, agents, agentArgs, command, timings, engineEnv, app, devPairing, args, files = {} } = {}) {
  const home = await makeHome();
  const log = path.join(home, 'fake-acp.log');
  const eng = await startEngine({
    home, app, devPairing, args, timings, env: engineEnv,
    files: { 'config.json': fakeAgentConfig({ id, name, mode, log, env, extra: config, agents, args: agentArgs, command }), ...files },
  });
  const stop = eng.stop;
  eng.stop = async () => {
    try {
      return await stop();
    } finally {
      await fsp.rm(home, { recursive: true, force: true }).catch(() => {});
    }
  };
  eng.fakeLog = log;
  eng.readLog = () => readFakeLog(log);
  return eng;
}

// ---------------------------------------------------------------- page tools (issue 4)

/** {server, token} inside a session's registrationToken (base64 JSON). */
export function decodeRegistration(blob) {
  return JSON.parse(Buffer.from(blob, 'base64').toString('utf8'));
}

/** `ws://127.0.0.1:<port><p>` for an engine (or a port). */
export function wsUrl(target, p) {
  return `ws://127.0.0.1:${portOf(target)}${p}`;
}

/**
 * Open a WebSocket with the `ws` package. Resolves {ws} once open, or {status, headers, body} when the server
 * answers the upgrade with a plain HTTP response (401, 403, …). Rejects on a network error or after timeoutMs.
 *   origin   Origin header (omitted: none, like a local process)
 */
export async function wsOpen(url, { origin, headers = {}, timeoutMs = 5000 } = {}) {
  const { default: WebSocket } = await import('ws');
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { ...(origin ? { Origin: origin } : {}), ...headers }, handshakeTimeout: timeoutMs });
    let settled = false;
    const done = (err, v) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(v);
    };
    const timer = setTimeout(() => {
      ws.terminate();
      done(new Error(`WebSocket ${url} did not open within ${timeoutMs} ms`));
    }, timeoutMs);
    ws.on('unexpected-response', (req, res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      const finish = () => {
        req.destroy();
        done(null, { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
      };
      res.on('end', finish);
      res.on('error', finish);
      res.on('close', finish);
    });
    ws.on('open', () => done(null, { ws }));
    ws.on('error', (e) => done(e));
  });
}

/**
 * A WebSocket that records every JSON message: {ws, messages, waitFor(pred, ms), send(obj), close(), closed}.
 * `closed` resolves {code, reason} when the socket closes.
 */
export function recordSocket(ws) {
  const messages = [];
  const waiters = new Set();
  let closeInfo = null;
  const closed = new Promise((resolve) => {
    ws.on('close', (code, reason) => {
      closeInfo = { code, reason: reason.toString() };
      resolve(closeInfo);
      for (const w of waiters) w();
    });
  });
  ws.on('error', () => {});
  ws.on('message', (data, isBinary) => {
    const text = data.toString('utf8');
    messages.push(isBinary ? { binary: text } : (tryJson(text) ?? { unparsable: text }));
    for (const w of waiters) w();
  });
  const rec = {
    ws, messages, closed,
    get closeInfo() { return closeInfo; },
    send: (obj) => ws.send(typeof obj === 'string' ? obj : JSON.stringify(obj)),
    close: () => {
      try {
        ws.close();
      } catch {}
    },
    terminate: () => ws.terminate(),
    /** First message (from index `from`) matching pred (a function, or a `type` string). Rejects on timeout or close. */
    waitFor(pred, ms = 5000, { from = 0 } = {}) {
      const test = typeof pred === 'string' ? (m) => m.type === pred : pred;
      return new Promise((resolve, reject) => {
        const check = () => {
          for (let k = from; k < messages.length; k++) {
            if (test(messages[k])) {
              done();
              resolve(messages[k]);
              return;
            }
          }
          if (closeInfo) {
            done();
            reject(new Error(`socket closed (${JSON.stringify(closeInfo)}) before the awaited message (${pred}); messages: ${JSON.stringify(messages).slice(0, 2000)}`));
          }
        };
        const t = setTimeout(() => {
          done();
          reject(new Error(`timed out after ${ms} ms waiting for a message (${pred}); messages: ${JSON.stringify(messages).slice(0, 2000)}`));
        }, ms);
        const done = () => {
          clearTimeout(t);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    /** Resolves {code, reason} when closed within ms, else rejects. */
    waitClosed(ms = 5000) {
      return Promise.race([closed, sleep(ms).then(() => { throw new Error(`socket still open after ${ms} ms`); })]);
    },
  };
  return rec;
}

/**
 * Register at /webmcp/register with `token` (the whole blob or the inner token).
 * Resolves {reply, closed: {code, reason}|null, messages}: the engine's first message, and whether it closed the socket after.
 * `message` overrides what is sent (any string or object).
 */
export async function registerPage(target, token, { origin, message, timeoutMs = 5000 } = {}) {
  const r = await wsOpen(wsUrl(target, '/webmcp/register'), { origin, timeoutMs });
  if (!r.ws) throw new Error(`register upgrade refused: ${r.status} ${r.body}`);
  const s = recordSocket(r.ws);
  s.send(message !== undefined ? message : { type: 'register', token });
  const reply = await s.waitFor(() => true, timeoutMs);
  const closed = await s.waitClosed(timeoutMs).catch(() => null);
  if (!closed) s.terminate();
  return { reply, closed, messages: s.messages };
}

/**
 * The page's end of the tool channel.
 *   const page = await PageChannel.connect(engine, registrationToken, { origin, tools: [{name, description, inputSchema}],
 *                                           handler: async (msg) => result | {error} | throw })
 *   page.messages (everything received), page.calls (callTool messages), page.waitFor(pred|type, ms)
 *   await page.registerTool({name, ...}) (waits for the ack), page.send(obj), page.close()
 *   await page.reconnect() (a new socket with the same channel token; the old one is dropped)
 * `handler(msg)` answers callTool / readResource / getPrompt: its return value is sent as `result`;
 * a thrown Error (or a returned {error}) as `error`; returning PageChannel.NO_ANSWER sends nothing.
 * Without a handler, callTool gets result "ok". Pings are answered with pong unless `answerPings: false`.
 */
export class PageChannel {
  static NO_ANSWER = Symbol('no answer');

  static async connect(target, registrationToken, opts = {}) {
    const { reply } = await registerPage(target, registrationToken, { origin: opts.origin });
    if (reply.type !== 'registerSuccess') throw new Error(`register failed: ${JSON.stringify(reply)}`);
    const page = new PageChannel(target, reply.channel, reply.token, opts);
    await page.open();
    for (const t of opts.tools || []) await page.registerTool(t);
    return page;
  }

  constructor(target, channel, token, { origin, handler, answerPings = true } = {}) {
    this.target = target;
    this.channel = channel;
    this.token = token;
    this.origin = origin;
    this.handler = handler;
    this.answerPings = answerPings;
    this.messages = [];
    this.sockets = [];
  }

  get url() {
    return wsUrl(this.target, `${this.channel}?token=${encodeURIComponent(this.token)}`);
  }

  get calls() {
    return this.messages.filter((m) => m.type === 'callTool');
  }

  async open() {
    const r = await wsOpen(this.url, { origin: this.origin });
    if (!r.ws) throw new Error(`channel upgrade refused: ${r.status} ${r.body}`);
    const s = recordSocket(r.ws);
    r.ws.on('message', (data) => {
      const m = tryJson(data.toString('utf8'));
      if (!m || typeof m !== 'object') return;
      this.messages.push(m);
      this.#onMessage(s, m).catch(() => {});
    });
    this.sock = s;
    this.sockets.push(s);
    return s;
  }

  async #onMessage(s, m) {
    if (m.type === 'ping' && this.answerPings) return s.send({ type: 'pong' });
    const kinds = { callTool: 'toolResponse', readResource: 'resourceResponse', getPrompt: 'promptResponse' };
    const kind = kinds[m.type];
    if (!kind) return;
    let out;
    try {
      const r = this.handler ? await this.handler(m) : m.type === 'callTool' ? 'ok' : {};
      if (r === PageChannel.NO_ANSWER) return;
      out = r && typeof r === 'object' && 'error' in r && Object.keys(r).length === 1 ? { error: r.error } : { result: r };
    } catch (e) {
      out = { error: e.message };
    }
    if (s.ws.readyState === 1) s.send({ type: kind, id: m.id, ...out });
  }

  send(obj) {
    this.sock.send(obj);
  }

  waitFor(pred, ms = 5000, opts) {
    return this.sock.waitFor(pred, ms, opts);
  }

  /** Send registerTool and wait for its ack (or error). Resolves the engine's answer. */
  async registerTool(tool, { nested = false } = {}) {
    const from = this.sock.messages.length;
    this.send(nested ? { type: 'registerTool', tool } : { type: 'registerTool', ...tool });
    return this.sock.waitFor((m) => (m.type === 'ack' && m.name === tool.name) || m.type === 'error', 5000, { from });
  }

  async reconnect() {
    return this.open();
  }

  close() {
    for (const s of this.sockets) s.close();
  }
}

/**
 * A paired page with a prepared session and an open tool channel:
 *   const { origin, token, api, sid, prep, page, stream } = await pageSession(engine, { prompt, tools, handler, approve: true })
 * The stream is opened before approve. `approve: false` leaves the session pending.
 */
export async function pageSession(engine, { prompt, tools = [], handler, approve = true, prepare = {}, origin = freshOrigin('page') } = {}) {
  const { token } = await pairCli(engine, origin);
  const api = sessionApi(engine, { origin, token });
  const prep = await api.prepare({ ...(prompt !== undefined ? { prompt } : {}), ...prepare });
  assert.equal(prep.status, 201, `prepare: ${prep.status} ${prep.body}`);
  const sid = prep.json.sessionId;
  const page = await PageChannel.connect(engine, prep.json.registrationToken, { origin, tools, handler });
  const stream = api.stream(sid);
  await stream.response;
  if (approve) {
    const a = await api.approve(sid);
    assert.equal(a.status, 200, `approve: ${a.status} ${a.body}`);
  }
  return { origin, token, api, sid, prep, page, stream };
}

/** The MCP endpoint of an engine. */
export function mcpUrl(target) {
  return `http://127.0.0.1:${portOf(target)}/webmcp/mcp`;
}

/**
 * One raw JSON-RPC POST to /webmcp/mcp. `accept` defaults to 'application/json, text/event-stream'.
 * Resolves the `request` result plus `rpc`: the JSON-RPC message (parsed from JSON or from the SSE `data:` line).
 */
export async function mcpPost(target, token, message, { accept = 'application/json, text/event-stream', headers = {}, timeoutMs = 8000 } = {}) {
  const h = { 'Content-Type': 'application/json', Accept: accept, ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  const res = await request(target, { method: 'POST', path: '/webmcp/mcp', headers: h, body: JSON.stringify(message), timeoutMs });
  res.rpc = parseMcpBody(res);
  return res;
}

/** The JSON-RPC message in an MCP HTTP response body (JSON, or the last SSE `data:` of event `message`). */
export function parseMcpBody(res) {
  const ct = res.headers['content-type'] || '';
  if (/text\/event-stream/i.test(ct)) {
    const datas = [];
    for (const block of res.body.split(/\r?\n\r?\n/)) {
      const lines = block.split(/\r?\n/).filter((l) => l && !l.startsWith(':'));
      const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (data) datas.push(tryJson(data));
    }
    return datas.filter(Boolean).at(-1);
  }
  return res.json;
}

/**
 * A raw MCP client session over /webmcp/mcp: initialize (+ notifications/initialized), then `call(method, params)`.
 * Resolves {init, sessionId, version, call, notify}. call() resolves mcpPost's result (`.rpc` is the JSON-RPC answer).
 */
export async function mcpSession(target, token, { protocolVersion = '2025-06-18', accept, timeoutMs } = {}) {
  const init = await mcpPost(target, token, {
    jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion, capabilities: {}, clientInfo: { name: 'leuria-e2e', version: '1.0.0' } },
  }, { accept });
  if (init.status !== 200 || !init.rpc?.result) throw new Error(`initialize: ${init.status} ${init.body}`);
  const sessionId = init.headers['mcp-session-id'];
  const version = init.rpc.result.protocolVersion;
  const headers = { 'MCP-Protocol-Version': version };
  if (sessionId) headers['Mcp-Session-Id'] = sessionId;
  let n = 1;
  const s = {
    init, sessionId, version, headers,
    call: (method, params, opts = {}) =>
      mcpPost(target, token, { jsonrpc: '2.0', id: n++, method, ...(params !== undefined ? { params } : {}) }, { accept, timeoutMs, ...opts, headers: { ...headers, ...(opts.headers || {}) } }),
    notify: (method, params, opts = {}) =>
      mcpPost(target, token, { jsonrpc: '2.0', method, ...(params !== undefined ? { params } : {}) }, { accept, ...opts, headers: { ...headers, ...(opts.headers || {}) } }),
  };
  const r = await s.notify('notifications/initialized');
  if (r.status !== 202) throw new Error(`notifications/initialized: ${r.status} ${r.body}`);
  return s;
}
