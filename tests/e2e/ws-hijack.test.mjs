// WebSocket hijacking (issue 7, "Hostile pages"): what webmcp.test.mjs doesn't already pin. Browsers can't set
// headers on a WebSocket, so the Origin and the tokens are all there is. Refused before the upgrade, with the
// HTTP status the spec gives: an origin without a grant (403: unknown, revoked, the engine's own page, a browser
// that sent no Origin); a channel token of another origin or session, used from a local process, or after a
// revoke (401). The registration token travels after the upgrade (spec: "send { type: register, token }"):
// another origin's token, or one raced on many sockets at once, gets { type: "error", message } and a close,
// and exactly one socket ever wins. Then the same from a real page in headless Chromium.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {
  startFakeEngine, stopAll, sessionApi, pairCli, freshOrigin, poll, runCli, web,
  decodeRegistration, wsUrl, wsOpen, recordSocket, registerPage,
} from './helpers.mjs';
import { OP, frame, rawUpgrade, rawUpgradeOrRefusal } from './lib/ws-frames.mjs';
import { CHROMIUM, launchBrowser, startSite } from './lib/sdk-page.mjs';

const INVALID = { type: 'error', message: 'Invalid registration token' };

/** A paired origin with a prepared session: {origin, token, api, sid, reg}. */
async function prepared(eng, origin = freshOrigin('hj')) {
  const { token } = await pairCli(eng, origin);
  const api = sessionApi(eng, { origin, token });
  const prep = await api.prepare({});
  assert.equal(prep.status, 201, prep.body);
  return { origin, token, api, sid: prep.json.sessionId, reg: prep.json.registrationToken };
}

/** The upgrade of `p` is answered with `status` and never switches protocols. */
async function refused(eng, p, { origin, headers } = {}, status, what) {
  const r = await rawUpgradeOrRefusal(eng, p, { origin, headers });
  if (typeof r.destroy === 'function') r.destroy();
  assert.equal(r.status, status, `${what}: ${r.status ?? '101 Switching Protocols'}\n${r.head ?? ''}`);
}

