// The gate every request goes through: Host, Origin, CORS, preflight, bodies, 404 and error shapes (CLI mode);
// then, from the attacker's side, browsers' requests without Origin and pages' POSTs that aren't JSON (both modes).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import {
  startEngine, stopAll, request, rawHttp, rawSend, web, local, own, admin, ADMIN_TOKEN, pairCli, pairApp,
  startCliClaim, assertError, assertJsonType, assertCors, assertSilent, accessControlHeaders, freshOrigin, nonce, sleep,
} from './helpers.mjs';

const WEB = 'https://example.com';

describe('gate (CLI engine)', { timeout: 60000 }, () => {
  let eng;
  before(async () => {
    eng = await startEngine();
  });
  after(stopAll);

  describe('Host', () => {
    it('accepts 127.0.0.1:<port> and localhost:<port>', async () => {
      for (const host of [`127.0.0.1:${eng.port}`, `localhost:${eng.port}`]) {
        const r = await request(eng, { path: '/health', headers: { Host: host } });
        assert.equal(r.status, 200, `Host ${host}: ${r.status} ${r.body}`);
        assert.equal(r.json?.ok, true);
      }
    });

    it('rejects any other Host with 403 host not allowed', async () => {
      const other = eng.port === 65535 ? eng.port - 1 : eng.port + 1;
      const bad = [
        `127.0.0.1:${other}`,
        `localhost:${other}`,
        'evil.com',
        `evil.com:${eng.port}`,
        '127.0.0.1',
        'localhost',
        `localhost.evil.com:${eng.port}`,
        `127.0.0.1.evil.com:${eng.port}`,
        `127.1:${eng.port}`,
        `[::1]:${eng.port}`,
        `0.0.0.0:${eng.port}`,
        `2130706433:${eng.port}`,
        `0x7f.1:${eng.port}`,
        `0x7f000001:${eng.port}`,
        `[::ffff:127.0.0.1]:${eng.port}`,
        `localhost.:${eng.port}`,
        `127.0.0.1.:${eng.port}`,
        `x.localhost:${eng.port}`,
        `127.0.0.1:${eng.port}@evil.com`,
        `127.0.0.1:0${eng.port}`,
        '',
      ];
      for (const host of bad) {
        const r = await request(eng, { path: '/health', headers: { Host: host } });
        assertError(r, 403, { error: 'host not allowed' });
      }
    });

    it('checks the Host before anything else (web origin, unknown route, preflight)', async () => {
      const h = { Host: 'evil.com' };
      assertError(await request(eng, { path: '/health', headers: { ...h, Origin: WEB } }), 403, { error: 'host not allowed' });
      assertError(await request(eng, { path: '/no/such/route', headers: h }), 403, { error: 'host not allowed' });
      assertError(await request(eng, { method: 'POST', path: '/connect/claim', headers: { ...h, Origin: WEB }, body: { nonce: nonce() } }), 403, { error: 'host not allowed' });
      const pre = await request(eng, { method: 'OPTIONS', path: '/health', headers: { ...h, Origin: WEB, 'Access-Control-Request-Method': 'GET' } });
      assert.equal(pre.status, 403, `preflight with a bad Host: ${pre.status}`);
      assert.notEqual(pre.headers['access-control-allow-origin'], WEB, 'no CORS grant with a bad Host');
    });

    it('rejects a request without Host (raw HTTP/1.1)', async () => {
      const r = await rawHttp(eng, 'GET /health HTTP/1.1\r\nConnection: close\r\n\r\n');
      assertError(r, 403, { error: 'host not allowed' });
    });

    it('rejects two Host headers', async () => {
      const good = `127.0.0.1:${eng.port}`;
      for (const [a, b] of [[good, 'evil.com'], ['evil.com', good], [good, good], [good, `localhost:${eng.port}`]]) {
        const r = await rawHttp(eng, `GET /health HTTP/1.1\r\nHost: ${a}\r\nHost: ${b}\r\nConnection: close\r\n\r\n`);
        assertError(r, 403, { error: 'host not allowed' });
      }
    });
  });

  describe('Origin', () => {
    it('a local process (no Origin) gets no CORS headers', async () => {
      const r = await local(eng, '/health');
      assert.equal(r.status, 200);
      assert.equal(r.headers['access-control-allow-origin'], undefined);
      assert.equal(r.json.paired, undefined, 'local callers get no paired field');
    });

    it('the engine\'s own page may use /health and /connect/*', async () => {
      for (const origin of [`http://127.0.0.1:${eng.port}`, `http://localhost:${eng.port}`]) {
        const h = await web(eng, origin, '/health');
        assert.equal(h.status, 200, `${origin} /health: ${h.status} ${h.body}`);
        assert.equal(h.json.leuria, '0.1.0');
        // /connect/* is reachable: an unknown request id is a 404, not a 403
        assertError(await web(eng, origin, '/connect/AAAAAAAAAAAAAAAAAAAAAAAA/state'), 404);
      }
    });

    it('the engine\'s own page gets 403 not allowed for this caller elsewhere', async () => {
      const origin = `http://127.0.0.1:${eng.port}`;
      assertError(await web(eng, origin, '/session/prepare', { body: {} }), 403, { error: 'not allowed for this caller' });
      assertError(await web(eng, origin, '/session/abc'), 403, { error: 'not allowed for this caller' });
      assertError(await web(eng, origin, '/embed', { body: { texts: ['x'] } }), 403, { error: 'not allowed for this caller' });
      assertError(await web(eng, `http://localhost:${eng.port}`, '/session/prepare', { body: {} }), 403, { error: 'not allowed for this caller' });
    });

    it('an origin on the engine\'s host but another port is a web page, not the engine', async () => {
      const other = eng.port === 65535 ? eng.port - 1 : eng.port + 1;
      const origin = `http://127.0.0.1:${other}`;
      const r = await web(eng, origin, '/session/abc');
      assertError(r, 401, { code: 'not_paired' });
      const h = await web(eng, origin, '/health');
      assert.equal(h.json.paired, false);
      // https on the engine's port is not the engine's own page either
      const r2 = await web(eng, `https://127.0.0.1:${eng.port}`, '/connect/AAAAAAAAAAAAAAAAAAAAAAAA/decide', { body: { allow: true } });
      assert.equal(r2.status, 403, `decide from https://127.0.0.1:<port>: ${r2.status} ${r2.body}`);
    });

    it('rejects origins that are not http: or https: with 403 origin not allowed', async () => {
      for (const origin of ['null', 'file://', 'chrome-extension://abc', 'garbage', 'ftp://example.com', 'ws://example.com', 'javascript:alert(1)', 'data:text/html,x']) {
        for (const p of ['/health', '/connect/claim', '/session/x']) {
          const r = await web(eng, origin, p, p === '/connect/claim' ? { body: { nonce: nonce() } } : {});
          assertError(r, 403, { error: 'origin not allowed' });
          assert.equal(r.headers['access-control-allow-origin'], undefined, `no ACAO for ${origin}`);
        }
      }
    });
  });

  describe('CORS', () => {
    it('echoes a web origin as sent, with Vary: Origin and Allow-Private-Network', async () => {
      for (const origin of [WEB, 'http://example.com:8080', 'HTTPS://Example.COM:443', 'http://localhost:3000']) {
        const r = await web(eng, origin, '/health');
        assert.equal(r.status, 200, `${origin}: ${r.status} ${r.body}`);
        assertCors(r, origin);
        assertJsonType(r);
      }
    });

    it('error responses to a web origin carry CORS headers too', async () => {
      const r = await web(eng, WEB, '/session/x');
      assertError(r, 401, { code: 'not_paired' });
      assertCors(r, WEB);
      const c = await web(eng, WEB, '/connect/claim', { body: {} });
      assertError(c, 400);
      assertCors(c, WEB);
    });

    it('answers preflights with 204 and the allowed methods, headers and max age', async () => {
      for (const p of ['/health', '/connect/claim', '/session/prepare', '/session/abc/stream', '/no/such/route']) {
        const r = await request(eng, {
          method: 'OPTIONS', path: p,
          headers: {
            Origin: WEB,
            'Access-Control-Request-Method': 'POST',
            'Access-Control-Request-Headers': 'content-type,authorization',
            'Access-Control-Request-Private-Network': 'true',
          },
        });
        assert.equal(r.status, 204, `OPTIONS ${p}: ${r.status} ${r.body}`);
        assert.equal(r.body, '');
        assertCors(r, WEB);
        assert.equal(r.headers['access-control-allow-methods'], 'GET, POST, OPTIONS', p);
        assert.equal(r.headers['access-control-allow-headers'], 'Content-Type, Authorization', p);
        assert.equal(r.headers['access-control-max-age'], '600', p);
      }
    });

    it('a preflight from a local process or a bad origin gets no CORS grant', async () => {
      const r = await request(eng, { method: 'OPTIONS', path: '/health', headers: { Origin: 'null', 'Access-Control-Request-Method': 'GET' } });
      assert.equal(r.status, 403);
      assert.deepEqual(accessControlHeaders(r), []);
    });
  });

  describe('bodies', () => {
    it('an empty body counts as {}', async () => {
      // A claim needs a nonce: an empty body is parsed as {} and reaches that check. (A page's POST
      // must say JSON, with a body or not.)
      assertError(await web(eng, WEB, '/connect/claim', { method: 'POST', headers: { 'Content-Type': 'application/json' } }), 400, { error: 'A nonce is required' });
      assertError(await web(eng, WEB, '/connect/claim', { method: 'POST', body: '', headers: { 'Content-Type': 'application/json' } }), 400, { error: 'A nonce is required' });
    });

    it('invalid JSON and non-objects get 400 Invalid JSON body', async () => {
      for (const body of ['{', '{"nonce":', 'nonce=abc', '[1,2]', '"str"', '42', 'null', 'true', '{"a":1}x', '\u0000']) {
        const r = await web(eng, WEB, '/connect/claim', { method: 'POST', body, headers: { 'Content-Type': 'application/json' } });
        assertError(r, 400, { error: 'Invalid JSON body' });
      }
      // the same for a local caller
      const r = await local(eng, '/connect/claim', { method: 'POST', body: '{', headers: { 'Content-Type': 'application/json' } });
      assertError(r, 400);
    });

    it('Content-Length over 16 MiB gets 413 without the body being read', async () => {
      for (const len of [16777217, 100000000, 2 ** 40]) {
        const r = await rawHttp(
          eng,
          `POST /connect/claim HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nOrigin: ${WEB}\r\nContent-Type: application/json\r\nContent-Length: ${len}\r\n\r\n{"nonce":`,
          { timeoutMs: 3000 },
        );
        assert.equal(r.status, 413, `Content-Length ${len}: ${r.statusLine} ${r.body}`);
        assert.ok(r.ms < 2500, `413 must come promptly, took ${r.ms} ms`);
      }
    });

    it('a body of exactly 16 MiB is accepted (read and parsed: a prepare\'s), where a claim takes 64 KB', async () => {
      const head = '{"prompt":42,"pad":"';
      const tail = '"}';
      const body = head + 'a'.repeat(16777216 - head.length - tail.length) + tail;
      assert.equal(Buffer.byteLength(body), 16777216);
      const r = await local(eng, '/session/prepare', { method: 'POST', body, headers: { 'Content-Type': 'application/json' }, timeoutMs: 20000 });
      assertError(r, 400, { error: 'prompt must be a non-empty string' });
      // A claim is a few fields: the same size is refused before it is parsed.
      const claim = await web(eng, WEB, '/connect/claim', { method: 'POST', body, headers: { 'Content-Type': 'application/json' }, timeoutMs: 20000 });
      assertError(claim, 413, { error: 'Request body too large' });
    });

    it('reads chunked bodies', async () => {
      const r = await rawHttp(eng, `POST /connect/claim HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nOrigin: ${WEB}\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n`);
      assertError(r, 400, { error: 'A nonce is required' });
    });

    it('stops a chunked body at 16 MiB with 413', async () => {
      const sock = net.connect(eng.port, '127.0.0.1');
      await new Promise((r, j) => sock.once('connect', r).once('error', j));
      let got = '';
      let closed = false;
      sock.on('data', (d) => (got += d.toString('latin1')));
      sock.on('close', () => (closed = true));
      sock.on('error', () => {});
      sock.write(`POST /connect/claim HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nOrigin: ${WEB}\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n`);
      const mib = 'a'.repeat(1 << 20);
      for (let i = 0; i < 24 && !closed && !got; i++) {
        sock.write(`100000\r\n${mib}\r\n`);
        await sleep(10);
      }
      for (let i = 0; i < 40 && !got.includes('\r\n\r\n'); i++) await sleep(50);
      sock.destroy();
      assert.match(got, /^HTTP\/1\.1 413 /, `got: ${got.slice(0, 300)}`);
    });

    it('idle and half-sent connections do not block others', async () => {
      const socks = Array.from({ length: 50 }, () => net.connect(eng.port, '127.0.0.1').on('error', () => {}));
      const partial = net.connect(eng.port, '127.0.0.1').on('error', () => {});
      partial.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nX-Slow: 1`);
      await sleep(100);
      try {
        const t0 = Date.now();
        const r = await local(eng, '/health', { timeoutMs: 2000 });
        assert.equal(r.status, 200);
        assert.ok(Date.now() - t0 < 1000);
      } finally {
        socks.forEach((s) => s.destroy());
        partial.destroy();
      }
    });

    it('headers over 16 KB get 431; 12 KB of headers are fine', async () => {
      const ok = await request(eng, { path: '/health', headers: { 'X-Pad': 'a'.repeat(12000) } });
      assert.equal(ok.status, 200, `12 KB headers: ${ok.status}`);
      const r = await rawHttp(eng, `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nX-Pad: ${'a'.repeat(20000)}\r\nConnection: close\r\n\r\n`);
      assert.equal(r.status, 431, `${r.statusLine} ${r.body}`);
      const many = Array.from({ length: 400 }, (_, i) => `X-H${i}: ${'b'.repeat(50)}\r\n`).join('');
      const r2 = await rawHttp(eng, `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n${many}Connection: close\r\n\r\n`);
      assert.equal(r2.status, 431, `${r2.statusLine} ${r2.body}`);
    });

    it('answers pipelined keep-alive requests on one connection', async () => {
      const one = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n\r\n`;
      const r = await rawSend(eng, one + one + one, { timeoutMs: 3000, untilMatch: /(HTTP\/1\.1 200[\s\S]*){3}"ok":true[\s\S]*"ok":true[\s\S]*"ok":true/ });
      const n = (r.text.match(/HTTP\/1\.1 200/g) || []).length;
      assert.equal(n, 3, `three answers expected, got: ${r.text.slice(0, 2000)}`);
    });

    it('serves many concurrent requests', async () => {
      const res = await Promise.all(Array.from({ length: 64 }, (_, i) => (i % 2 ? web(eng, freshOrigin('conc'), '/health') : local(eng, '/health'))));
      for (const r of res) assert.equal(r.status, 200);
    });

    it('keeps serving after malformed requests', async () => {
      await rawHttp(eng, 'GARBAGE\r\n\r\n').catch(() => {});
      await rawHttp(eng, `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nContent-Length: -5\r\n\r\n`).catch(() => {});
      const r = await local(eng, '/health');
      assert.equal(r.status, 200);
    });
  });

  describe('routes and errors', () => {
    it('unknown routes from a local process get 404 Not found', async () => {
      for (const [method, p] of [['GET', '/nope'], ['POST', '/nope'], ['GET', '/'], ['GET', '/health/extra'], ['DELETE', '/health']]) {
        const r = await request(eng, { method, path: p });
        assertError(r, 404, { error: 'Not found' });
      }
    });

    it('routes that need a grant answer a web page without a valid token with 401 not_paired', async () => {
      const origin = freshOrigin('gate');
      const cases = [
        ['GET', '/session/x', undefined],
        ['POST', '/session/prepare', {}],
      ];
      for (const [method, p, body] of cases) {
        for (const token of [undefined, 'not-a-real-token', 'A'.repeat(43)]) {
          const r = await web(eng, origin, p, { method, body, token });
          assertError(r, 401, { code: 'not_paired' });
          assertCors(r, origin);
        }
      }
    });

    it('unknown routes get 404 from a web page too, token or not (only routes that exist need a grant)', async () => {
      const origin = freshOrigin('gate');
      for (const token of [undefined, 'not-a-real-token']) {
        const r = await web(eng, origin, '/no/such/route', { token });
        assertError(r, 404, { error: 'Not found' });
        assertCors(r, origin);
      }
    });

    it('with a valid token, unknown routes get 404 and unknown sessions 404', async () => {
      const origin = freshOrigin('gate');
      const { token } = await pairCli(eng, origin, { app: 'Gate' });
      assertError(await web(eng, origin, '/no/such/route', { token }), 404, { error: 'Not found' });
      assertError(await web(eng, origin, '/session/doesnotexist', { token }), 404);
      // the token of one origin is worth nothing to another
      assertError(await web(eng, freshOrigin('gate'), '/session/doesnotexist', { token }), 401, { code: 'not_paired' });
    });

    it('/admin/* does not exist in CLI mode', async () => {
      assertError(await admin(eng, '/admin/pairing', { token: ADMIN_TOKEN }), 404);
      assertError(await admin(eng, '/admin/pairing/link', { body: { origin: WEB, nonce: nonce() } }), 404);
      assertError(await admin(eng, '/admin/sites?origin=https%3A%2F%2Fexample.com', { method: 'DELETE' }), 404);
    });
  });
});

