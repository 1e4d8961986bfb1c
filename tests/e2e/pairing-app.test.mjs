// Pairing with the desktop app (--app): admin API, silence, JSON lines on stdout; and --dev-pairing.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  startEngine, stopAll, runCli, request, admin, web, local, claim, pairApp, sleep, tryJson,
  nonce, freshOrigin, assertError, assertSilent, assertCors, assertJsonType,
  ADMIN_TOKEN, REQUEST_ID_RE, TOKEN_RE,
} from './helpers.mjs';

const COOLDOWN = 1500;

/** The listed fields have these values (a 0.x engine may add fields). */
function assertFields(obj, expected) {
  for (const [k, v] of Object.entries(expected)) assert.deepEqual(obj[k], v, `${k} in ${JSON.stringify(obj)}`);
}

/** Every way a page could probe the engine. */
function probes(origin) {
  const pre = (p, m = 'GET', extra = {}) => ({
    method: 'OPTIONS', path: p,
    headers: { Origin: origin, 'Access-Control-Request-Method': m, 'Access-Control-Request-Private-Network': 'true', ...extra },
  });
  return [
    { method: 'GET', path: '/health', headers: { Origin: origin } },
    { method: 'GET', path: '/health', headers: { Origin: origin, Authorization: 'Bearer ' + 'A'.repeat(43) } },
    pre('/health'),
    pre('/connect/claim', 'POST', { 'Access-Control-Request-Headers': 'content-type' }),
    pre('/session/prepare', 'POST', { 'Access-Control-Request-Headers': 'content-type,authorization' }),
    pre('/no/such/route'),
    { method: 'POST', path: '/connect/claim', headers: { Origin: origin }, body: { nonce: nonce() } },
    { method: 'POST', path: '/connect/claim', headers: { Origin: origin }, body: '{' },
    { method: 'POST', path: '/connect/claim', headers: { Origin: origin } },
    { method: 'GET', path: '/no/such/route', headers: { Origin: origin } },
    { method: 'GET', path: '/session/x', headers: { Origin: origin } },
    { method: 'POST', path: '/session/prepare', headers: { Origin: origin }, body: {} },
    { method: 'GET', path: '/connect/AAAAAAAAAAAAAAAAAAAAAAAA', headers: { Origin: origin } },
    { method: 'GET', path: '/admin/pairing', headers: { Origin: origin, Authorization: `Bearer ${ADMIN_TOKEN}` } },
    { method: 'DELETE', path: '/admin/sites?origin=x', headers: { Origin: origin } },
    // The AI's MCP endpoint shares the listener: silent too, bearer or not.
    pre('/webmcp/mcp', 'POST', { 'Access-Control-Request-Headers': 'content-type,authorization' }),
    { method: 'POST', path: '/webmcp/mcp', headers: { Origin: origin }, body: { jsonrpc: '2.0', id: 1, method: 'ping' } },
    { method: 'POST', path: '/webmcp/mcp', headers: { Origin: origin, Authorization: 'Bearer ' + 'A'.repeat(43) }, body: {} },
    { method: 'GET', path: '/webmcp/mcp', headers: { Origin: origin, Accept: 'text/event-stream' } },
  ];
}

async function assertSilentTo(eng, origin) {
  for (const p of probes(origin)) {
    const r = await request(eng, p);
    assertSilent(r, `${p.method} ${p.path} from ${origin}`);
  }
}

describe('app mode startup', { timeout: 30000 }, () => {
  for (const [name, args, token] of [
    ['--app without LEURIA_ADMIN_TOKEN', ['--app', '--port', '0', '--no-open'], undefined],
    ['--app with a short LEURIA_ADMIN_TOKEN', ['--app', '--port', '0', '--no-open'], 'x'.repeat(31)],
    ['--dev-pairing without LEURIA_ADMIN_TOKEN', ['--dev-pairing', '--port', '0', '--no-open'], undefined],
  ]) {
    it(`${name} exits 1 at once`, async () => {
      const r = await runCli(args, { env: token ? { LEURIA_ADMIN_TOKEN: token } : {}, timeoutMs: 5000 });
      assert.equal(r.timedOut, false, 'the engine must exit, not serve');
      assert.equal(r.code, 1, `exit code; stderr: ${r.stderr}`);
      assert.ok(r.ms < 3000, `took ${r.ms} ms`);
      assert.match(r.stderr, /LEURIA_ADMIN_TOKEN/);
      const lines = r.stdout.split('\n').filter(Boolean);
      assert.ok(lines.length >= 1, 'a JSON error line on stdout');
      for (const l of lines) assert.ok(tryJson(l), `stdout must be JSON lines only, got ${JSON.stringify(l)}`);
      const err = lines.map(tryJson).find((j) => j.type === 'error');
      assert.ok(err, `stdout: ${r.stdout}`);
      assert.equal(typeof err.message, 'string');
    });
  }

  it('a 32-character token is enough', async () => {
    const eng = await startEngine({ app: true, adminToken: 'k'.repeat(32) });
    const r = await admin(eng, '/admin/pairing', { token: 'k'.repeat(32) });
    assert.equal(r.status, 200, r.body);
    await eng.stop();
  });
});

