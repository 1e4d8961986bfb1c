// A real browser (headless Chromium): to a page it doesn't know, an --app engine looks exactly like a closed port.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { startEngine, stopAll, closedPort, pairApp } from './helpers.mjs';

const CHROMIUM = '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
const skip = haveChromium ? false : `${CHROMIUM} is missing (install the chromium package to run the browser tests)`;

const PAGE = '<!doctype html><html><head><meta charset="utf-8"><title>attacker</title></head><body>attacker page</body></html>';

/** fetch() from inside the page; returns what a script can observe. */
async function probe(page, url, init = {}) {
  return page.evaluate(async ([u, i]) => {
    try {
      const r = await fetch(u, i);
      let body = null;
      try {
        body = await r.text();
      } catch (e) {
        body = `unreadable: ${e}`;
      }
      return { ok: true, status: r.status, type: r.type, body };
    } catch (e) {
      return { ok: false, name: e.name, message: e.message };
    }
  }, [url, init]);
}

describe('browser', { skip, timeout: 90000 }, () => {
  let browser;
  let page;
  let site;
  let siteOrigin;
  let silent;
  let cli;
  let dev;
  let closed;

  before(async () => {
    const { chromium } = await import('playwright-core');
    [silent, cli, dev] = await Promise.all([
      startEngine({ app: true }),
      startEngine(),
      startEngine({ devPairing: true }),
    ]);
    closed = await closedPort();
    site = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(PAGE);
    });
    await new Promise((r) => site.listen(0, '127.0.0.1', r));
    siteOrigin = `http://127.0.0.1:${site.address().port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage();
    await page.goto(`${siteOrigin}/`);
  });

  after(async () => {
    await browser?.close().catch(() => {});
    await new Promise((r) => (site ? site.close(r) : r()));
    await stopAll();
  });

  it('a silent engine and a closed port fail the same way', async () => {
    const a = await probe(page, `http://127.0.0.1:${silent.port}/health`);
    const b = await probe(page, `http://127.0.0.1:${closed}/health`);
    assert.deepEqual(b, { ok: false, name: 'TypeError', message: 'Failed to fetch' }, 'closed port control');
    assert.deepEqual(a, b, `silent engine: ${JSON.stringify(a)}`);
  });

  it('the same with localhost and with a preflighted claim', async () => {
    const init = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ nonce: 'A'.repeat(32) }) };
    for (const [p, i] of [['/health', {}], ['/connect/claim', init], ['/session/prepare', { ...init, headers: { ...init.headers, Authorization: 'Bearer x' } }]]) {
      for (const host of ['127.0.0.1', 'localhost']) {
        const a = await probe(page, `http://${host}:${silent.port}${p}`, i);
        const b = await probe(page, `http://${host}:${closed}${p}`, i);
        assert.equal(b.ok, false, `closed port control ${host}${p}: ${JSON.stringify(b)}`);
        assert.deepEqual(a, b, `silent engine ${host}${p}: ${JSON.stringify(a)}`);
      }
    }
  });

  it('the CLI engine answers the page (positive control)', async () => {
    const r = await probe(page, `http://127.0.0.1:${cli.port}/health`);
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(r.status, 200);
    const j = JSON.parse(r.body);
    assert.equal(j.leuria, '0.1.0');
    assert.equal(j.paired, false);
    // a preflighted request works too
    const c = await probe(page, `http://127.0.0.1:${cli.port}/connect/claim`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    assert.equal(c.ok, true, JSON.stringify(c));
    assert.equal(c.status, 400);
    assert.equal(JSON.parse(c.body).error, 'A nonce is required');
  });

  it('the --dev-pairing engine answers the page (positive control)', async () => {
    const r = await probe(page, `http://127.0.0.1:${dev.port}/health`);
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(JSON.parse(r.body).paired, false);
  });

  it('a silent engine answers the page once the site is paired', async () => {
    const { token } = await pairApp(silent, siteOrigin);
    const r = await probe(page, `http://127.0.0.1:${silent.port}/health`, { headers: { Authorization: `Bearer ${token}` } });
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(JSON.parse(r.body).paired, true);
  });

  // What silence cannot hide (protocol, Silence; docs/SECURITY.md): a no-cors request resolves as an
  // opaque response against any HTTP server, so a page learns that the port is open, and nothing else:
  // no status, no headers, no body, and nothing that says it is Leuria.
  it('no-cors requests learn only that the port is open', async () => {
    const fresh = await startEngine({ app: true });
    try {
      const a = await probe(page, `http://127.0.0.1:${fresh.port}/health`, { mode: 'no-cors' });
      assert.deepEqual(a, { ok: true, status: 0, type: 'opaque', body: '' });
      const b = await probe(page, `http://127.0.0.1:${closed}/health`, { mode: 'no-cors' });
      assert.equal(b.ok, false);
    } finally {
      await fresh.stop();
    }
  });
});