// Browsers leave Origin out of <img>, <script>, navigations and form GETs, but say in Sec-Fetch-Site
// where a request comes from; a page on http://127.0.0.1:<another port> is "same-site" with the
// engine. These are the attacker's requests made raw; browser.test.mjs makes them from a real page.
const fromBrowser = (site, dest = 'image') => ({
  'Sec-Fetch-Site': site,
  'Sec-Fetch-Mode': dest === 'document' ? 'navigate' : 'no-cors',
  'Sec-Fetch-Dest': dest,
});
const VERBOSE = ['--port', '0', '--no-open', '-v'];
const NONCE = 'A'.repeat(32);
// The bodies a plain <form> (or a fetch without a preflight) can send. The text/plain one smuggles
// JSON, which the engine parsed happily before it asked for the Content-Type.
const FORM_BODIES = {
  'text/plain': `{"nonce":"${NONCE}","x":"="}`,
  'application/x-www-form-urlencoded': `nonce=${NONCE}`,
  'multipart/form-data; boundary=XyZ': `--XyZ\r\nContent-Disposition: form-data; name="nonce"\r\n\r\n${NONCE}\r\n--XyZ--\r\n`,
};
const NOT_JSON = { error: 'Content-Type must be application/json' };
const logged = (eng, re) => eng.stderrLines.some((l) => re.test(l));

