// The engine's own pages against hostile names (issue 7, "Hostile pages"), in headless Chromium. A site names
// itself (`app` in its claim) and is named by its origin; the approval page shows both as text only:
// - markup, `</script>` and attribute breakouts stay text: no script runs (a flag the payload would set stays
//   unset, no CSP violation fires), the page's elements are those of a plain name, and the visible text is the name;
// - bidi controls, C0/C1 controls, line separators and invisible characters are shown as "[U+XXXX]" (approval_page
//   visible_text), inside <bdi>, so a name can't reorder itself or the sentence around it; right-to-left scripts
//   are shown as they are;
// - an IDN origin is shown in the punycode form the browser sent (xn--…), never as the Unicode lookalike;
// - every page and asset is sent with X-Frame-Options: DENY and CSP frame-ancestors 'none', and Chromium refuses to
//   frame the approval page: with either header alone, and directly (where the Sec-Fetch rule already refuses it).
// Hostile origins get names through --host-resolver-rules (every *.test is 127.0.0.1).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { startEngine, stopAll, local, own, request, nonce, APPROVE_RE, sleep, pairCli, runCli } from './helpers.mjs';
import { CHROMIUM, launchBrowser, startSite } from './lib/sdk-page.mjs';

const skip = fs.existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (install the chromium package to run the browser tests)`;
const PAGE = '<!doctype html><html><head><meta charset="utf-8"><title>a site</title></head><body>a site</body></html>';

/** What visible_text shows for `name`: the characters that could reorder, break or hide text as [U+XXXX]. */
function shown(name) {
  const mark = (c) => `[U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}]`;
  // eslint-disable-next-line no-control-regex
  return name.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\u200b\u2060-\u2064\ufeff]|\udb40[\udc00-\udc7f]/g, mark);
}

const HOSTILE_APPS = [
  ['an <img> with onerror', '<img src=x onerror="window.__pwned=1">'],
  ['a </script> breakout', '</script><script>window.__pwned=2</script>'],
  ['a double-quote attribute breakout', '"><svg onload=window.__pwned=3>'],
  ['a single-quote attribute breakout', "' autofocus onfocus='window.__pwned=4' x='"],
  ['a <bdi> and </main> breakout', '</bdi></p></main><h1 id=fake>Allowed</h1><button id=allow2>Allow</button>'],
  ['entities already escaped', '&lt;b&gt;bold&lt;/b&gt; &amp;amp; &#60;'],
  ['a comment and a template', '<!-- {{7*7}} ${7*7} -->'],
  ['RLO: "Shop" then "gnp.exe" reversed', 'Shop\u202egnp.exe'],
  ['isolates, marks and embeddings', '\u2067evil\u2069 \u200fok\u200e \u202bx\u202c \u202dy\u202c \u061c'],
  ['line breaks, controls and escape sequences', 'line1\nline2\r\u0007\u001b[31mred\u001b[0m\u0085'],
  ['invisible characters', 'pay\u200bpal\ufeff\u2060 \u2028 tag\udb40\udc41'],
  ['a right-to-left name (shown as it is)', 'متجر الأكواب'],
  ['emoji with joiners (shown as they are)', '👩‍💻 Mug shop ❤️'],
];

describe('the engine\'s own pages: hostile names and framing (headless Chromium)', { skip, timeout: 240000 }, () => {
  let eng;
  let site;
  let browser;
  before(async () => {
    [eng, site, browser] = await Promise.all([
      startEngine(),
      startSite({ pages: { '/': PAGE }, routes: { '/proxied': (req, res) => proxyApproval(req, res) } }),
      launchBrowser(['--host-resolver-rules=MAP *.test 127.0.0.1']),
    ]);
  });
  after(async () => {
    await browser?.close().catch(() => {});
    await site?.close();
    await stopAll();
  });

  /** The attacker's server forwards the engine's approval page as a local process would get it, keeping only `keep` headers. */
  function proxyApproval(req, res) {
    const url = new URL(req.url, 'http://x');
    const keep = (url.searchParams.get('keep') || '').split(',').filter(Boolean);
    http.get({ host: '127.0.0.1', port: eng.port, path: `/connect/${url.searchParams.get('id')}`, headers: { Host: `127.0.0.1:${eng.port}` } }, (up) => {
      const headers = { 'Content-Type': up.headers['content-type'] };
      for (const h of keep) if (up.headers[h]) headers[h] = up.headers[h];
      res.writeHead(up.statusCode, headers);
      up.pipe(res);
    });
  }

  /** A claim sent by a real page at `origin` (Chromium sends the Origin); resolves the approval URL the engine printed. */
  async function claimFrom(origin, app) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    const from = eng.lines.length;
    const sent = page.evaluate(([u, body]) => fetch(u, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body })
      .then((r) => r.status, (e) => String(e)), [`http://127.0.0.1:${eng.port}/connect/claim`, JSON.stringify({ nonce: nonce(), app })]);
    const line = await eng.waitForLine(APPROVE_RE, 10000, { from });
    assert.equal(await sent, 200);
    await context.close();
    return { line, url: /(http:\/\/\S+)$/.exec(line)[1], id: APPROVE_RE.exec(line)[2] };
  }

  /** The visitor opens the approval page: what it shows, and whether anything ran. Then says no (20 may be open). */
  async function view(url) {
    const context = await browser.newContext();
    await context.addInitScript(() => {
      window.__violations = [];
      document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('dialog', (d) => {
      errors.push(`dialog: ${d.message()}`);
      d.dismiss().catch(() => {});
    });
    const r = await page.goto(url);
    await page.waitForSelector('#allow', { state: 'visible', timeout: 5000 });
    await sleep(300);  // time for an injected handler (onerror, onload, autofocus) to fire
    const seen = await page.evaluate(() => ({
      pwned: window.__pwned,
      violations: window.__violations,
      title: document.title,
      tags: [...document.body.querySelectorAll('*')].map((e) => e.tagName.toLowerCase()).join(' '),
      sites: [...document.querySelectorAll('bdi.site')].map((e) => e.innerText),
      apps: [...document.querySelectorAll('bdi.app')].map((e) => e.innerText),
      appText: [...document.querySelectorAll('bdi.app')].map((e) => e.textContent),
      h1: document.querySelector('h1').innerText,
      text: document.body.innerText,
    }));
    await context.close();
    const decided = await own(eng, `${new URL(url).pathname}/decide`, { body: { allow: false } });
    assert.equal(decided.status, 200, decided.body);
    return { ...seen, status: r.status(), headers: r.headers(), errors };
  }

  it('markup, bidi, controls and invisible characters in the app name: text only, no script runs, marks where needed', async () => {
    const plain = await view((await claimFrom(`http://plain.test:${site.port}`, 'Mug shop')).url);
    assert.equal(plain.apps[0], 'Mug shop');
    let i = 0;
    for (const [what, app] of HOSTILE_APPS) {
      const origin = `http://hostile${++i}.test:${site.port}`;
      const seen = await view((await claimFrom(origin, app)).url);
      assert.equal(seen.status, 200);
      assert.equal(seen.pwned, undefined, `${what}: the payload ran`);
      assert.deepEqual(seen.violations, [], `${what}: something tried to run`);
      assert.deepEqual(seen.errors, [], what);
      assert.equal(seen.tags, plain.tags, `${what}: the page's elements changed`);
      assert.equal(seen.title, plain.title, what);
      assert.deepEqual(seen.sites, [origin, origin], what);
      assert.equal(seen.apps.length, 1, what);
      // textContent: exactly the name, marks in place of what could reorder, break or hide text
      assert.equal(seen.appText[0], shown(app), `${what}: ${JSON.stringify(seen.appText[0])}`);
      assert.doesNotMatch(seen.text, /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029\u200b\ufeff\u0000-\u0009\u000b-\u001f]/, `${what}: a control reached the page`);
      assert.match(seen.h1, new RegExp(`^Let ${origin.replace(/[.:/]/g, '\\$&')} use your AI\\?$`), what);
    }
  });

  it('an IDN origin is shown as the punycode the browser sent, never as the Unicode lookalike', async () => {
    const unicode = `http://аррӏе.test:${site.port}`;  // Cyrillic letters that look like "apple"
    const puny = new URL(unicode).origin;
    assert.match(puny, /^http:\/\/xn--[a-z0-9-]+\.test:\d+$/);
    const { line, url } = await claimFrom(unicode, 'Apple');
    assert.ok(line.startsWith(`${puny} asks to use your AI.`), line);
    const seen = await view(url);
    assert.deepEqual(seen.sites, [puny, puny]);
    assert.ok(!seen.text.includes('аррӏе'), 'the Unicode form must not appear');
    // a non-browser sending the Unicode form itself: not an origin the engine accepts
    const from = eng.lines.length;
    const r = await request(eng, { method: 'POST', path: '/connect/claim', body: { nonce: nonce() },
      headers: { Origin: Buffer.from(unicode, 'utf8').toString('latin1') } });
    assert.equal(r.status, 403, r.body);
    await sleep(300);
    assert.deepEqual(eng.lines.slice(from).filter((l) => APPROVE_RE.test(l)), []);
  });

  it('every page and asset the engine serves says DENY and frame-ancestors \'none\'', async () => {
    const { id } = await claimFrom(`http://headers.test:${site.port}`, 'Headers');
    for (const p of [`/connect/${id}`, '/connect/AAAAAAAAAAAAAAAAAAAAAAAA', '/connect/assets/approve.js', '/connect/assets/approve.css']) {
      const r = await local(eng, p);
      assert.ok([200, 404].includes(r.status), `${p}: ${r.status}`);
      assert.equal(r.headers['x-frame-options'], 'DENY', p);
      assert.match(r.headers['content-security-policy'] || '', /(^|;\s*)frame-ancestors 'none'(;|$)/, p);
      assert.match(r.headers['content-security-policy'] || '', /(^|;\s*)default-src 'none'(;|$)/, p);
      assert.equal(r.headers['x-content-type-options'], 'nosniff', p);
    }
    assert.match((await local(eng, '/connect/AAAAAAAAAAAAAAAAAAAAAAAA')).headers['content-type'], /^text\/html/);
  });

  it('an attacker page framing the approval page: Chromium refuses it (either header alone does); without them it would load', async () => {
    const { id } = await claimFrom(`http://framed.test:${site.port}`, 'Framed');
    const attacker = `http://attacker.test:${site.port}`;
    /** The attacker page with an <iframe src=src>: whether the approval page's DOM ever loaded inside it. */
    const frameIt = async (src) => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const consoleLines = [];
      page.on('console', (m) => consoleLines.push(m.text()));
      await page.goto(`${attacker}/`);
      await page.evaluate((u) => new Promise((resolve) => {
        const f = document.createElement('iframe');
        f.onload = () => resolve();
        setTimeout(resolve, 5000);
        f.src = u;
        document.body.append(f);
      }), src);
      await sleep(300);
      const child = page.frames().find((f) => f !== page.mainFrame());
      const inChild = await child.evaluate(() => !!document.querySelector('#allow')).catch(() => false);
      // the attacker's own view: the framed document, when it is readable (same origin through the proxy)
      const readable = await page.evaluate(() => {
        try {
          return !!document.querySelector('iframe').contentDocument?.querySelector('#allow');
        } catch {
          return false;
        }
      });
      await context.close();
      return { loaded: inChild || readable, url: child.url(), consoleLines };
    };
    // the control: the same page through the attacker's proxy without the two headers loads in the frame
    const bare = await frameIt(`${attacker}/proxied?id=${id}&keep=`);
    assert.equal(bare.loaded, true, 'the test must be able to see a framed approval page');
    for (const keep of ['x-frame-options', 'content-security-policy', 'x-frame-options,content-security-policy']) {
      const r = await frameIt(`${attacker}/proxied?id=${id}&keep=${keep}`);
      assert.equal(r.loaded, false, `framed with ${keep}: ${r.url}`);
      assert.ok(r.consoleLines.some((l) => /X-Frame-Options|frame-ancestors/.test(l)), `${keep}: Chromium said why: ${r.consoleLines.join('\n')}`);
    }
    // framed directly: the navigation carries Sec-Fetch-Site cross-site, and the engine doesn't serve it at all
    const direct = await frameIt(`http://127.0.0.1:${eng.port}/connect/${id}`);
    assert.equal(direct.loaded, false, direct.url);
  });
});

// The same names in the visitor's terminal: `leuria sites` prints each site's app name with the same marks
// (core::marked_text), so an ESC sequence, an OSC-8 link or a bidi control reaches the terminal as text.
describe('leuria sites: hostile app names reach the terminal as text', { timeout: 60000 }, () => {
  after(stopAll);

  it('no control character of any name is printed; each is shown as [U+XXXX]', async () => {
    const eng = await startEngine();
    const names = HOSTILE_APPS.map(([, name]) => name);
    for (const [i, app] of names.entries()) await pairCli(eng, `https://site${i}.example`, { app });
    const out = await runCli(['sites'], { home: eng.home });
    assert.equal(out.code, 0, out.stderr);
    // eslint-disable-next-line no-control-regex
    assert.doesNotMatch(out.stdout.replace(/\n/g, ''), /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    for (const name of names) assert.ok(out.stdout.includes(shown(name)), `${JSON.stringify(name)} not shown as ${JSON.stringify(shown(name))}:\n${out.stdout}`);
    await eng.stop();
  });
});