describe('WebSocket hijacking', { timeout: 180000 }, () => {
  let eng;
  before(async () => {
    eng = await startFakeEngine();
  });
  after(stopAll);

  it('register: another origin\'s registration token gets the spec\'s error and a close, and stays good for its owner', async () => {
    const a = await prepared(eng);
    const b = await prepared(eng);
    for (const token of [b.reg, decodeRegistration(b.reg).token]) {
      const r = await registerPage(eng, token, { origin: a.origin });
      assert.deepEqual(r.reply, INVALID, 'a page using another origin\'s token');
      assert.ok(r.closed, 'closed after the error');
    }
    // a local process (no Origin) holding a page's token: the session is the page's, not the process's
    const local = await registerPage(eng, b.reg);
    assert.deepEqual(local.reply, INVALID, 'a local process using a page\'s token');
    // and a page can't take a local process's session
    const lp = await sessionApi(eng).prepare({});
    const stolen = await registerPage(eng, lp.json.registrationToken, { origin: a.origin });
    assert.deepEqual(stolen.reply, INVALID, 'a page using a local process\'s token');
    // none of this spent them
    assert.equal((await registerPage(eng, b.reg, { origin: b.origin })).reply.type, 'registerSuccess');
    assert.equal((await registerPage(eng, lp.json.registrationToken)).reply.type, 'registerSuccess');
    assert.equal((await registerPage(eng, a.reg, { origin: a.origin })).reply.type, 'registerSuccess');
  });

  it('register: a bad token is answered {type: "error", message}, then a close frame, then the end of the TCP connection', async () => {
    const a = await prepared(eng);
    for (const token of ['', 'x'.repeat(43), decodeRegistration(a.reg).token.slice(1)]) {
      const s = await rawUpgrade(eng, '/webmcp/register', { origin: a.origin });
      await s.send(frame({ opcode: OP.text, payload: JSON.stringify({ type: 'register', token }) }));
      const c = await s.waitClosed(8000);
      assert.deepEqual(s.texts().map((t) => JSON.parse(t)), [INVALID], `token ${JSON.stringify(token)}`);
      assert.equal(c.code, 1000);
      s.destroy();
    }
  });

  it('register: one token raced on many sockets at once, many times: exactly one wins', async () => {
    const a = await prepared(eng);
    const rounds = 12;
    const sockets = 16;
    for (let round = 0; round < rounds; round++) {
      const prep = await a.api.prepare({});
      assert.equal(prep.status, 201, prep.body);
      // Open every socket first, then send the token on all of them in the same tick.
      const opened = await Promise.all(Array.from({ length: sockets }, () => wsOpen(wsUrl(eng, '/webmcp/register'), { origin: a.origin })));
      const recs = opened.map((r) => {
        assert.ok(r.ws, `register upgrade: ${r.status}`);
        return recordSocket(r.ws);
      });
      const inner = decodeRegistration(prep.json.registrationToken).token;
      recs.forEach((s, i) => s.send({ type: 'register', token: i % 2 ? inner : prep.json.registrationToken }));
      const replies = await Promise.all(recs.map((s) => s.waitFor(() => true, 8000)));
      const wins = replies.filter((m) => m.type === 'registerSuccess');
      assert.equal(wins.length, 1, `round ${round}: ${JSON.stringify(replies)}`);
      assert.equal(replies.filter((m) => JSON.stringify(m) === JSON.stringify(INVALID)).length, sockets - 1);
      await Promise.all(recs.map((s) => s.waitClosed(8000)));
      // the session's sessions-per-origin budget: end it before the next round
      assert.equal((await a.api.close(prep.json.sessionId)).status, 200);
    }
    assert.equal((await a.api.close(a.sid)).status, 200);
  });

  it('channel: a token of another origin, another session or a local process is 401 before the upgrade', async () => {
    const a = await prepared(eng);
    const b = await prepared(eng);
    const ra = (await registerPage(eng, a.reg, { origin: a.origin })).reply;
    const rb = (await registerPage(eng, b.reg, { origin: b.origin })).reply;
    const withToken = (ch, t) => `${ch}?token=${encodeURIComponent(t)}`;
    // B has a grant of its own, and knows A's channel and its token: still not A's session
    await refused(eng, withToken(ra.channel, ra.token), { origin: b.origin }, 401, 'another granted origin with the right channel and token');
    await refused(eng, withToken(rb.channel, ra.token), { origin: b.origin }, 401, 'its own channel with another session\'s token');
    await refused(eng, withToken(ra.channel, ra.token), {}, 401, 'a local process with a page\'s channel and token');
    // a second session of the same origin: its token doesn't open the first one's channel
    const a2 = await a.api.prepare({});
    const ra2 = (await registerPage(eng, a2.json.registrationToken, { origin: a.origin })).reply;
    await refused(eng, withToken(ra.channel, ra2.token), { origin: a.origin }, 401, 'the same origin\'s other session');
    // the registration token is not a channel token
    await refused(eng, withToken(ra.channel, decodeRegistration(a.reg).token), { origin: a.origin }, 401, 'a spent registration token');
    // a token given twice, or with different case
    await refused(eng, `${withToken(ra.channel, 'wrong')}&token=${ra.token}`, { origin: a.origin }, 401, 'a wrong token first, the right one second');
    await refused(eng, withToken(ra.channel, ra.token.toUpperCase() === ra.token ? ra.token.toLowerCase() : ra.token.toUpperCase()),
      { origin: a.origin }, 401, 'the token in another case');
    // the right one still works
    const ok = await wsOpen(wsUrl(eng, withToken(ra.channel, ra.token)), { origin: a.origin });
    assert.ok(ok.ws, `${ok.status}`);
    ok.ws.close();
  });

  it('no grant, no upgrade (403): unknown origins, the engine\'s own page, a browser that sent no Origin, odd Origins', async () => {
    const a = await prepared(eng);
    const ra = (await registerPage(eng, a.reg, { origin: a.origin })).reply;
    const channel = `${ra.channel}?token=${encodeURIComponent(ra.token)}`;
    const callers = [
      [{ origin: freshOrigin('unknown') }, 'an origin without a grant'],
      [{ origin: a.origin.replace('https:', 'http:') }, 'the granted host over another scheme'],
      [{ origin: `${a.origin}:8443` }, 'the granted host on another port'],
      [{ origin: `https://sub.${a.origin.slice('https://'.length)}` }, 'a subdomain of the granted origin'],
      [{ origin: `http://127.0.0.1:${eng.port}` }, 'the engine\'s own page'],
      [{ headers: { 'Sec-Fetch-Site': 'cross-site', 'Sec-Fetch-Mode': 'websocket' } }, 'a browser that sent no Origin'],
      [{ origin: 'null' }, 'Origin: null'],
      [{ origin: 'file://' }, 'a file: page'],
      [{ origin: 'chrome-extension://abcdefghijklmnopabcdefghijklmnop' }, 'an extension'],
      [{ headers: { Origin: `${a.origin}, ${a.origin}` } }, 'two Origins in one header'],
    ];
    for (const [who, what] of callers) {
      for (const p of ['/webmcp/register', channel]) {
        const r = await rawUpgradeOrRefusal(eng, p, who);
        if (typeof r.destroy === 'function') r.destroy();
        assert.ok(r.status === 403, `${what} on ${p.split('?')[0]}: ${r.status ?? 101}\n${r.head ?? ''}`);
      }
    }
  });

  it('a revoke closes the open channel; then both upgrades are 403, and the tokens are dead for good', async () => {
    const a = await prepared(eng);
    const b = await prepared(eng);
    const ra = (await registerPage(eng, a.reg, { origin: a.origin })).reply;
    const channel = `${ra.channel}?token=${encodeURIComponent(ra.token)}`;
    const open = await wsOpen(wsUrl(eng, channel), { origin: a.origin });
    assert.ok(open.ws);
    const sock = recordSocket(open.ws);
    const spare = await a.api.prepare({});  // a registration token never used
    assert.equal(spare.status, 201, spare.body);
    const rv = await runCli(['sites', 'revoke', a.origin], { home: eng.home });
    assert.equal(rv.code, 0, rv.stderr);
    assert.ok(await sock.waitClosed(5000).catch(() => null), 'the revoke closed the open channel');
    assert.ok(await poll(async () => (await web(eng, a.origin, '/session/prepare', { method: 'POST', body: {}, token: a.token })).status === 401,
      { timeoutMs: 5000 }), 'the engine took the revoke');
    await refused(eng, channel, { origin: a.origin }, 403, 'the channel after a revoke');
    await refused(eng, '/webmcp/register', { origin: a.origin }, 403, 'register after a revoke');
    // paired again: the old tokens stay dead
    await pairCli(eng, a.origin);
    await refused(eng, channel, { origin: a.origin }, 401, 'the old channel token after pairing again');
    assert.deepEqual((await registerPage(eng, spare.json.registrationToken, { origin: a.origin })).reply, INVALID, 'an old registration token');
    // the other origin was never touched
    assert.equal((await registerPage(eng, b.reg, { origin: b.origin })).reply.type, 'registerSuccess');
  });

  it('many parallel upgrades of one channel: one socket stays, the others are closed', async () => {
    const a = await prepared(eng);
    const ra = (await registerPage(eng, a.reg, { origin: a.origin })).reply;
    const url = wsUrl(eng, `${ra.channel}?token=${encodeURIComponent(ra.token)}`);
    const opened = await Promise.all(Array.from({ length: 20 }, () => wsOpen(url, { origin: a.origin })));
    const recs = opened.map((r) => recordSocket(r.ws));
    // By readyState, not by the recorded close: a socket the engine closed while the others were still
    // opening had emitted its 'close' before recordSocket listened for it.
    const open = () => opened.filter((r) => r.ws.readyState !== r.ws.CLOSED).length;
    assert.ok(await poll(() => open() === 1, { timeoutMs: 20000 }), `open sockets: ${open()}`);
    const live = recs[opened.findIndex((r) => r.ws.readyState !== r.ws.CLOSED)];
    live.send({ type: 'ping' });
    assert.deepEqual(await live.waitFor('pong', 5000), { type: 'pong' });
    live.close();
  });
});