describe('gate: browser requests without Origin, CLI engine', { timeout: 60000 }, () => {
  let eng;
  let id;
  before(async () => {
    eng = await startEngine({ args: VERBOSE });
    ({ requestId: id } = await startCliClaim(eng, freshOrigin('victim'), { nonce: nonce() }));
  });
  after(stopAll);

  it('another site\'s request gets what an unknown web page gets, without CORS headers', async () => {
    for (const site of ['cross-site', 'same-site']) {
      const get = (p, dest) => request(eng, { path: p, headers: fromBrowser(site, dest) });
      const h = await get('/health');
      assert.equal(h.status, 200, h.body);
      assert.equal(h.json.paired, false, `${site}: the web page's view of /health: ${h.body}`);
      assert.equal(h.json.embed, undefined);
      assert.deepEqual(accessControlHeaders(h), [], 'no origin to echo');
      assertError(await get('/session/abc'), 401, { code: 'not_paired' });
      // the approval page, its state and its assets are the visitor's, not another page's
      assertError(await get(`/connect/${id}`, 'document'), 403, { error: 'not allowed for this caller' });
      assertError(await get(`/connect/${id}`, 'iframe'), 403, { error: 'not allowed for this caller' });
      assertError(await get(`/connect/${id}/state`, 'script'), 403, { error: 'not allowed for this caller' });
      assertError(await get('/connect/assets/approve.js', 'script'), 403, { error: 'not allowed for this caller' });

      const post = (p, type, body) =>
        request(eng, { method: 'POST', path: p, headers: { ...fromBrowser(site, 'document'), 'Content-Type': type }, body });
      assertError(await post('/session/prepare', 'application/json', '{}'), 401, { code: 'not_paired' });
      assertError(await post('/embed', 'application/json', '{"texts":["x"]}'), 401, { code: 'not_paired' });
      assertError(await post('/connect/claim', 'application/json', `{"nonce":"${NONCE}"}`), 400, { error: 'Pairing must come from a web page' });
      for (const [type, body] of Object.entries(FORM_BODIES)) {
        for (const p of ['/connect/claim', '/session/prepare', `/session/${id}/approve`]) {
          const r = await post(p, type, body);
          assertError(r, 415, NOT_JSON);
          assert.deepEqual(accessControlHeaders(r), [], `${site} ${type} ${p}`);
        }
      }
    }
    assert.ok(logged(eng, /event=http\.request method=GET path=\/health caller=web status=200/), eng.stderrLines.join('\n'));
    assert.ok(logged(eng, new RegExp(`event=http\\.request method=GET path=/connect/${id} caller=web status=403`)));
  });

  it('two Sec-Fetch-Site headers are no browser\'s word for "local"', async () => {
    const r = await rawHttp(eng, `GET /session/abc HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nSec-Fetch-Site: none\r\nSec-Fetch-Site: cross-site\r\nConnection: close\r\n\r\n`);
    assertError(r, 401, { code: 'not_paired' });
  });

  it('the visitor\'s own navigation (none) and the approval page\'s own requests (same-origin) are as before', async () => {
    const page = await request(eng, { path: `/connect/${id}`, headers: fromBrowser('none', 'document') });
    assert.equal(page.status, 200, page.body);
    assert.match(page.headers['content-type'], /^text\/html/);
    for (const [p, dest] of [['/connect/assets/approve.js', 'script'], ['/connect/assets/approve.css', 'style'], [`/connect/${id}/state`, 'empty']]) {
      const r = await request(eng, { path: p, headers: fromBrowser('same-origin', dest) });
      assert.equal(r.status, 200, `${p}: ${r.status} ${r.body}`);
    }
    const h = await request(eng, { path: '/health', headers: fromBrowser('none', 'document') });
    assert.equal(h.json.paired, undefined, 'a local caller\'s /health');
    assertError(await request(eng, { path: '/session/abc', headers: fromBrowser('none', 'document') }), 404);
    assert.ok(logged(eng, new RegExp(`event=http\\.request method=GET path=/connect/${id} caller=local status=200`)));
  });
});

