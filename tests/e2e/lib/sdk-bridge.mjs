// bridge() in a real browser against the real engine: the test page's setup (createLeuria with one
// bridge(), a Connect button, a page tool), pairing it the way a visitor would, runs collected as
// plain data, and a proxy whose connections a test can cut (to drop the event stream or the tool
// channel for real, on the wire, without any test hook in the SDK).
//
//   await setupBridgePage(page, { url: engine.base });
//   await pairPage(browser, page, engine);                // CLI engine: clicks Connect, then Allow
//   const r = await chatInPage(page, { prompt: 'Find a blue mug', tools: ['search_products'] });
//   const proxy = await startCutProxy(engine.port);        // bridge({ url: proxy.url }); proxy.cut(/\/stream$/)

import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { admin } from './http.mjs';
import { approveInBrowser } from './sdk-page.mjs';

export const PRODUCTS = [{ name: 'Celadon mug', price: 24, stock: 3 }];

/**
 * createLeuria({ providers: [bridge({ url, app, needs })], ...leuria }) as window.ai, every state
 * kept in window.states, a #connect button whose click calls ai.connect('bridge'), the page tool
 * search_products (its calls in window.calls), and the leuria:// links the bridge opened in
 * window.links (recorded, then clicked as usual).
 */
export async function setupBridgePage(page, { url, app = 'Mug shop', needs = { tools: true }, leuria = {} }) {
  await page.evaluate(({ url, app, needs, leuria }) => {
    const { createLeuria, bridge } = window.Leuria;
    window.states = [];
    window.calls = [];
    window.links = [];
    const click = HTMLAnchorElement.prototype.click;
    HTMLAnchorElement.prototype.click = function () {
      if (this.href.startsWith('leuria:')) window.links.push(this.href);
      return click.call(this);
    };
    window.ai = createLeuria({ providers: [bridge({ url, app, needs })], ...leuria });
    window.ai.subscribe(() => window.states.push(window.ai.getState()));
    window.pageTools = {
      search_products: {
        name: 'search_products',
        description: 'Search products. Returns name, price and stock.',
        inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
        execute: (args) => {
          window.calls.push(args);
          return [{ name: 'Celadon mug', price: 24, stock: 3 }];
        },
      },
    };
    const button = document.createElement('button');
    button.id = 'connect';
    button.textContent = 'Use my AI';
    button.onclick = () => {
      window.connectDone = false;
      window.connecting = window.ai.connect('bridge').then(
        () => (window.connectDone = true),
        (e) => (window.connectError = String(e)),
      );
    };
    document.body.append(button);
  }, { url, app, needs, leuria });
}

/** The bridge's state in the page. */
export function bridgeState(page) {
  return page.evaluate(() => window.ai.getState().providers.find((p) => p.id === 'bridge'));
}

/** Waits until the bridge's state matches `fields` (e.g. {status: 'ready'}; a string value written
 *  '/…/' is a regular expression, e.g. {detail: '/Waiting/'}); returns the state. */
export async function waitBridge(page, fields, timeoutMs = 15000) {
  try {
    await page.waitForFunction((f) => {
      const s = window.ai.getState().providers.find((p) => p.id === 'bridge');
      return Object.entries(f).every(([k, v]) => (typeof v === 'string' && v.startsWith('/') ? new RegExp(v.slice(1, -1)).test(s[k] ?? '') : s[k] === v));
    }, fields, { timeout: timeoutMs, polling: 50 });
  } catch (e) {
    throw new Error(`bridge state never matched ${JSON.stringify(fields)}: now ${JSON.stringify(await bridgeState(page))}\npage logs:\n${page.logs?.join('\n')}\n${e.message}`);
  }
  return bridgeState(page);
}

/**
 * The visitor clicks the page's Connect button. The first time it is a real click (a trusted
 * gesture, as browsers require for opening leuria://). Chromium then shows its "Open Leuria?"
 * dialog, which is tab-modal: until the visitor answers it, the tab gets no more real input, and
 * headless, nobody can answer it. So later clicks on the same page are dispatched as DOM click
 * events: the same handler runs, the same way. Playwright runs them as a user gesture, so the page
 * has its user activation, as after a real click (the bridge opens nothing without one); only the
 * browser may then refuse to hand the link to the system, which no test here needs.
 */
export async function clickConnect(page) {
  const opened = await page.evaluate(() => window.links.length);
  if (opened === 0) await page.click('#connect');
  else await page.locator('#connect').dispatchEvent('click');
}

/** CLI engine: the visitor clicks the page's button, then Allow (or Deny) on the engine's page. */
export async function pairPage(browser, page, engine, { allow = true } = {}) {
  const from = engine.lines.length;
  await clickConnect(page);
  await approveInBrowser(browser, engine, { allow, from });
  if (allow) return waitBridge(page, { status: 'ready' });
  await page.waitForFunction(() => window.connectDone === true, null, { timeout: 10000 });
  return bridgeState(page);
}

/** App engine: the visitor clicks the page's button; the app registers the link it was handed and
 *  the visitor allows (the app's side, through the admin API). Returns the bridge's ready state. */
export async function pairPageInApp(page, engine) {
  const opened = await page.evaluate(() => window.links.length);
  await clickConnect(page);
  await waitBridge(page, { detail: '/Waiting/' });
  const q = new URL((await page.evaluate(() => window.links))[opened]).searchParams;
  const body = { origin: q.get('origin'), nonce: q.get('nonce') };
  if (q.get('app')) body.app = q.get('app');
  const l = await admin(engine, '/admin/pairing/link', { body });
  assert.equal(l.status, 201, l.body);
  const d = await admin(engine, `/admin/pairing/${l.json.requestId}`, { body: { allow: true } });
  assert.equal(d.status, 200, d.body);
  return waitBridge(page, { status: 'ready' });
}

