// The SDK in a real browser: a site that serves @leuria/client's bundle (clients/js/dist) next to
// a test page, headless Chromium (playwright-core, Debian's /usr/bin/chromium), and the engine's
// approval page clicked the way a visitor would.
//
//   const site = await startSite({ routes: { '/api/ai/chat/completions': proxyTo(srv.url + '/chat/completions') } });
//   const browser = await launchBrowser();
//   const page = await openPage(browser, site.url('/blank.html'));   // window.Leuria = the SDK module
//   await page.evaluate(...);
//   await approveInBrowser(browser, engine);                          // clicks Allow on the engine's own page
//
// The bundle must be built first (node clients/js/build.mjs; scripts/test does it).

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { ROOT } from './engine.mjs';

export const CHROMIUM = '/usr/bin/chromium';
export const SDK_DIST = path.join(ROOT, 'clients/js/dist');
export const EXAMPLE_DIR = path.join(ROOT, 'clients/js/example');
export const ARTIFACTS = path.join(ROOT, 'tests/e2e/artifacts');

/** Why the SDK browser tests can't run here, or false. */
export function sdkSkipReason() {
  if (!fs.existsSync(CHROMIUM)) return `${CHROMIUM} is missing (install the chromium package)`;
  if (!fs.existsSync(path.join(SDK_DIST, 'leuria.js'))) return 'clients/js/dist/leuria.js is missing (run node clients/js/build.mjs)';
  return false;
}

const BLANK = `<!doctype html><html><head><meta charset="utf-8"><title>SDK test page</title></head>
<body><main id="app"></main>
<script type="module">
  import * as Leuria from '/sdk/leuria.js';
  window.Leuria = Leuria;
  window.__sdkLoaded = true;
</script></body></html>`;

const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.map': 'application/json', '.html': 'text/html; charset=utf-8', '.css': 'text/css', '.json': 'application/json', '.svg': 'image/svg+xml', '.png': 'image/png' };

async function sendFile(res, file) {
  try {
    const body = await fsp.readFile(file);
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream', 'Cache-Control': 'no-store' });
    res.end(body);
  } catch {
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found');
  }
}

/** A route handler that forwards the request (method, body, content-type) to `target` and streams the answer back. */
export function proxyTo(target) {
  return (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const up = http.request(target, { method: req.method, headers: { 'content-type': req.headers['content-type'] || 'application/json' } }, (upRes) => {
        res.writeHead(upRes.statusCode, { 'Content-Type': upRes.headers['content-type'] || 'application/json', 'Cache-Control': 'no-store' });
        upRes.pipe(res);
      });
      up.on('error', () => {
        res.writeHead(502, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'upstream unreachable' } }));
      });
      up.end(Buffer.concat(chunks));
    });
  };
}

/**
 * A site on 127.0.0.1:<port 0>: /sdk/* is clients/js/dist, /example/* is clients/js/example,
 * /blank.html loads the SDK as window.Leuria, `routes` adds handlers ({'/path': (req, res) => …}),
 * `pages` adds HTML pages ({'/p.html': '<!doctype html>…'}). Every request is recorded in site.requests.
 */
export async function startSite({ routes = {}, pages = {}, host = '127.0.0.1' } = {}) {
  const requests = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    requests.push({ method: req.method, path: url.pathname, headers: req.headers });
    if (routes[url.pathname]) return routes[url.pathname](req, res);
    if (pages[url.pathname] !== undefined) {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
      return res.end(pages[url.pathname]);
    }
    if (url.pathname === '/blank.html' || url.pathname === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      return res.end(BLANK);
    }
    const safe = path.normalize(decodeURIComponent(url.pathname)).replace(/^(\.\.[/\\])+/, '');
    if (safe.startsWith('/sdk/')) return sendFile(res, path.join(SDK_DIST, safe.slice(5)));
    if (safe.startsWith('/example/')) return sendFile(res, path.join(EXAMPLE_DIR, safe.slice(9)));
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found');
  });
  await new Promise((r) => server.listen(0, host, r));
  const port = server.address().port;
  const origin = `http://127.0.0.1:${port}`;
  return {
    port,
    origin,
    requests,
    url: (p = '/blank.html') => `${origin}${p}`,
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }),
  };
}

/** Headless Chromium with the flags the tests need. extraArgs e.g. ['--host-resolver-rules=MAP shop.test 127.0.0.1']. */
export async function launchBrowser(extraArgs = []) {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', ...extraArgs],
  });
}

/**
 * A new context and page at `url`, waiting until the SDK module loaded (blank.html) when waitForSdk.
 * page.logs collects console messages and page errors, for failure messages.
 */
export async function openPage(browser, url, { waitForSdk = true, context: ctxOpts = {} } = {}) {
  const context = await browser.newContext(ctxOpts);
  const page = await context.newPage();
  page.logs = [];
  page.on('console', (m) => page.logs.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => page.logs.push(`pageerror: ${e.message}`));
  await page.goto(url);
  if (waitForSdk) await page.waitForFunction(() => window.__sdkLoaded === true, null, { timeout: 10000 });
  return page;
}

/**
 * The visitor's side of a CLI engine's pairing: waits for the engine to print the approval URL
 * (it runs with --no-open), opens it in its own browser page, and clicks Allow (or Deny).
 * `from` skips stdout lines printed before (pass engine.lines.length before the click).
 */
export async function approveInBrowser(browser, engine, { allow = true, from = 0, timeoutMs = 15000 } = {}) {
  const line = await engine.waitForLine(/Approve or deny at (http:\/\/127\.0\.0\.1:\d+\/connect\/[A-Za-z0-9_-]+)/, timeoutMs, { from });
  const url = /(http:\/\/127\.0\.0\.1:\d+\/connect\/[A-Za-z0-9_-]+)/.exec(line)[1];
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(url);
  await page.click(allow ? '#allow' : '#deny');
  await page.waitForTimeout(200);
  await context.close();
  return url;
}

/** Saves a screenshot under tests/e2e/artifacts/<name>.png (kept as a test artifact). */
export async function screenshot(pageOrLocator, name) {
  await fsp.mkdir(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await pageOrLocator.screenshot({ path: file });
  return file;
}
