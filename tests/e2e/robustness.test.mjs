// Edge cases found in review: the grants file written by hand or broken while the engine runs,
// refusals that must pass the gate (silence, CORS), and the CLI approval page absent in app mode.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import {
  startEngine, stopAll, web, admin, rawHttp, pairCli, pairApp, nonce, freshOrigin, sleep, poll,
  assertError, assertSilent, assertCors, readGrants, fileMode,
} from './helpers.mjs';

after(stopAll);

describe('grants.json edited while the engine runs', { timeout: 30000 }, () => {
  it('a file written slowly in place (not atomically) is read when complete, never set aside', async () => {
    const eng = await startEngine();
    const o = freshOrigin('slow');
    const { token } = await pairCli(eng, o);
    const text = await fsp.readFile(path.join(eng.home, 'grants.json'), 'utf8');
    const file = path.join(eng.home, 'grants.json');
    await fsp.rm(file);
    const fh = await fsp.open(file, 'w');  // created empty now, written in 300 ms
    await sleep(300);
    await fh.write(text);
    await fh.close();
    await sleep(300);
    const names = await fsp.readdir(eng.home);
    assert.ok(!names.some((n) => n.startsWith('grants.json.corrupt')), `set aside: ${names}`);
    const h = await web(eng, o, '/health', { token });
    assert.equal(h.json.paired, true);
    await eng.stop();
  });

  it('a grants.json that cannot be read at all is logged and the engine keeps running', async () => {
    const eng = await startEngine();
    const o = freshOrigin('dir');
    const { token } = await pairCli(eng, o);
    const file = path.join(eng.home, 'grants.json');
    await fsp.rm(file);
    await fsp.mkdir(file);
    await sleep(300);
    const h = await web(eng, o, '/health', { token });
    assert.equal(h.status, 200);
    assert.equal(eng.exitInfo, null, 'the engine must not exit');
    await fsp.rmdir(file);
    await eng.stop();
  });

  it('corrupt copies are private (0600)', async () => {
    const eng = await startEngine();
    const file = path.join(eng.home, 'grants.json');
    // Made world-readable first, then moved into place: the engine reacts to the rename at once.
    fs.writeFileSync(`${file}.new`, '{broken');
    fs.chmodSync(`${file}.new`, 0o644);
    fs.renameSync(`${file}.new`, file);
    await sleep(300);
    const aside = (await fsp.readdir(eng.home)).find((n) => n.startsWith('grants.json.corrupt'));
    assert.ok(aside, 'moved aside');
    assert.equal(fileMode(path.join(eng.home, aside)), 0o600);
    await eng.stop();
  });
});

describe('refusals pass the gate', { timeout: 30000 }, () => {
  const huge = (port, origin) =>
    `POST /connect/claim HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nOrigin: ${origin}\r\n` +
    `Content-Type: application/json\r\nContent-Length: 99999999\r\n\r\n`;

  it('a body too large from a silenced origin gets the same empty 403 as anything else', async () => {
    const eng = await startEngine({ app: true });
    const r = await rawHttp(eng, huge(eng.port, 'https://unknown.example'));
    assertSilent(r, 'oversized body');
    await eng.stop();
  });

  it('a body too large from a page the CLI engine answers is a 413 the page can read', async () => {
    const eng = await startEngine();
    const o = freshOrigin('big');
    const r = await rawHttp(eng, huge(eng.port, o));
    assertError(r, 413);
    assertCors(r, o);
    await eng.stop();
  });

  it('a claim is a few fields: over 64 KB it is a 413 before any parse (a tree of small values takes 8 times its text)', async () => {
    const eng = await startEngine();
    const o = freshOrigin('padded');
    const padded = `{"nonce":"${nonce()}","app":"Padded","pad":[${'0,'.repeat(40 * 1024)}0]}`;
    const r = await web(eng, o, '/connect/claim', { body: padded, headers: { 'Content-Type': 'application/json' } });
    assertError(r, 413, { error: 'Request body too large' });
    assertCors(r, o);
    // Under the cap, the same body is read as a claim: a nonce out of shape is a 400, not a 413.
    const small = await web(eng, o, '/connect/claim', { body: { nonce: 'short', app: 'x', pad: [0, 0, 0] } });
    assertError(small, 400, { error: /nonce/i });
    // The approval page's decision is a few fields too.
    const own = `http://127.0.0.1:${eng.port}`;
    const decide = await web(eng, own, '/connect/no-such-request/decide', { body: padded.replace('{', '{"allow":true,'), headers: { 'Content-Type': 'application/json' } });
    assertError(decide, 413, { error: 'Request body too large' });
    await eng.stop();
  });
});

describe('app mode has no CLI approval page', { timeout: 30000 }, () => {
  it('GET /connect/:id, /state and decide are 404; only the admin API decides', async () => {
    const eng = await startEngine({ app: true });
    const o = freshOrigin('appmode');
    const l = await admin(eng, '/admin/pairing/link', { body: { origin: o, nonce: nonce() } });
    const id = l.json.requestId;
    const own = { Origin: `http://127.0.0.1:${eng.port}` };
    for (const [method, p, body] of [['GET', `/connect/${id}`], ['GET', `/connect/${id}/state`],
      ['POST', `/connect/${id}/decide`, { allow: true }], ['GET', '/connect/assets/approve.js']]) {
      const r = await web(eng, own.Origin, p, { method, body });
      assertError(r, 404);
    }
    const d = await admin(eng, `/admin/pairing/${id}`, { body: { allow: true } });
    assert.deepEqual(d.json, { ok: true });
    await eng.stop();
  });

  it('an expired link answers its 410 once, then the origin is silent again', async () => {
    const eng = await startEngine({ app: true, timings: { claimWaitMs: 300, expiryMs: 400 } });
    const o = freshOrigin('late');
    const n = nonce();
    await admin(eng, '/admin/pairing/link', { body: { origin: o, nonce: n } });
    await sleep(600);
    assertError(await web(eng, o, '/connect/claim', { method: 'POST', body: { nonce: n } }), 410);
    assertSilent(await web(eng, o, '/health'), 'after the 410 was collected');
    await eng.stop();
  });
});
