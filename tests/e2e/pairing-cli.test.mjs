// Pairing with the CLI engine: the claim asks, the engine's own page decides.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  startEngine, stopAll, claim, startCliClaim, pairCli, own, local, web, sleep,
  nonce, freshOrigin, assertError, assertJsonType, assertCors, readGrants, findGrant,
  APPROVE_RE, REQUEST_ID_RE, TOKEN_RE,
} from './helpers.mjs';

const CLAIM_WAIT = 300;
const COOLDOWN = 1500;

describe('pairing (CLI engine)', { timeout: 90000 }, () => {
  let eng;
  before(async () => {
    eng = await startEngine({ timings: { claimWaitMs: CLAIM_WAIT, cooldownMs: COOLDOWN } });
  });
  after(stopAll);

  describe('claim validation', () => {
    it('refuses claims that do not come from a web page', async () => {
      const body = { nonce: nonce() };
      assertError(await local(eng, '/connect/claim', { body }), 400, { error: 'Pairing must come from a web page' });
      assertError(await own(eng, '/connect/claim', { body }), 400, { error: 'Pairing must come from a web page' });
      assertError(await web(eng, `http://localhost:${eng.port}`, '/connect/claim', { body }), 400, { error: 'Pairing must come from a web page' });
    });

    it('requires a nonce', async () => {
      const o = freshOrigin('v');
      assertError(await claim(eng, o, {}), 400, { error: 'A nonce is required' });
      assertError(await claim(eng, o, { app: 'x' }), 400, { error: 'A nonce is required' });
    });

    it('refuses malformed nonces', async () => {
      const o = freshOrigin('v');
      const bad = ['a'.repeat(21), 'a'.repeat(129), 'a'.repeat(30) + '+', 'a'.repeat(30) + '=', 'a'.repeat(30) + '/', 'a'.repeat(30) + ' ', 'é'.repeat(30), 42, true, ['a'.repeat(30)], { n: 1 }, ''];
      const from = eng.lines.length;
      for (const n of bad) {
        const r = await claim(eng, o, { nonce: n });
        assert.equal(r.status, 400, `nonce ${JSON.stringify(n)}: ${r.status} ${r.body}`);
        assertError(r, 400, { error: /nonce/i });
      }
      assert.equal(eng.lines.slice(from).filter((l) => APPROVE_RE.test(l)).length, 0, 'no request for a bad nonce');
    });

    it('accepts nonces of 22 and 128 characters', async () => {
      for (const n of ['A'.repeat(22), 'b-_'.repeat(42) + 'cd']) {
        const o = freshOrigin('v');
        const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: n });
        const r = await claimPromise;
        assert.equal(r.status, 200, r.body);
        assert.equal(r.json.status, 'pending');
        // clean up: deny (cooldown only concerns this fresh origin)
        assert.equal((await own(eng, `/connect/${requestId}/decide`, { body: { allow: false } })).status, 200);
      }
    });
  });

  describe('allow', () => {
    it('creates a request, long-polls pending, and hands the token once after allow', async () => {
      const o = freshOrigin('allow');
      const n = nonce();
      const t0 = Date.now();
      const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: n, app: 'Shop' });
      assert.match(requestId, REQUEST_ID_RE);
      const pending = await claimPromise;
      const waited = Date.now() - t0;
      assert.equal(pending.status, 200, pending.body);
      assertJsonType(pending);
      assertCors(pending, o);
      assert.deepEqual(pending.json, { status: 'pending' });
      assert.ok(waited >= CLAIM_WAIT * 0.8, `claim should long-poll ~${CLAIM_WAIT} ms, answered after ${waited} ms`);
      assert.ok(waited < CLAIM_WAIT + 2000, `claim long-polled too long: ${waited} ms`);

      const st = await own(eng, `/connect/${requestId}/state`);
      assert.equal(st.status, 200, st.body);
      assert.equal(st.json.status, 'pending');
      assert.equal(st.json.origin, o);
      assert.equal(st.json.app, 'Shop');
      const stLocal = await local(eng, `/connect/${requestId}/state`);
      assert.equal(stLocal.status, 200, stLocal.body);
      assert.equal(stLocal.json.status, 'pending');

      const d = await own(eng, `/connect/${requestId}/decide`, { body: { allow: true } });
      assert.equal(d.status, 200, d.body);
      assert.deepEqual(d.json, { decision: 'allowed', origin: o });

      const st2 = await own(eng, `/connect/${requestId}/state`);
      if (st2.status === 200) assert.equal(st2.json.status, 'allowed');

      const got = await claim(eng, o, { nonce: n });
      assert.equal(got.status, 200, got.body);
      assert.equal(got.json.status, 'allowed');
      assert.match(got.json.token, TOKEN_RE);
      assertCors(got, o);

      const h = await web(eng, o, '/health', { token: got.json.token });
      assert.equal(h.json.paired, true);
    });

    it('after the token is collected, the same nonce replayed gets 404 and asks nothing; a fresh one asks again', async () => {
      const o = freshOrigin('again');
      const n = nonce();
      const first = await pairCli(eng, o, { nonce: n });
      const from = eng.lines.length;
      assertError(await claim(eng, o, { nonce: n }), 404);
      assert.ok(!eng.lines.slice(from).some((l) => APPROVE_RE.test(l)), 'a replayed nonce must not ask the visitor');
      const second = await startCliClaim(eng, o, { nonce: nonce() });
      assert.notEqual(second.requestId, first.requestId);
      const r = await second.claimPromise;
      assert.deepEqual(r.json, { status: 'pending' });
      await own(eng, `/connect/${second.requestId}/decide`, { body: { allow: false } });
    });

    it('wakes a waiting claim at once when the visitor decides', async () => {
      const slow = await startEngine({ timings: { claimWaitMs: 10000 } });
      try {
        const o = freshOrigin('wake');
        const n = nonce();
        const { requestId, claimPromise } = await startCliClaim(slow, o, { nonce: n });
        await sleep(200);
        // a long-polling claim blocks nobody
        const h = await local(slow, '/health', { timeoutMs: 2000 });
        assert.equal(h.status, 200);
        const t0 = Date.now();
        const d = await own(slow, `/connect/${requestId}/decide`, { body: { allow: true } });
        assert.equal(d.status, 200, d.body);
        const r = await claimPromise;
        const ms = Date.now() - t0;
        assert.equal(r.status, 200, r.body);
        assert.equal(r.json.status, 'allowed');
        assert.match(r.json.token, TOKEN_RE);
        assert.ok(ms < 1500, `the waiting claim should be woken at once, took ${ms} ms`);
      } finally {
        await slow.stop();
      }
    });
    it('a claim whose connection closed while it waited takes nothing: the page\'s next claim gets the Yes or the No', async () => {
      const slow = await startEngine({ timings: { claimWaitMs: 10000 } });
      try {
        /** A claim the page's fetch gives up on after 400 ms (its socket closed), and the request it asked. */
        const abandoned = async (o, n) => {
          const from = slow.lines.length;
          const dead = claim(slow, o, { nonce: n }, { timeoutMs: 400 }).then(() => null, (e) => e);
          const line = await slow.waitForLine(APPROVE_RE, 5000, { from });
          assert.match(String(await dead), /timed out/);
          return APPROVE_RE.exec(line)[2];
        };
        for (const allow of [true, false]) {
          const o = freshOrigin('left');
          const n = nonce();
          const requestId = await abandoned(o, n);
          const retry = claim(slow, o, { nonce: n });
          await sleep(200);  // both wait now: the closed one first
          const d = await own(slow, `/connect/${requestId}/decide`, { body: { allow } });
          assert.equal(d.status, 200, d.body);
          const r = await retry;
          assert.equal(r.status, 200, r.body);
          assert.equal(r.json.status, allow ? 'allowed' : 'denied');
          if (allow) assert.match(r.json.token, TOKEN_RE);
        }
        // Nobody waiting when the visitor says Yes: the token waits for the page's next claim.
        const o = freshOrigin('left');
        const n = nonce();
        const left = slow.stderrLines.filter((l) => l.includes('event=pairing.claim_left')).length;
        const requestId = await abandoned(o, n);
        assert.equal((await own(slow, `/connect/${requestId}/decide`, { body: { allow: true } })).status, 200);
        for (let i = 0; i < 100 && slow.stderrLines.filter((l) => l.includes('event=pairing.claim_left')).length === left; i++) {
          await sleep(50);  // until the closed claim has woken to the Yes and left it
        }
        const r = await claim(slow, o, { nonce: n });
        assert.equal(r.json?.status, 'allowed', r.body);
        assert.match(r.json.token, TOKEN_RE);
        assert.equal((await claim(slow, o, { nonce: n })).status, 404, 'and once only');
      } finally {
        await slow.stop();
      }
    });
  });

  describe('deny and cooldown', () => {
    it('answers denied, then 429 for the cooldown, then asks again', async () => {
      const o = freshOrigin('deny');
      const n = nonce();
      const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: n });
      await claimPromise;
      const d = await own(eng, `/connect/${requestId}/decide`, { body: { allow: false } });
      assert.equal(d.status, 200, d.body);
      assert.deepEqual(d.json, { decision: 'denied', origin: o });
      const st = await own(eng, `/connect/${requestId}/state`);
      if (st.status === 200) assert.equal(st.json.status, 'denied');
      const r = await claim(eng, o, { nonce: n });
      assert.equal(r.status, 200, r.body);
      assert.equal(r.json.status, 'denied');
      assert.equal(r.json.token, undefined);
      const collectedAt = Date.now();

      const from = eng.lines.length;
      for (const nn of [nonce(), n]) {
        const c = await claim(eng, o, { nonce: nn });
        assertError(c, 429);
        assertCors(c, o);
      }
      // another origin is not affected
      const other = freshOrigin('deny');
      const oc = await startCliClaim(eng, other, { nonce: nonce() });
      await oc.claimPromise;
      await own(eng, `/connect/${oc.requestId}/decide`, { body: { allow: false } });
      assert.equal(eng.lines.slice(from).filter((l) => APPROVE_RE.test(l) && !l.endsWith(oc.requestId)).length, 0, 'no request during the cooldown');

      await sleep(Math.max(0, collectedAt + COOLDOWN + 300 - Date.now()));
      const again = await startCliClaim(eng, o, { nonce: nonce() });
      assert.notEqual(again.requestId, requestId);
      assert.deepEqual((await again.claimPromise).json, { status: 'pending' });
      await own(eng, `/connect/${again.requestId}/decide`, { body: { allow: true } });
    });
  });

  describe('decide', () => {
    it('only the engine\'s own page may decide', async () => {
      const o = freshOrigin('dec');
      const n = nonce();
      const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: n });
      await claimPromise;
      assertError(await local(eng, `/connect/${requestId}/decide`, { body: { allow: true } }), 403);
      assertError(await web(eng, o, `/connect/${requestId}/decide`, { body: { allow: true } }), 403);
      assertError(await web(eng, 'https://evil.example', `/connect/${requestId}/decide`, { body: { allow: true } }), 403);
      assertError(await web(eng, `http://127.0.0.1:${eng.port}.evil.example`, `/connect/${requestId}/decide`, { body: { allow: true } }), 403);
      // still pending
      assert.deepEqual((await claim(eng, o, { nonce: n })).json, { status: 'pending' });
      // the localhost form of the engine's origin decides too
      const d = await web(eng, `http://localhost:${eng.port}`, `/connect/${requestId}/decide`, { body: { allow: false } });
      assert.equal(d.status, 200, d.body);
      assert.equal(d.json.decision, 'denied');
    });

    it('a second decision gets 410, an unknown request 404', async () => {
      const o = freshOrigin('dec');
      const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: nonce() });
      await claimPromise;
      assert.equal((await own(eng, `/connect/${requestId}/decide`, { body: { allow: true } })).status, 200);
      assertError(await own(eng, `/connect/${requestId}/decide`, { body: { allow: false } }), 410);
      assertError(await own(eng, `/connect/${requestId}/decide`, { body: { allow: true } }), 410);
      assertError(await own(eng, '/connect/AAAAAAAAAAAAAAAAAAAAAAAA/decide', { body: { allow: true } }), 404);
      assertError(await own(eng, '/connect/nope/decide', { body: { allow: true } }), 404);
    });
  });

  describe('state and approval page', () => {
    it('state is reserved for the engine\'s own page (and local processes)', async () => {
      const o = freshOrigin('st');
      const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: nonce(), app: 'State' });
      await claimPromise;
      assertError(await web(eng, o, `/connect/${requestId}/state`), 403);
      assertError(await web(eng, 'https://evil.example', `/connect/${requestId}/state`), 403);
      const s = await own(eng, `/connect/${requestId}/state`);
      assert.equal(s.status, 200);
      assert.equal(s.json.status, 'pending');
      assert.equal(s.json.origin, o);
      assert.equal(s.json.app, 'State');
      assert.equal(s.json.token, undefined, 'state never carries the token');
      assertError(await own(eng, '/connect/AAAAAAAAAAAAAAAAAAAAAAAA/state'), 404);
      await own(eng, `/connect/${requestId}/decide`, { body: { allow: false } });
    });

    it('serves an unframeable approval page that escapes the app name', async () => {
      const o = freshOrigin('page');
      const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: nonce(), app: '<b>x</b>"\'&' });
      await claimPromise;
      const r = await local(eng, `/connect/${requestId}`, { headers: { Accept: 'text/html' } });
      assert.equal(r.status, 200);
      assert.match(r.headers['content-type'] || '', /^text\/html/i);
      assert.equal((r.headers['x-frame-options'] || '').toUpperCase(), 'DENY');
      assert.match(r.headers['content-security-policy'] || '', /frame-ancestors 'none'/);
      assert.ok(r.body.includes(o), 'the page names the site');
      assert.ok(r.body.includes('&lt;b&gt;x&lt;/b&gt;'), 'the app name is HTML-escaped');
      assert.ok(!r.body.includes('<b>x</b>'), 'the raw app name must not appear');
      assert.equal((await local(eng, '/connect/AAAAAAAAAAAAAAAAAAAAAAAA')).status, 404);
      await own(eng, `/connect/${requestId}/decide`, { body: { allow: false } });
    });

    it('cuts app to 80 characters', async () => {
      const o = freshOrigin('cut');
      const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: nonce(), app: 'x'.repeat(79) + 'yz' + 'w'.repeat(200) });
      await claimPromise;
      const s = await own(eng, `/connect/${requestId}/state`);
      assert.equal(s.json.app, 'x'.repeat(79) + 'y');
      await own(eng, `/connect/${requestId}/decide`, { body: { allow: false } });
    });
  });

  describe('nonces', () => {
    it('a new nonce from the same origin updates the pending request', async () => {
      const o = freshOrigin('nn');
      const n1 = nonce();
      const n2 = nonce();
      const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: n1 });
      await claimPromise;
      const from = eng.lines.length;
      const p2 = await claim(eng, o, { nonce: n2 });
      assert.deepEqual(p2.json, { status: 'pending' });
      await sleep(100);
      assert.equal(eng.lines.slice(from).filter((l) => APPROVE_RE.test(l)).length, 0, 'no second approval line');
      assertError(await claim(eng, o, { nonce: n1 }), 404);
      assert.equal((await own(eng, `/connect/${requestId}/decide`, { body: { allow: true } })).status, 200);
      assertError(await claim(eng, o, { nonce: n1 }), 404);
      const got = await claim(eng, o, { nonce: n2 });
      assert.equal(got.json.status, 'allowed');
      assert.match(got.json.token, TOKEN_RE);
    });

    it('another origin with the first origin\'s nonce does not get its answer', async () => {
      const o1 = freshOrigin('x1');
      const o2 = freshOrigin('x2');
      const n = nonce();
      const { requestId, claimPromise } = await startCliClaim(eng, o1, { nonce: n });
      await claimPromise;
      assert.equal((await own(eng, `/connect/${requestId}/decide`, { body: { allow: true } })).status, 200);
      // a wrong nonce from the right origin
      assertError(await claim(eng, o1, { nonce: nonce() }), 404);
      // the right nonce from the wrong origin
      const from = eng.lines.length;
      const stolen = await claim(eng, o2, { nonce: n });
      assert.notEqual(stolen.json?.status, 'allowed', `another origin got the answer: ${stolen.body}`);
      assert.equal(stolen.json?.token, undefined);
      for (const l of eng.lines.slice(from)) {
        const m = APPROVE_RE.exec(l);
        if (m) {
          assert.notEqual(m[2], requestId);
          await own(eng, `/connect/${m[2]}/decide`, { body: { allow: false } });
        }
      }
      // the first origin still collects its token
      const got = await claim(eng, o1, { nonce: n });
      assert.equal(got.json.status, 'allowed', got.body);
      assert.match(got.json.token, TOKEN_RE);
      const h1 = await web(eng, o1, '/health', { token: got.json.token });
      assert.equal(h1.json.paired, true);
      const h2 = await web(eng, o2, '/health', { token: got.json.token });
      assert.equal(h2.json.paired, false);
    });
  });

  describe('needs', () => {
    it('keeps the closed vocabulary on the grant and drops the rest', async () => {
      const o = freshOrigin('needs');
      await pairCli(eng, o, { app: 'Needs', needs: { tools: true, images: true, effort: 'deep', context: 8000, evil: 'x', admin: true } });
      const g = findGrant(await readGrants(eng.home), o);
      assert.ok(g, 'grant written');
      assert.deepEqual(g.needs, { tools: true, images: true, effort: 'deep', context: 8000 });
    });

    it('drops bad values', async () => {
      const o = freshOrigin('needs');
      await pairCli(eng, o, { needs: { tools: 'yes', images: true, effort: 'extreme', context: 'lots' } });
      const g = findGrant(await readGrants(eng.home), o);
      assert.deepEqual(g.needs, { images: true });
      const o2 = freshOrigin('needs');
      await pairCli(eng, o2, { needs: { effort: 'light' } });
      assert.deepEqual(findGrant(await readGrants(eng.home), o2).needs, { effort: 'light' });
    });
  });
});

