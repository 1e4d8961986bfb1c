// Pairing for the leuria end-to-end tests: nonces and fresh origins, token / request-id formats, claims,
// end-to-end pairing in CLI mode (pairCli) and app mode (pairApp), and grants.json helpers.
// This module owns the fresh-origin counter.

import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import assert from 'node:assert/strict';
import { admin, own, web } from './http.mjs';

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
