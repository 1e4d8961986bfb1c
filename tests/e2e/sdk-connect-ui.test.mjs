// <leuria-connect> in headless Chromium, through its states (screenshots kept under
// tests/e2e/artifacts/connect-ui-<state>.png), and the example shop (clients/js/example, served
// by scripts/example-server.mjs) answering through server() with its search_products tool.
// browserAI() runs against a LanguageModel stand-in: this Chromium has no built-in model.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { startOpenAiServer } from '../fakes/openai-server.mjs';
import { BIN, ROOT, closedPort, startEngine, stopAll } from './helpers.mjs';
import { startSite, proxyTo, launchBrowser, approveInBrowser, screenshot, sdkSkipReason } from './lib/sdk-page.mjs';
import { languageModelStandIn, leuriaLinkCatcher } from './lib/sdk-fakes.mjs';

const skip = sdkSkipReason();
const ROUTE = '/api/ai/chat/completions';

/** A page with the element, following createLeuria({ providers: [bridge, browserAI, server] }). */
const UI_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Connect UI</title>
<style>body { font-family: system-ui; margin: 24px; width: 420px; }</style></head>
<body><leuria-connect id="connect"></leuria-connect>
<script type="module">
  import * as Leuria from '/sdk/leuria.js';
  const params = new URLSearchParams(location.search);
  const { createLeuria, bridge, browserAI, server, defineConnectElement } = Leuria;
  defineConnectElement();
  defineConnectElement(); // twice is fine
  window.ai = createLeuria({ providers: [
    bridge({ app: 'Test shop', url: params.get('engine') }),
    browserAI(),
    server({ url: '${ROUTE}' }),
  ] });
  window.changes = 0;
  const el = document.getElementById('connect');
  el.addEventListener('leuria-change', () => window.changes++);
  el.leuria = window.ai;
  window.__ready = true;
</script></body></html>`;

/** The same element, given its Leuria object before defineConnectElement() ran (it upgrades later). */
const LATE_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Connect UI, defined late</title></head>
<body><leuria-connect id="connect"></leuria-connect>
<script type="module">
  import * as Leuria from '/sdk/leuria.js';
  const params = new URLSearchParams(location.search);
  const { createLeuria, bridge, server, defineConnectElement } = Leuria;
  window.ai = createLeuria({ providers: [bridge({ app: 'Test shop', url: params.get('engine') }), server({ url: '${ROUTE}' })] });
  document.getElementById('connect').leuria = window.ai;
  defineConnectElement();
  window.__ready = true;
</script></body></html>`;

