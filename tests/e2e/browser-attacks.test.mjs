// A hostile page in a real browser (headless Chromium) against an --app engine and a CLI engine (issue 7):
// the requests a page can make without a preflight — <img>, <script>, link and form navigations (no Origin),
// and form POSTs (text/plain, urlencoded, multipart) — get what an unknown page gets, and nothing changes.
// The page can't read most answers, so the engine's -v log says who it took the caller for.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startEngine, stopAll, startCliClaim, pairApp, freshOrigin, nonce, poll } from './helpers.mjs';
import { CHROMIUM, launchBrowser, startSite } from './lib/sdk-page.mjs';

const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (install the chromium package to run the browser tests)`;

const VERBOSE = ['--port', '0', '--no-open', '-v'];
const NONCE = 'A'.repeat(32);
const PAGE = '<!doctype html><html><head><meta charset="utf-8"><title>attacker</title></head><body>attacker page</body></html>';
const ENCTYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data'];

/** Waits for an engine log line matching `re` among those after index `from`. */
async function logged(eng, from, re) {
  const line = await poll(() => eng.stderrLines.slice(from).find((l) => re.test(l)), { timeoutMs: 3000, intervalMs: 50 });
  assert.ok(line, `no log line matching ${re}; log:\n${eng.stderrLines.slice(from).join('\n')}`);
  return line;
}

/** An <img> or <script> pointing at `url`, added to the page; resolves once it loaded or failed. */
function subresource(page, tag, url) {
  return page.evaluate(([t, u]) => new Promise((resolve) => {
    const el = document.createElement(t);
    el.onload = () => resolve('load');
    el.onerror = () => resolve('error');
    el.src = u;
    document.body.append(el);
  }), [tag, url]);
}

/** Navigates the page by clicking a link, or by submitting a form (GET or POST); returns the engine's answer. */
async function navigate(page, url, { form, enctype, fields = {} } = {}) {
  const answer = page.waitForResponse((r) => r.url().split('?')[0] === url && r.request().isNavigationRequest(), { timeout: 5000 });
  await page.evaluate(([u, method, type, f]) => {
    if (!method) {
      const a = document.createElement('a');
      a.href = u;
      document.body.append(a);
      a.click();
      return;
    }
    const el = document.createElement('form');
    el.method = method;
    el.action = u;
    if (type) el.enctype = type;
    for (const [name, value] of Object.entries(f)) {
      const input = document.createElement('input');
      input.type = 'hidden';
      input.name = name;
      input.value = value;
      el.append(input);
    }
    document.body.append(el);
    el.submit();
  }, [url, form, enctype, fields]);
  const r = await answer;
  const headers = r.headers();
  // An empty answer's body is Chromium's own error page, so silence shows in the headers.
  return { status: r.status(), length: headers['content-length'], acao: headers['access-control-allow-origin'], body: await r.text().catch(() => '') };
}

/** Silence as a navigation sees it: 403, nothing in the body, no CORS. */
function assertSilentNavigation(r, what) {
  assert.deepEqual([r.status, r.length, r.acao], [403, '0', undefined], `${what}: ${r.status} ${r.body.slice(0, 200)}`);
}

/** The fields that make each form encoding carry a claim; text/plain smuggles JSON through name=value. */
function claimFields(enctype) {
  return enctype === 'text/plain' ? { [`{"nonce":"${NONCE}","x":"`]: '"}' } : { nonce: NONCE };
}