describe('gate: browser requests without Origin, app engine', { timeout: 60000 }, () => {
  let eng;
  let paired;
  before(async () => {
    eng = await startEngine({ app: true, args: VERBOSE });
    // A connected site and an open pairing request change nothing for a page that doesn't say which.
    paired = freshOrigin('paired');
    await pairApp(eng, paired);
    await admin(eng, '/admin/pairing/link', { body: { origin: freshOrigin('linked'), nonce: nonce() } });
  });
  after(stopAll);

  it('is silent to another site\'s request, on every route', async () => {
    for (const site of ['cross-site', 'same-site']) {
      const probes = [
        { path: '/health' },
        { path: '/connect/AAAAAAAAAAAAAAAAAAAAAAAA', dest: 'document' },
        { path: '/session/abc', dest: 'script' },
        { path: '/admin/pairing', headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } },
        { method: 'OPTIONS', path: '/session/prepare' },
        { method: 'POST', path: '/session/prepare', type: 'application/json', body: '{}' },
        { method: 'POST', path: '/connect/claim', type: 'text/plain', body: FORM_BODIES['text/plain'] },
      ];
      for (const p of probes) {
        const headers = { ...fromBrowser(site, p.dest), ...(p.headers || {}) };
        if (p.type) headers['Content-Type'] = p.type;
        const r = await request(eng, { method: p.method || 'GET', path: p.path, headers, body: p.body });
        assertSilent(r, `${site} ${p.method || 'GET'} ${p.path}`);
      }
    }
    assert.ok(logged(eng, /event=http\.gate method=GET path=\/health caller=web status=403/), eng.stderrLines.join('\n'));
  });

  // DNS rebinding: the page's own name now points at 127.0.0.1, so it reads its same-origin answers. A
  // readable "host not allowed" would tell it Leuria is installed. An http: page's same-origin GET carries
  // no Origin and no Sec-Fetch-*, so it looks like a local process's: every wrong Host gets silence.
  it('is silent to every request naming another Host, a connected origin\'s included, at both doors', async () => {
    const host = { Host: `rebound.example:${eng.port}` };
    const probes = [
      { path: '/health', headers: {} },
      { method: 'POST', path: '/webmcp/mcp', headers: { 'Content-Type': 'application/json' }, body: '{}' },
      { path: '/health', headers: fromBrowser('same-origin', 'empty') },
      { path: '/health', headers: fromBrowser('none', 'document') },
      { path: '/health', headers: { Origin: paired } },
      { method: 'POST', path: '/connect/claim', headers: { Origin: `http://rebound.example:${eng.port}`, 'Content-Type': 'application/json' }, body: '{}' },
      { method: 'POST', path: '/webmcp/mcp', headers: { Origin: 'null', 'Content-Type': 'application/json' }, body: '{}' },
      { method: 'POST', path: '/webmcp/mcp', headers: { ...fromBrowser('same-origin', 'empty'), 'Content-Type': 'application/json' }, body: '{}' },
      { path: '/webmcp/register', headers: { ...fromBrowser('same-origin', 'websocket'), Connection: 'Upgrade', Upgrade: 'websocket', 'Sec-WebSocket-Version': '13', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==' } },
    ];
    for (const p of probes) {
      const r = await request(eng, { method: p.method || 'GET', path: p.path, headers: { ...p.headers, ...host }, body: p.body });
      assertSilent(r, `${p.method || 'GET'} ${p.path} ${JSON.stringify(p.headers)}`);
    }
    assert.ok(logged(eng, /event=http\.gate method=GET path=\/health caller=local status=403 host_ok=false/), eng.stderrLines.join('\n'));
  });

  it('answers the visitor\'s navigation and local processes', async () => {
    for (const headers of [fromBrowser('none', 'document'), fromBrowser('same-origin', 'empty'), {}]) {
      const r = await request(eng, { path: '/health', headers });
      assert.equal(r.status, 200, `${JSON.stringify(headers)}: ${r.status}`);
    }
  });

  it('a page\'s POST that isn\'t JSON: silence first for an unknown page, then 415 for a connected one', async () => {
    for (const [type, body] of Object.entries(FORM_BODIES)) {
      assertSilent(await web(eng, freshOrigin('stranger'), '/connect/claim', { body, headers: { 'Content-Type': type } }), type);
      const r = await web(eng, paired, '/connect/claim', { body, headers: { 'Content-Type': type } });
      assertError(r, 415, NOT_JSON);
      assertCors(r, paired);
    }
    // the same page's JSON is answered
    assertError(await web(eng, paired, '/connect/claim', { body: {} }), 400, { error: 'A nonce is required' });
  });
});

describe('gate: a page\'s POST must be JSON (CLI engine)', { timeout: 60000 }, () => {
  let eng;
  before(async () => {
    eng = await startEngine({ args: VERBOSE });
  });
  after(stopAll);

  it('form and text bodies get 415, with CORS so the page can read why, and ask the visitor nothing', async () => {
    const origin = freshOrigin('form');
    const from = eng.lines.length;
    for (const [type, body] of Object.entries(FORM_BODIES)) {
      for (const p of ['/connect/claim', '/session/prepare', '/session/abc/approve', '/embed', '/no/such/route']) {
        const r = await web(eng, origin, p, { body, headers: { 'Content-Type': type } });
        assertError(r, 415, NOT_JSON);
        assertCors(r, origin);
      }
    }
    // no Content-Type at all, an empty one, two of them, and lookalikes
    const bad = [{}, { 'Content-Type': '' }, { 'Content-Type': 'application/jsonx' }, { 'Content-Type': 'text/json' }];
    for (const headers of bad) assertError(await web(eng, origin, '/connect/claim', { method: 'POST', headers }), 415, NOT_JSON);
    const two = await rawHttp(eng, `POST /connect/claim HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nOrigin: ${origin}\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
    assertError(two, 415, NOT_JSON);
    await sleep(200);
    assert.deepEqual(eng.lines.slice(from).filter((l) => /Approve or deny/.test(l)), [], 'no pairing question from a form');
    assert.ok(logged(eng, /event=http\.request method=POST path=\/connect\/claim caller=web status=415/));
  });

  it('application/json with parameters or in another case is fine', async () => {
    for (const type of ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset=UTF-8']) {
      const r = await web(eng, freshOrigin('json'), '/connect/claim', { method: 'POST', body: '{}', headers: { 'Content-Type': type } });
      assertError(r, 400, { error: 'A nonce is required' });
    }
  });

  it('comes after the Host and Origin checks, and only for web pages', async () => {
    const text = { 'Content-Type': 'text/plain' };
    assertError(await request(eng, { method: 'POST', path: '/connect/claim', headers: { ...text, Host: 'evil.com', Origin: WEB }, body: '{}' }), 403, { error: 'host not allowed' });
    assertError(await web(eng, 'null', '/connect/claim', { body: '{}', headers: text }), 403, { error: 'origin not allowed' });
    // a local process and the engine's own page are as before
    assertError(await local(eng, '/connect/claim', { body: '{}', headers: text }), 400, { error: 'Pairing must come from a web page' });
    assertError(await own(eng, '/connect/AAAAAAAAAAAAAAAAAAAAAAAA/decide', { body: '{"allow":true}', headers: text }), 404);
  });
});