describe('pairing limits (CLI engine)', { timeout: 60000 }, () => {
  after(stopAll);

  it('allows at most 20 pending requests across sites', async () => {
    const eng = await startEngine({ timings: { claimWaitMs: 200 } });
    const origins = Array.from({ length: 20 }, () => freshOrigin('lim'));
    const res = await Promise.all(origins.map((o) => claim(eng, o, { nonce: nonce() })));
    for (const r of res) assert.deepEqual(r.json, { status: 'pending' }, r.body);
    assert.equal(eng.lines.filter((l) => APPROVE_RE.test(l)).length, 20);
    const o21 = freshOrigin('lim');
    const r21 = await claim(eng, o21, { nonce: nonce() });
    assertError(r21, 429);
    assertCors(r21, o21);
    // a pending site may still re-claim
    const again = await claim(eng, origins[0], { nonce: nonce() });
    assert.equal(again.status, 200, again.body);
    await eng.stop();
  });

  it('expires a request: the waiting claim gets 410, and so does a later decision', async () => {
    const eng = await startEngine({ timings: { claimWaitMs: 5000, expiryMs: 800 } });
    const o = freshOrigin('exp');
    const t0 = Date.now();
    const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: nonce() });
    const r = await claimPromise;
    assertError(r, 410);
    assert.ok(Date.now() - t0 < 3500, `expiry took ${Date.now() - t0} ms`);
    assertError(await own(eng, `/connect/${requestId}/decide`, { body: { allow: true } }), 410);
    await eng.stop();
  });

  it('a decision on an expired request nobody waits for gets 410', async () => {
    const eng = await startEngine({ timings: { claimWaitMs: 200, expiryMs: 600 } });
    const o = freshOrigin('exp');
    const { requestId, claimPromise } = await startCliClaim(eng, o, { nonce: nonce() });
    assert.deepEqual((await claimPromise).json, { status: 'pending' });
    await sleep(1000);
    assertError(await own(eng, `/connect/${requestId}/decide`, { body: { allow: true } }), 410);
    await eng.stop();
  });
});