describe('browser: a hostile page', { skip, timeout: 120000 }, () => {
  let browser;
  let site;
  let app;
  let cli;
  let page;
  let requestId;

  before(async () => {
    [app, cli, site, browser] = await Promise.all([
      startEngine({ app: true, args: VERBOSE }),
      startEngine({ args: VERBOSE }),
      startSite({ pages: { '/attacker.html': PAGE } }),
      launchBrowser(),
    ]);
    // A pairing request waiting for the visitor: the page must not reach its approval page.
    ({ requestId } = await startCliClaim(cli, freshOrigin('victim'), { nonce: nonce() }));
    page = await (await browser.newContext()).newPage();
  });

  after(async () => {
    await browser?.close().catch(() => {});
    await site?.close();
    await stopAll();
  });

  const attacker = () => page.goto(site.url('/attacker.html'));
  // Same-site with the page (127.0.0.1, another port) and cross-site (localhost).
  const bases = (eng) => [`http://127.0.0.1:${eng.port}`, `http://localhost:${eng.port}`];

  it('app engine: <img>, <script>, links and form GETs get the silent 403', async () => {
    for (const base of bases(app)) {
      for (const p of ['/health', `/connect/${requestId}`, '/session/abc']) {
        await attacker();
        for (const tag of ['img', 'script']) {
          const from = app.stderrLines.length;
          assert.equal(await subresource(page, tag, base + p), 'error', `${tag} ${base}${p}`);
          await logged(app, from, new RegExp(`event=http\\.gate method=GET path=${p} caller=web status=403`));
        }
        for (const form of [undefined, 'GET']) {
          const r = await navigate(page, base + p, { form });
          assertSilentNavigation(r, `${form ? 'form' : 'link'} ${base}${p}`);
          await attacker();
        }
      }
    }
  });

  it('CLI engine: <img> and <script> are an unknown web page\'s requests', async () => {
    await attacker();
    for (const base of bases(cli)) {
      for (const [tag, p, status] of [['img', '/health', 200], ['script', `/connect/${requestId}`, 403], ['img', '/connect/assets/approve.css', 403],
        ['script', '/session/abc', 401]]) {
        const from = cli.stderrLines.length;
        await subresource(page, tag, base + p);
        await logged(cli, from, new RegExp(`event=http\\.request method=GET path=${p} caller=web status=${status}`));
      }
    }
  });

  it('CLI engine: links and form GETs get the web page\'s answers, and never the approval page', async () => {
    for (const base of bases(cli)) {
      for (const form of [undefined, 'GET']) {
        const how = `${form ? 'form' : 'link'} ${base}`;
        await attacker();
        const approval = await navigate(page, `${base}/connect/${requestId}`, { form });
        assert.equal(approval.status, 403, `${how}: ${approval.body}`);
        assert.deepEqual(JSON.parse(approval.body), { error: 'not allowed for this caller' });
        await attacker();
        const session = await navigate(page, `${base}/session/abc`, { form });
        assert.equal(session.status, 401, `${how}: ${session.body}`);
        assert.equal(JSON.parse(session.body).code, 'not_paired');
        await attacker();
        const health = await navigate(page, `${base}/health`, { form });
        assert.equal(JSON.parse(health.body).paired, false, `${how}: the web page's view of /health: ${health.body}`);
      }
    }
  });

  it('form POSTs that need no preflight get 415 (CLI) or silence (app), and ask the visitor nothing', async () => {
    const from = cli.lines.length;
    for (const enctype of ENCTYPES) {
      for (const p of ['/connect/claim', '/session/prepare']) {
        await attacker();
        const r = await navigate(page, `http://127.0.0.1:${cli.port}${p}`, { form: 'POST', enctype, fields: claimFields(enctype) });
        assert.equal(r.status, 415, `${enctype} ${p}: ${r.body}`);
        assert.deepEqual(JSON.parse(r.body), { error: 'Content-Type must be application/json' });
        await attacker();
        const silent = await navigate(page, `http://127.0.0.1:${app.port}${p}`, { form: 'POST', enctype, fields: claimFields(enctype) });
        assertSilentNavigation(silent, `app ${enctype} ${p}`);
      }
    }
    // fetch() without a preflight: an opaque answer for the page, 415 in the engine
    await attacker();
    const logFrom = cli.stderrLines.length;
    await page.evaluate((u) => fetch(u, { method: 'POST', mode: 'no-cors', body: '{"nonce":"' + 'A'.repeat(32) + '"}' }).catch(() => {}),
      `http://127.0.0.1:${cli.port}/connect/claim`);
    await logged(cli, logFrom, /event=http\.request method=POST path=\/connect\/claim caller=web status=415/);
    assert.deepEqual(cli.lines.slice(from).filter((l) => /Approve or deny/.test(l)), [], 'no pairing question from a form');
  });

  it('app engine: a connected site\'s form POST gets 415, and its requests without Origin stay silent', async () => {
    await pairApp(app, site.origin);
    for (const enctype of ENCTYPES) {
      await attacker();
      const r = await navigate(page, `http://127.0.0.1:${app.port}/session/prepare`, { form: 'POST', enctype, fields: claimFields(enctype) });
      assert.equal(r.status, 415, `${enctype}: ${r.body}`);
    }
    await attacker();
    const from = app.stderrLines.length;
    await subresource(page, 'img', `http://127.0.0.1:${app.port}/health`);
    await logged(app, from, /event=http\.gate method=GET path=\/health caller=web status=403/);
  });

  it('the approval page\'s buttons are dead for its first second, and again after it loses focus or is hidden: a click aimed at the site that opened it lands on nothing', async () => {
    const { requestId: id } = await startCliClaim(cli, freshOrigin('clickjack'), { nonce: nonce() });
    const visitor = await (await browser.newContext()).newPage();
    // The page's timers run only as the test moves its clock (installed, then paused: it does not tick).
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    await visitor.clock.install({ time: t0 });
    await visitor.clock.pauseAt(t0 + 1000);
    await visitor.goto(`http://127.0.0.1:${cli.port}/connect/${id}`);
    const state = () => visitor.evaluate((rid) => fetch(`/connect/${rid}/state`).then((r) => r.json()).then((j) => j.status), id);
    const dead = async () => (await visitor.isDisabled('#allow')) && (await visitor.isDisabled('#deny'));
    const box = await visitor.locator('#allow').boundingBox();
    const clickAllow = async () => {
      await visitor.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await visitor.waitForTimeout(200);  // room for a decide the click might have sent
    };
    assert.equal(await dead(), true);
    await clickAllow();  // the visitor, still clicking at the site's game
    assert.equal(await state(), 'pending');
    await visitor.clock.runFor(999);
    assert.equal(await dead(), true, 'alive before a second');
    await visitor.clock.runFor(2);
    assert.equal(await dead(), false, 'alive after a second');
    // Focus gone (another window) and back: dead again for a second.
    await visitor.evaluate(() => window.dispatchEvent(new Event('blur')));
    assert.equal(await dead(), true);
    await visitor.evaluate(() => window.dispatchEvent(new Event('focus')));
    await clickAllow();
    assert.equal(await state(), 'pending');
    await visitor.clock.runFor(1001);
    assert.equal(await dead(), false);
    // Hidden (another tab), however long, then shown: dead until a second after it is shown.
    const visibility = (v) => visitor.evaluate((to) => {
      Object.defineProperty(document, 'visibilityState', { get: () => to, configurable: true });
      document.dispatchEvent(new Event('visibilitychange'));
    }, v);
    await visibility('hidden');
    assert.equal(await dead(), true);
    await visitor.clock.runFor(5000);
    assert.equal(await dead(), true, 'a hidden page never comes alive');
    await visibility('visible');
    assert.equal(await dead(), true);
    await visitor.clock.runFor(1001);
    assert.equal(await dead(), false);
    await clickAllow();
    assert.ok(await poll(async () => (await state()) === 'allowed', { timeoutMs: 3000 }));
    await visitor.context().close();
  });

  it('the visitor opening the approval page (no initiator) still gets it, with its assets', async () => {
    const visitor = await (await browser.newContext()).newPage();
    const failed = [];
    visitor.on('response', (r) => r.status() >= 400 && failed.push(`${r.status()} ${r.url()}`));
    const from = cli.stderrLines.length;
    const r = await visitor.goto(`http://127.0.0.1:${cli.port}/connect/${requestId}`);
    assert.equal(r.status(), 200);
    await visitor.waitForSelector('#allow', { state: 'visible', timeout: 5000 });
    await logged(cli, from, new RegExp(`event=http\\.request method=GET path=/connect/${requestId} caller=local status=200`));
    await logged(cli, from, /event=http\.request method=GET path=\/connect\/assets\/approve\.js caller=local status=200/);
    assert.deepEqual(failed, []);
    await visitor.context().close();
  });
});
