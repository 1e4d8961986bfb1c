// Assertions on engine responses (JSON errors, silence, CORS) and small test utilities: polling, free and busy ports.

import net from 'node:net';
import assert from 'node:assert/strict';
import { sleep } from './engine.mjs';

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