describe('Connect UI and the example shop', { skip, timeout: 180000 }, () => {
  let srv;
  let site;
  let browser;
  let respond = () => ({ text: 'ok' });

  before(async () => {
    srv = await startOpenAiServer({ respond: (body, i) => respond(body, i) });
    site = await startSite({ routes: { [ROUTE]: proxyTo(`${srv.url}/chat/completions`) }, pages: { '/ui.html': UI_PAGE, '/late.html': LATE_PAGE } });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await site?.close();
    await srv?.close();
    await stopAll();
  });

  async function uiPage(engineUrl, lm = { availability: 'downloadable', autoDownload: false }, file = '/ui.html') {
    const context = await browser.newContext({ viewport: { width: 520, height: 400 } });
    await context.addInitScript(languageModelStandIn, lm);
    await context.addInitScript(leuriaLinkCatcher);
    const page = await context.newPage();
    page.logs = [];
    page.on('pageerror', (e) => page.logs.push(`pageerror: ${e.message}`));
    await page.goto(site.url(`${file}?engine=${encodeURIComponent(engineUrl)}`));
    await page.waitForFunction(() => window.__ready === true);
    return page;
  }

  const status = (page) => page.locator('leuria-connect [role="status"]');
  const button = (page, name) => page.locator('leuria-connect').getByRole('button', { name, exact: true });
  const element = (page) => page.locator('leuria-connect');

  it('walks through needs-action, waiting, not running, alternatives and downloading', async () => {
    const dead = `http://127.0.0.1:${await closedPort()}`;
    const page = await uiPage(dead);

    // Needs action: the own AI first, the others as secondary choices.
    await assert.doesNotReject(status(page).getByText('Connect Leuria to use your own AI on this site.').waitFor());
    await button(page, 'Connect your AI').waitFor();
    await button(page, "Use this browser's AI").waitFor();
    await button(page, "Use this site's AI").waitFor();
    assert.equal(await status(page).getAttribute('aria-live'), 'polite');
    await screenshot(element(page), 'connect-ui-needs-action');

    // Waiting: the click opens Leuria's link, then the page waits for the visitor's answer.
    await button(page, 'Connect your AI').click();
    await status(page).getByText('Waiting for you to allow this site in Leuria…').waitFor({ timeout: 3000 });
    assert.equal(await button(page, 'Connect your AI').count(), 0, 'no second link while one is pending');
    const links = await page.evaluate(() => window.__leuriaLinks);
    assert.equal(links.length, 1);
    assert.match(links[0].href, /^leuria:\/\/connect\?/);
    assert.equal(links[0].activation, true, 'the link opened inside the click');
    await screenshot(element(page), 'connect-ui-waiting');

    // No answer for about 10 s: Leuria isn't running; offer to try again.
    await status(page).getByText("Leuria isn't running, or isn't installed.").waitFor({ timeout: 20000 });
    await button(page, 'Try again').waitFor();
    await screenshot(element(page), 'connect-ui-not-running');

    // Alternatives: the visitor picks the site's AI; their own stays on offer.
    await button(page, "Use this site's AI").click();
    await status(page).getByText("Using this site's AI").waitFor();
    assert.equal(await page.evaluate(() => window.ai.getState().chosen), 'server');
    await button(page, "Use this browser's AI").waitFor();
    await screenshot(element(page), 'connect-ui-alternatives');

    // Downloading: one click picks the browser's AI and starts its download.
    await button(page, "Use this browser's AI").click();
    await page.waitForFunction(() => window.__lm.download !== null);
    await page.evaluate(() => window.__lm.download.progress(0.4));
    await status(page).getByText("Downloading this browser's AI… 40%").waitFor();
    const bar = page.locator('leuria-connect progress');
    assert.equal(await bar.isVisible(), true);
    assert.equal(Number(await bar.evaluate((p) => p.value)), 0.4);
    await button(page, 'Connect your AI').waitFor(); // "Try again" only beside the words about Leuria
    await screenshot(element(page), 'connect-ui-downloading');
    assert.equal(await page.evaluate(() => window.__lm.created.at(-1).activation), true, 'the download began inside the click');

    await page.evaluate(() => window.__lm.download.finish());
    await status(page).getByText("Using this browser's AI (Gemini Nano)").waitFor();
    assert.equal(await bar.isVisible(), false);
    assert.ok((await page.evaluate(() => window.changes)) >= 5, 'leuria-change follows the state');

    // Compact: one line.
    await page.evaluate(() => document.getElementById('connect').setAttribute('compact', ''));
    await screenshot(element(page), 'connect-ui-compact');
    assert.deepEqual(page.logs, []);
  });

  it('picks up a leuria set before it was defined, and Cancel stops waiting for the visitor', async () => {
    const page = await uiPage(`http://127.0.0.1:${await closedPort()}`, undefined, '/late.html');
    await button(page, 'Connect your AI').waitFor();
    const upgraded = await page.evaluate(() => {
      const el = document.getElementById('connect');
      return { same: el.leuria === window.ai, own: Object.hasOwn(el, 'leuria') };
    });
    assert.deepEqual(upgraded, { same: true, own: false }, 'the setter took the early value over');

    await button(page, 'Connect your AI').click();
    await status(page).getByText('Waiting for you to allow this site in Leuria…').waitFor({ timeout: 3000 });
    await button(page, 'Cancel').waitFor();
    await screenshot(element(page), 'connect-ui-waiting-cancel');
    await button(page, 'Cancel').click();
    await status(page).getByText('Connect Leuria to use your own AI on this site.').waitFor();
    await button(page, 'Connect your AI').waitFor();
    assert.equal(await button(page, 'Cancel').count(), 0);

    // Connecting again opens a fresh link, and waits again.
    await button(page, 'Connect your AI').click();
    await status(page).getByText('Waiting for you to allow this site in Leuria…').waitFor({ timeout: 3000 });
    assert.equal((await page.evaluate(() => window.__leuriaLinks)).length, 2);
    assert.deepEqual(page.logs, []);
  });

  it('shows plain words only', async () => {
    const page = await uiPage(`http://127.0.0.1:${await closedPort()}`);
    await button(page, 'Connect your AI').waitFor();
    const text = await element(page).evaluate((el) => el.shadowRoot.querySelector('.box').textContent);
    assert.doesNotMatch(text, /needs-action|ready|bridge|http|error/i);
    const tags = await element(page).evaluate((el) => [...el.shadowRoot.querySelectorAll('[data-key]')].map((b) => b.tagName));
    assert.ok(tags.length >= 3 && tags.every((t) => t === 'BUTTON'));
  });

  it('shows the own AI ready, with Disconnect (real engine, approved in the browser)', { skip: fs.existsSync(BIN) ? false : `${BIN} is missing` }, async () => {
    const engine = await startEngine();
    const page = await uiPage(engine.base, { availability: 'unavailable' });
    await button(page, 'Connect your AI').waitFor();
    const from = engine.lines.length;
    await button(page, 'Connect your AI').click();
    await approveInBrowser(browser, engine, { from });
    await page.waitForFunction(() => window.ai.getState().active === 'bridge', null, { timeout: 15000 });
    const model = await page.evaluate(() => window.ai.getState().providers[0].model);
    await status(page).getByText(model ? `Using ${model}` : 'Using your own AI').waitFor();
    await button(page, 'Disconnect').waitFor();
    assert.equal(await button(page, "Use this site's AI").count(), 0, 'no alternatives once the own AI is ready');
    await screenshot(element(page), 'connect-ui-ready');

    await button(page, 'Disconnect').click();
    await button(page, 'Connect your AI').waitFor();
    assert.equal(await page.evaluate(() => window.ai.getState().active), null);
    await engine.stop();
  });

  it('the example shop answers through server(), running search_products in the page', async () => {
    respond = (body) => {
      const last = body.messages.at(-1);
      if (last.role === 'tool') {
        const found = JSON.parse(last.content);
        return { text: `Yes: ${found.map((p) => `the ${p.name} ($${p.price}, ${p.stock} left)`).join(' and ')}.` };
      }
      return { toolCalls: [{ name: 'search_products', arguments: { query: 'blue', maxPrice: 35 } }] };
    };
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts/example-server.mjs'), '--port', '0', '--upstream', srv.url], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d) => {
          out += d;
          const m = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
          if (m) resolve(m[1]);
        });
        child.on('exit', (code) => reject(new Error(`example server exited (${code}): ${out}`)));
        setTimeout(() => reject(new Error(`no URL printed: ${out}`)), 10000);
      });
      const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
      const page = await context.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(url);
      await assert.doesNotReject(page.locator('.product').nth(7).waitFor());
      assert.equal(await page.locator('.product').count(), 8);
      await button(page, 'Connect your AI').waitFor();

      await button(page, "Use this site's AI").click();
      await page.fill('#question', 'Any blue mugs under $35?');
      await page.click('#send');
      const by = page.locator('.log .ai .by');
      await by.waitFor({ timeout: 10000 });
      assert.equal(await by.textContent(), "Answered by this site's AI");
      const answer = await page.locator('.log .ai .text').textContent();
      // "blue" also finds the Ink mug ("a blue sheen"); the Harbor travel mug is over $35.
      assert.equal(answer, 'Yes: the Tide mug ($32, 4 left) and the Ink mug ($29, 3 left).');
      const toolMessage = srv.requests.filter((r) => r.path === '/v1/chat/completions').at(-1).body.messages.at(-1);
      assert.deepEqual(JSON.parse(toolMessage.content).map((p) => p.name), ['Tide mug', 'Ink mug']);
      await screenshot(page, 'example-shop');
      assert.deepEqual(errors, []);
      await context.close();
    } finally {
      child.kill('SIGTERM');
    }
  });
});