const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (install the chromium package to run the browser tests)`;

describe('WebSocket hijacking from a real page (headless Chromium)', { skip, timeout: 120000 }, () => {
  let eng;
  let site;
  let browser;
  before(async () => {
    [eng, site, browser] = await Promise.all([
      startFakeEngine({ args: ['--port', '0', '--no-open', '-v'] }),
      startSite({ pages: { '/': '<!doctype html><html><head><meta charset="utf-8"></head><body>page</body></html>' } }),
      launchBrowser(['--host-resolver-rules=MAP *.test 127.0.0.1']),
    ]);
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await site?.close();
    await stopAll();
  });

  /** In a page at `origin`, opens `url` as a WebSocket: 'open' (then sends `send`, returns the first message) or the close. */
  async function tryInPage(origin, url, send) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    const r = await page.evaluate(([u, s]) => new Promise((resolve) => {
      const ws = new WebSocket(u);
      ws.onopen = () => {
        if (!s) return resolve({ open: true });
        ws.onmessage = (e) => resolve({ open: true, message: JSON.parse(e.data) });
        ws.send(s);
      };
      ws.onclose = (e) => resolve({ open: false, code: e.code });
      setTimeout(() => resolve({ timeout: true }), 8000);
    }), [url, send]);
    await context.close();
    return r;
  }

  it('an attacker page can\'t open either channel (403 in the engine); with a stolen channel token, 401', async () => {
    const victim = `http://victim.test:${site.port}`;
    const attacker = `http://attacker.test:${site.port}`;
    const v = await prepared(eng, victim);
    const rv = (await registerPage(eng, v.reg, { origin: victim })).reply;
    const channel = wsUrl(eng, `${rv.channel}?token=${encodeURIComponent(rv.token)}`);
    const from = eng.stderrLines.length;
    assert.deepEqual(await tryInPage(attacker, wsUrl(eng, '/webmcp/register')), { open: false, code: 1006 });
    assert.deepEqual(await tryInPage(attacker, channel), { open: false, code: 1006 });
    const logged = () => eng.stderrLines.slice(from).filter((l) => /event=http\.\w+ method=GET path=\/webmcp\//.test(l));
    assert.ok(await poll(() => logged().length >= 2, { timeoutMs: 3000 }), eng.stderrLines.slice(from).join('\n'));
    for (const l of logged()) assert.match(l, /caller=web status=403/, l);
    // the attacker pairs too (its own grant), and tries the victim's channel and registration token
    await pairCli(eng, attacker);
    const v2 = await v.api.prepare({});
    const from2 = eng.stderrLines.length;
    assert.deepEqual(await tryInPage(attacker, channel), { open: false, code: 1006 });
    assert.ok(await poll(() => eng.stderrLines.slice(from2).some((l) => /path=\/webmcp\/channel\/\S+ caller=web status=401/.test(l)), { timeoutMs: 3000 }),
      eng.stderrLines.slice(from2).join('\n'));
    const stolen = await tryInPage(attacker, wsUrl(eng, '/webmcp/register'), JSON.stringify({ type: 'register', token: v2.json.registrationToken }));
    assert.deepEqual(stolen, { open: true, message: INVALID });
    // the victim's own page still gets in
    const mine = await tryInPage(victim, wsUrl(eng, '/webmcp/register'), JSON.stringify({ type: 'register', token: v2.json.registrationToken }));
    assert.equal(mine.message?.type, 'registerSuccess', JSON.stringify(mine));
    assert.deepEqual(await tryInPage(victim, channel), { open: true });
  });
});