/** The token the page keeps for `url`. */
export function storedToken(page, url) {
  return page.evaluate((key) => localStorage.getItem(key), `leuria:token:${url}`);
}

/**
 * Runs ai.chat(request) (or conv.send when `conversation` names window[conversation]) in the page.
 * `tools` are names of window.pageTools. Returns {events, text, error} as plain data.
 */
export function chatInPage(page, { tools = [], conversation, prompt, ...rest }) {
  return page.evaluate(async ({ tools, conversation, prompt, rest }) => {
    const list = tools.map((name) => window.pageTools[name]);
    const run = conversation ? window[conversation].send(prompt, rest) : window.ai.chat({ prompt, ...rest, ...(list.length ? { tools: list } : {}) });
    window.currentRun = run;
    window.liveEvents = [];
    const events = window.liveEvents;
    const plain = (e) => {
      if (e.type === 'error') return { type: 'error', name: e.error.name, message: e.error.message, code: e.error.code, detail: e.error.detail };
      return JSON.parse(JSON.stringify(e));
    };
    for await (const e of run) events.push(plain(e));
    let text;
    let error;
    try {
      text = rest.schema ? JSON.stringify(await run.object()) : await run.text();
    } catch (e) {
      error = { name: e.name, message: e.message, code: e.code, detail: e.detail };
    }
    return { events, text, error, provider: run.provider };
  }, { tools, conversation, prompt, rest });
}

/** Text events joined. */
export const streamed = (events) => events.filter((e) => e.type === 'text').map((e) => e.text).join('');

/** Engine stderr lines of requests (-v): http.request and http.gate (preflights aren't logged). */
export const requestLines = (engine) => engine.stderrLines.filter((l) => /event=http\.(request|gate|refused)/.test(l));

/**
 * An HTTP proxy on 127.0.0.1:<port 0> in front of the engine, so a test can cut live connections.
 * It rewrites Host to the engine's (the engine only answers Host: 127.0.0.1:<its port>, which blocks
 * DNS rebinding) and passes everything else through as is, Origin included, so the engine sees the
 * page exactly as without it. WebSocket upgrades are relayed as raw bytes.
 *   proxy.url, proxy.requests ([{method, path}]), proxy.cut(/regexp on the path/) → connections cut,
 *   proxy.hold(/regexp/, ms) → new requests on matching paths wait ms before they reach the engine, proxy.close()
 */
export async function startCutProxy(enginePort) {
  const requests = [];
  const live = new Set();
  const holds = [];
  const target = `127.0.0.1:${enginePort}`;
  const server = http.createServer(async (req, res) => {
    requests.push({ method: req.method, path: req.url });
    const hold = holds.find((h) => h.pattern.test(req.url));
    if (hold) await new Promise((r) => setTimeout(r, hold.ms));
    const headers = { ...req.headers, host: target };
    const up = http.request({ host: '127.0.0.1', port: enginePort, method: req.method, path: req.url, headers, agent: false }, (upRes) => {
      res.writeHead(upRes.statusCode, upRes.headers);
      // At once, as the engine does: an event stream's headers come before its first event.
      res.flushHeaders();
      upRes.pipe(res);
    });
    const entry = { path: req.url, cut: () => (up.destroy(), req.socket.destroy()) };
    live.add(entry);
    const done = () => live.delete(entry);
    res.on('close', done);
    up.on('error', () => req.socket.destroy());
    req.pipe(up);
  });
  server.on('upgrade', (req, socket, head) => {
    requests.push({ method: req.method, path: req.url, upgrade: true });
    const upstream = net.connect(enginePort, '127.0.0.1', () => {
      let raw = `${req.method} ${req.url} HTTP/1.1\r\n`;
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        const [k, v] = [req.rawHeaders[i], req.rawHeaders[i + 1]];
        raw += `${k}: ${k.toLowerCase() === 'host' ? target : v}\r\n`;
      }
      upstream.write(`${raw}\r\n`);
      if (head?.length) upstream.write(head);
      socket.pipe(upstream);
      upstream.pipe(socket);
    });
    const entry = { path: req.url, cut: () => (socket.destroy(), upstream.destroy()) };
    live.add(entry);
    const done = () => live.delete(entry);
    socket.on('close', done);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
    upstream.on('close', () => socket.destroy());
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    requests,
    /** Delays new requests whose path matches by ms (a network that comes back slowly). */
    hold(pattern, ms) {
      holds.push({ pattern, ms });
    },
    /** Cuts every live connection whose path matches; returns how many. */
    cut(pattern) {
      const hits = [...live].filter((e) => pattern.test(e.path));
      for (const e of hits) e.cut();
      return hits.length;
    },
    close: () => new Promise((r) => {
      for (const e of live) e.cut();
      server.closeAllConnections?.();
      server.close(() => r());
    }),
  };
}

/** Asserts the plain-words rule on a visitor-facing text. */
export function assertPlainWords(text, what) {
  assert.equal(typeof text, 'string', `${what}: ${text}`);
  assert.ok(!/\b[1-5]\d\d\b|not_paired|no_embedder|turn_completed|webmcp|Bearer|Failed to fetch|TypeError/.test(text), `${what} must be plain words: ${text}`);
}