// A page can make many origins claim at once (iframes on many subdomains): each asks, but the visitor's
// browser gets one approval tab, not one per origin. A fake xdg-open on PATH records what was opened.
describe('pairing (CLI engine): approval tabs', { timeout: 30000 }, () => {
  after(stopAll);

  it('opens one tab for a burst of questions and prints every one', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'leuria-opener-'));
    const opened = path.join(dir, 'opened');
    await fsp.writeFile(path.join(dir, 'xdg-open'), `#!/bin/sh\necho "$1" >> "${opened}"\n`, { mode: 0o755 });
    const eng = await startEngine({ args: ['--port', '0'], env: { PATH: `${dir}:${process.env.PATH}` }, timings: { claimWaitMs: CLAIM_WAIT } });
    try {
      const asked = [];
      for (let i = 0; i < 4; i++) asked.push((await startCliClaim(eng, freshOrigin(`burst${i}`), { nonce: nonce() })).requestId);
      // The lines below are printed as each question is asked, so they already say no other tab was
      // opened; xdg-open runs in the background, so its record is waited for.
      const read = () => fsp.readFile(opened, 'utf8').catch(() => '');
      for (const end = Date.now() + 5000; !(await read()) && Date.now() < end;) await sleep(50);
      const urls = (await read()).split('\n').filter(Boolean);
      assert.deepEqual(urls, [`http://127.0.0.1:${eng.port}/connect/${asked[0]}`]);
      assert.equal(eng.lines.filter((l) => APPROVE_RE.test(l)).length, 4, eng.lines.join('\n'));
      assert.equal(eng.lines.filter((l) => /Not opening another tab/.test(l)).length, 3, eng.lines.join('\n'));
    } finally {
      await eng.stop();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});