describe('app mode (--app)', { timeout: 90000 }, () => {
  let eng;
  before(async () => {
    eng = await startEngine({ app: true, timings: { claimWaitMs: 300, cooldownMs: COOLDOWN } });
  });
  after(stopAll);

  it('prints {"type":"ready","port"} first, only JSON lines on stdout, the URL on stderr', async () => {
    assertFields(JSON.parse(eng.lines[0]), { type: 'ready', port: eng.port });
    for (const l of eng.lines) assert.ok(tryJson(l), `stdout line is not JSON: ${JSON.stringify(l)}`);
    const ok = await (async () => {
      for (let i = 0; i < 20; i++) {
        if (eng.stderrLines.some((l) => l.includes(`http://127.0.0.1:${eng.port}`))) return true;
        await sleep(50);
      }
      return false;
    })();
    assert.ok(ok, `stderr should name the URL; stderr: ${eng.stderrLines.join('\n')}`);
    const h = await local(eng, '/health');
    assert.equal(h.json.approvals, 'app');
  });

  describe('admin API auth', () => {
    it('needs the admin token', async () => {
      for (const token of [null, 'wrong', ADMIN_TOKEN + 'x', ADMIN_TOKEN.slice(0, -1)]) {
        const r = await admin(eng, '/admin/pairing', { token });
        assertError(r, 401, { error: 'Unauthorized' });
        const l = await admin(eng, '/admin/pairing/link', { token, body: { origin: freshOrigin('auth'), nonce: nonce() } });
        assertError(l, 401, { error: 'Unauthorized' });
        const d = await admin(eng, '/admin/sites?origin=https%3A%2F%2Fexample.com', { token, method: 'DELETE' });
        assertError(d, 401, { error: 'Unauthorized' });
      }
      const basic = await admin(eng, '/admin/pairing', { token: null, headers: { Authorization: ADMIN_TOKEN } });
      assertError(basic, 401, { error: 'Unauthorized' });
    });

    it('accepts no Origin and the app\'s webview origins', async () => {
      for (const origin of [undefined, 'tauri://localhost', 'http://tauri.localhost', 'https://tauri.localhost']) {
        const r = await admin(eng, '/admin/pairing', { headers: origin ? { Origin: origin } : {} });
        assert.equal(r.status, 200, `Origin ${origin}: ${r.status} ${r.body}`);
        assertJsonType(r);
        assert.ok(Array.isArray(r.json.requests));
      }
    });

    it('refuses web pages even with the admin token', async () => {
      for (const origin of ['https://evil.example', `http://127.0.0.1:${eng.port}`]) {
        const r = await admin(eng, '/admin/pairing', { headers: { Origin: origin } });
        assert.equal(r.status, 403, `Origin ${origin}: ${r.status} ${r.body}`);
      }
    });

    it('preflight for /admin/* from the app allows DELETE', async () => {
      const r = await request(eng, {
        method: 'OPTIONS', path: '/admin/sites',
        headers: { Origin: 'tauri://localhost', 'Access-Control-Request-Method': 'DELETE', 'Access-Control-Request-Headers': 'authorization' },
      });
      assert.equal(r.status, 204, `${r.status} ${r.body}`);
      assert.equal(r.headers['access-control-allow-methods'], 'GET, POST, DELETE, OPTIONS');
      assert.equal(r.headers['access-control-allow-origin'], 'tauri://localhost');
    });
  });

  describe('silence', () => {
    it('says nothing to a page it does not know, on every route', async () => {
      await assertSilentTo(eng, freshOrigin('silent'));
      await assertSilentTo(eng, 'http://localhost:3000');
    });

    it('still answers local processes', async () => {
      const r = await local(eng, '/health');
      assert.equal(r.status, 200);
      assertError(await local(eng, '/no/such/route'), 404, { error: 'Not found' });
      // The agent's MCP endpoint (no Origin) answers; a cross-site request without an Origin is a page's.
      assertError(await local(eng, '/webmcp/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'ping' } }), 401, { error: 'Unauthorized' });
      const crossSite = await request(eng, { method: 'POST', path: '/webmcp/mcp', headers: { 'Sec-Fetch-Site': 'cross-site' }, body: {} });
      assertSilent(crossSite, 'POST /webmcp/mcp, Sec-Fetch-Site: cross-site, no Origin');
    });
  });

  describe('link, claim, decide', () => {
    it('runs the whole flow, with JSON lines for the app', async () => {
      const o = freshOrigin('link');
      const n1 = nonce();
      const n2 = nonce();
      const needs = { tools: true, effort: 'standard', bogus: 1 };
      const from = eng.lines.length;
      const l = await admin(eng, '/admin/pairing/link', { body: { origin: o, app: 'Shop', nonce: n1, needs } });
      assert.equal(l.status, 201, l.body);
      assertJsonType(l);
      assert.match(l.json.requestId, REQUEST_ID_RE);
      const id = l.json.requestId;

      const line = await eng.waitForJson((j) => j.type === 'pairing', 2000, { from });
      assert.equal(line.requestId, id);
      assert.equal(line.origin, o);
      assert.equal(line.app, 'Shop');
      assert.deepEqual(line.needs, { tools: true, effort: 'standard' });
      assert.ok(!Number.isNaN(Date.parse(line.createdAt)), `createdAt ${line.createdAt}`);
      assert.equal(line.nonce, undefined, 'the nonce is a secret');

      const list = await admin(eng, '/admin/pairing');
      assert.equal(list.status, 200);
      const entry = list.json.requests.find((r) => r.requestId === id);
      assert.ok(entry, list.body);
      const { type, ...fields } = line;
      assert.deepEqual(entry, fields);

      // the linked origin is answered now
      const h = await web(eng, o, '/health');
      assert.equal(h.status, 200, h.body);
      assert.equal(h.json.paired, false);
      assertCors(h, o);
      const pre = await request(eng, { method: 'OPTIONS', path: '/connect/claim', headers: { Origin: o, 'Access-Control-Request-Method': 'POST' } });
      assert.equal(pre.status, 204);
      assertCors(pre, o);

      assertError(await claim(eng, o, { nonce: nonce() }), 404);
      assert.deepEqual((await claim(eng, o, { nonce: n1 })).json, { status: 'pending' });

      // a second link from the same origin updates the nonce
      const from2 = eng.lines.length;
      const l2 = await admin(eng, '/admin/pairing/link', { body: { origin: o, app: 'Shop', nonce: n2 } });
      assert.equal(l2.status, 201, l2.body);
      assert.equal(l2.json.requestId, id);
      assertError(await claim(eng, o, { nonce: n1 }), 404);
      assert.deepEqual((await claim(eng, o, { nonce: n2 })).json, { status: 'pending' });
      await sleep(100);
      assert.equal(eng.jsonLines(from2).filter((j) => j.type === 'pairing').length, 0, 'no second pairing line');

      // another origin with the nonce gets nothing (silence: it has no grant and no link)
      assertSilent(await claim(eng, freshOrigin('thief'), { nonce: n2 }), 'claim from another origin');

      const d = await admin(eng, `/admin/pairing/${id}`, { body: { allow: true } });
      assert.equal(d.status, 200, d.body);
      assert.deepEqual(d.json, { ok: true });
      const decided = await eng.waitForJson((j) => j.type === 'pairing_decided' && j.requestId === id, 2000);
      assertFields(decided, { type: 'pairing_decided', requestId: id, origin: o, decision: 'allowed' });
      assert.equal((await admin(eng, '/admin/pairing')).json.requests.find((r) => r.requestId === id), undefined, 'decided requests are not listed');

      assertError(await admin(eng, `/admin/pairing/${id}`, { body: { allow: false } }), 410);

      const got = await claim(eng, o, { nonce: n2 });
      assert.equal(got.status, 200, got.body);
      assert.equal(got.json.status, 'allowed');
      assert.match(got.json.token, TOKEN_RE);
      const token = got.json.token;

      // with a grant the origin is answered, with or without the token
      assert.equal((await web(eng, o, '/health', { token })).json.paired, true);
      const noTok = await web(eng, o, '/health');
      assert.equal(noTok.status, 200);
      assert.equal(noTok.json.paired, false);
      assertError(await web(eng, o, '/session/x', { token: 'wrong' }), 401, { code: 'not_paired' });
      assertError(await web(eng, o, '/no/such/route', { token }), 404);
      // no link any more: a claim gets 404, not silence
      assertError(await claim(eng, o, { nonce: n2 }), 404);
      assertError(await claim(eng, o, { nonce: nonce() }), 404);
    });

    it('normalizes the linked origin', async () => {
      const host = freshOrigin('norm').slice('https://'.length);
      const n = nonce();
      const from = eng.lines.length;
      const l = await admin(eng, '/admin/pairing/link', { body: { origin: `HTTPS://${host.toUpperCase()}:443`, nonce: n } });
      assert.equal(l.status, 201, l.body);
      const line = await eng.waitForJson((j) => j.type === 'pairing', 2000, { from });
      assert.equal(line.origin, `https://${host}`);
      assert.deepEqual((await claim(eng, `https://${host}`, { nonce: n })).json, { status: 'pending' });
      assert.deepEqual((await claim(eng, `HTTPS://${host.toUpperCase()}`, { nonce: n })).json, { status: 'pending' });
      assert.equal((await admin(eng, `/admin/pairing/${l.json.requestId}`, { body: { allow: true } })).status, 200);
      const got = await claim(eng, `https://${host}`, { nonce: n });
      assert.equal(got.json.status, 'allowed');
    });

    it('refuses malformed links', async () => {
      for (const body of [{ nonce: nonce() }, { origin: freshOrigin('bad') }, { origin: 'null', nonce: nonce() }, { origin: 'file://', nonce: nonce() }, { origin: 'not an origin', nonce: nonce() }, { origin: freshOrigin('bad'), nonce: 'short' }]) {
        const r = await admin(eng, '/admin/pairing/link', { body });
        assertError(r, 400);
      }
      assertError(await admin(eng, '/admin/pairing/link', { body: '{', headers: { 'Content-Type': 'application/json' } }), 400, { error: 'Invalid JSON body' });
    });

    it('admin decide: unknown request 404', async () => {
      assertError(await admin(eng, '/admin/pairing/AAAAAAAAAAAAAAAAAAAAAAAA', { body: { allow: true } }), 404);
    });

    it('deny: denied once, silence again, links 429 during the cooldown', async () => {
      const o = freshOrigin('deny');
      const n = nonce();
      const l = await admin(eng, '/admin/pairing/link', { body: { origin: o, nonce: n } });
      assert.equal(l.status, 201);
      const id = l.json.requestId;
      const d = await admin(eng, `/admin/pairing/${id}`, { body: { allow: false } });
      assert.deepEqual(d.json, { ok: true });
      const decided = await eng.waitForJson((j) => j.type === 'pairing_decided' && j.requestId === id, 2000);
      assert.equal(decided.decision, 'denied');
      assert.equal(decided.origin, o);
      const r = await claim(eng, o, { nonce: n });
      assert.equal(r.status, 200, r.body);
      assert.equal(r.json.status, 'denied');
      assert.equal(r.json.token, undefined);
      const collectedAt = Date.now();
      assertSilent(await web(eng, o, '/health'), 'after a collected No');
      assertSilent(await claim(eng, o, { nonce: n }), 'claim after a collected No');
      const l2 = await admin(eng, '/admin/pairing/link', { body: { origin: o, nonce: nonce() } });
      assertError(l2, 429);
      await sleep(Math.max(0, collectedAt + COOLDOWN + 300 - Date.now()));
      const l3 = await admin(eng, '/admin/pairing/link', { body: { origin: o, nonce: nonce() } });
      assert.equal(l3.status, 201, `after the cooldown: ${l3.status} ${l3.body}`);
      assert.notEqual(l3.json.requestId, id);
      await admin(eng, `/admin/pairing/${l3.json.requestId}`, { body: { allow: false } });
    });

    it('DELETE /admin/sites revokes at once', async () => {
      const o = freshOrigin('del');
      const { token } = await pairApp(eng, o, { app: 'Del' });
      assert.equal((await web(eng, o, '/health', { token })).json.paired, true);
      const r = await admin(eng, `/admin/sites?origin=${encodeURIComponent(o)}`, { method: 'DELETE' });
      assert.equal(r.status, 200, r.body);
      assert.deepEqual(r.json, { removed: true });
      // no grant and no link: silence, whatever the token
      assertSilent(await web(eng, o, '/health', { token }), 'revoked token');
      assertSilent(await web(eng, o, '/session/x', { token }), 'revoked token');
      const again = await admin(eng, `/admin/sites?origin=${encodeURIComponent(o)}`, { method: 'DELETE' });
      assert.deepEqual(again.json, { removed: false });
      const unknown = await admin(eng, `/admin/sites?origin=${encodeURIComponent(freshOrigin('none'))}`, { method: 'DELETE' });
      assert.deepEqual(unknown.json, { removed: false });
    });
  });
});

describe('app mode limits', { timeout: 30000 }, () => {
  after(stopAll);

  it('allows at most 20 pending links', async () => {
    const eng = await startEngine({ app: true });
    for (let i = 0; i < 20; i++) {
      const r = await admin(eng, '/admin/pairing/link', { body: { origin: freshOrigin('lim'), nonce: nonce() } });
      assert.equal(r.status, 201, `link ${i + 1}: ${r.status} ${r.body}`);
    }
    assertError(await admin(eng, '/admin/pairing/link', { body: { origin: freshOrigin('lim'), nonce: nonce() } }), 429);
    assert.equal((await admin(eng, '/admin/pairing')).json.requests.length, 20);
    await eng.stop();
  });

  it('expires links: pairing_decided expired, 410 to the app and to the waiting claim', async () => {
    const eng = await startEngine({ app: true, timings: { claimWaitMs: 5000, expiryMs: 800 } });
    const o = freshOrigin('exp');
    const n = nonce();
    const l = await admin(eng, '/admin/pairing/link', { body: { origin: o, nonce: n } });
    assert.equal(l.status, 201);
    const id = l.json.requestId;
    const ev = await eng.waitForJson((j) => j.type === 'pairing_decided' && j.requestId === id, 3000);
    assertFields(ev, { type: 'pairing_decided', requestId: id, origin: o, decision: 'expired' });
    assertError(await admin(eng, `/admin/pairing/${id}`, { body: { allow: true } }), 410);
    assert.equal((await admin(eng, '/admin/pairing')).json.requests.length, 0);
    assertError(await claim(eng, o, { nonce: n }), 410);
    await eng.stop();
  });

  it('a waiting claim gets 410 at expiry; a later decision too', async () => {
    const eng = await startEngine({ app: true, timings: { claimWaitMs: 5000, expiryMs: 800 } });
    const o = freshOrigin('exp');
    const n = nonce();
    const l = await admin(eng, '/admin/pairing/link', { body: { origin: o, nonce: n } });
    const id = l.json.requestId;
    const t0 = Date.now();
    assertError(await claim(eng, o, { nonce: n }), 410);
    assert.ok(Date.now() - t0 < 3000);
    assertError(await admin(eng, `/admin/pairing/${id}`, { body: { allow: true } }), 410);
    await eng.stop();
  });
});

describe('--dev-pairing', { timeout: 30000 }, () => {
  let eng;
  before(async () => {
    eng = await startEngine({ devPairing: true });
  });
  after(stopAll);

  it('answers every page (no silence) and prints JSON lines', async () => {
    assertFields(JSON.parse(eng.lines[0]), { type: 'ready', port: eng.port });
    const o = freshOrigin('dev');
    const h = await web(eng, o, '/health');
    assert.equal(h.status, 200);
    assert.equal(h.json.paired, false);
    assertCors(h, o);
    const pre = await request(eng, { method: 'OPTIONS', path: '/health', headers: { Origin: o, 'Access-Control-Request-Method': 'GET' } });
    assert.equal(pre.status, 204);
    assertCors(pre, o);
    assertError(await web(eng, o, '/session/x'), 401, { code: 'not_paired' });
    // no link: 404, not silence, and no request is created
    assertError(await claim(eng, o, { nonce: nonce() }), 404);
    assert.equal((await admin(eng, '/admin/pairing')).json.requests.length, 0);
  });

  it('pairs through the admin API', async () => {
    const o = freshOrigin('dev');
    const { token } = await pairApp(eng, o);
    assert.equal((await web(eng, o, '/health', { token })).json.paired, true);
    for (const l of eng.lines) assert.ok(tryJson(l), `stdout line is not JSON: ${l}`);
  });
});
