// DNS rebinding in a real browser (issue 7; Ollama's CVE-2024-28224 was this attack). The attacker's page is
// loaded from http://rebind.test:<P> (Chromium's --host-resolver-rules give the name), then the attacker's
// server goes away and the engine takes port P: the name now "points" at the engine, and the attacker's
// document is same-origin with it, so it could read every answer. The Host header is the only thing that
// tells the engine apart from the attacker's server: every request, keep-alive or not, WebSocket upgrades
// included, gets 403 and nothing else, in both modes, and nothing changes. The CLI engine says `host not
// allowed`; the app's engine, silent to pages it doesn't know, sends an empty 403, so that the rebound page
// can't read that Leuria is there.
// The same rule from raw sockets: a kept-alive connection whose second request names another Host.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { startEngine, stopAll, pairCli, freshOrigin, rawSend, readGrants } from './helpers.mjs';
import { CHROMIUM, launchBrowser, startSite } from './lib/sdk-page.mjs';

const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (install the chromium package to run the browser tests)`;
const NAME = 'rebind.test';
const PAGE = '<!doctype html><html><head><meta charset="utf-8"><title>attacker</title></head><body>attacker</body></html>';

/** What the rebound page can learn: same-origin fetches, readable, of every kind a page would try. */
function attack(page) {
  return page.evaluate(async () => {
    const out = {};
    const read = async (what, url, init) => {
      try {
        const r = await fetch(url, { cache: 'no-store', ...init });
        out[what] = { status: r.status, body: await r.text() };
      } catch (e) {
        out[what] = { error: String(e) };
      }
    };
    await read('health', '/health');
    await read('claim', '/connect/claim', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ nonce: 'A'.repeat(32) }) });
    await read('sessions', '/sessions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{}' });
    await read('approval', '/connect/approve');
    out.ws = await new Promise((resolve) => {
      const ws = new WebSocket(`ws://${location.host}/webmcp/register`);
      ws.onopen = () => resolve('open');
      ws.onerror = () => resolve('refused');
    });
    return out;
  });
}

/** The attacker page served on a port that the engine is then started on. */
async function rebound(browser, startOnPort) {
  const site = await startSite({ host: '127.0.0.1', pages: { '/attacker.html': PAGE } });
  const port = site.port;
  const page = await (await browser.newContext()).newPage();
  await page.goto(`http://${NAME}:${port}/attacker.html`);
  assert.equal(await page.title(), 'attacker');
  await site.close();
  const eng = await startOnPort(port);
  return { page, eng, port };
}

describe('browser: DNS rebinding', { skip, timeout: 120000 }, () => {
  let browser;
  before(async () => {
    browser = await launchBrowser([`--host-resolver-rules=MAP ${NAME} 127.0.0.1`]);
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await stopAll();
  });

  for (const mode of ['CLI', 'app']) {
    it(`${mode} engine: the rebound page reads only ${mode === 'app' ? 'an empty 403' : '"host not allowed"'}, and nothing changes`, async () => {
      const { page, eng, port } = await rebound(browser, (p) =>
        startEngine({ app: mode === 'app', args: ['--port', String(p), '--no-open'] }));
      assert.equal(eng.port, port);
      const victim = freshOrigin('victim');
      await pairCli(eng, victim).catch(() => {});  // app mode pairs through the app; CLI through the page
      const before = JSON.stringify(await readGrants(eng.home).catch(() => null));
      const out = await attack(page);
      for (const what of ['health', 'claim', 'sessions', 'approval']) {
        const body = mode === 'app' ? '' : '{"error":"host not allowed"}';
        assert.deepEqual(out[what], { status: 403, body }, `${what}: ${JSON.stringify(out[what])}`);
      }
      assert.equal(out.ws, 'refused');
      assert.equal(JSON.stringify(await readGrants(eng.home).catch(() => null)), before, 'grants unchanged');
      await page.context().close();
      await eng.stop();
    });
  }
});

describe('Host on every request of a connection', { timeout: 30000 }, () => {
  let eng;
  before(async () => {
    eng = await startEngine();
  });
  after(stopAll);

  it('a kept-alive connection whose second request names another Host gets 403 for that one', async () => {
    const good = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n\r\n`;
    for (const bad of [`${NAME}:${eng.port}`, `localhost.evil.com:${eng.port}`, `127.1:${eng.port}`]) {
      const { text } = await rawSend(eng, `${good}GET /health HTTP/1.1\r\nHost: ${bad}\r\n\r\n${good}`, {
        untilMatch: /(HTTP\/1\.1 [\s\S]*){3}\}$/,
      });
      const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
      assert.deepEqual(statuses, [200, 403, 200], `${bad}:\n${text}`);
      assert.match(text, /host not allowed/);
    }
  });

  it('a WebSocket upgrade is checked like any request: another Host is 403 before the upgrade', async () => {
    const upgrade = (host) =>
      `GET /webmcp/register HTTP/1.1\r\nHost: ${host}\r\nOrigin: https://example.com\r\nUpgrade: websocket\r\n` +
      'Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';
    for (const host of [`${NAME}:${eng.port}`, `localhost:${eng.port + 1}`, '']) {
      const { text } = await rawSend(eng, upgrade(host), { untilMatch: /\r\n\r\n[\s\S]*\}/ });
      assert.match(text, /^HTTP\/1\.1 403/, `${host}: ${text}`);
      assert.doesNotMatch(text, /101 Switching/);
    }
    // The same upgrade on a connection that first asked with the right Host.
    const sock = net.connect(eng.port, '127.0.0.1');
    await new Promise((r) => sock.once('connect', r));
    let text = '';
    sock.on('data', (d) => (text += d));
    sock.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n\r\n${upgrade(`${NAME}:${eng.port}`)}`);
    await new Promise((r) => setTimeout(r, 500));
    sock.destroy();
    assert.deepEqual([...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1])), [200, 403], text);
  });
});
