// Stand-ins the SDK browser tests inject into pages. The Chromium these tests run (Debian's
// /usr/bin/chromium, headless) has no built-in model, so there is no real `LanguageModel`:
// languageModelStandIn plays Chrome's Prompt API instead.
//
//   await page.addInitScript(languageModelStandIn, { availability: 'downloadable', autoDownload: false });
//   await page.evaluate(() => window.__lm.download.progress(0.4));   // then .finish()
//
// Like Chrome, it refuses to start a download without the visitor's click (user activation): a
// provider that awaits anything before LanguageModel.create fails here as it would for real.

/**
 * Runs in the page (pass it to page.addInitScript). config:
 *   availability  'available' (default) | 'downloadable' | 'downloading' | 'unavailable'
 *   autoDownload  true (default): a download reports 0, 0.5, 1 and finishes by itself;
 *                 false: the test drives it with window.__lm.download.progress(x) / .finish()
 *   answers       answers to give in order, then "Browser says: <input>"; an answer may be
 *                 { tool, args, text } to call a page tool first ({result} in text is replaced)
 */
export function languageModelStandIn(config = {}) {
  const lm = {
    availability: config.availability ?? 'available',
    answers: [...(config.answers ?? [])],
    created: [],
    prompts: [],
    download: null,
  };
  const delay = (ms) => new Promise((r) => setTimeout(r, ms));

  function session(options) {
    return {
      destroyed: false,
      promptStreaming(input, opts = {}) {
        lm.prompts.push({ input, responseConstraint: opts.responseConstraint ?? null });
        const signal = opts.signal;
        const planned = lm.answers.shift() ?? `Browser says: ${input}`;
        return new ReadableStream({
          async start(controller) {
            try {
              let text = planned;
              if (typeof planned === 'object') {
                const tool = (options.tools ?? []).find((t) => t.name === planned.tool);
                const result = tool ? await tool.execute(planned.args) : 'no such tool';
                text = planned.text.replace('{result}', result);
              }
              for (const piece of text.match(/.{1,5}/gs) ?? ['']) {
                if (signal?.aborted) throw new DOMException('Aborted', 'AbortError');
                controller.enqueue(piece);
                await delay(5);
              }
              controller.close();
            } catch (e) {
              controller.error(e);
            }
          },
        });
      },
      async prompt(input, opts) {
        let out = '';
        const reader = this.promptStreaming(input, opts).getReader();
        for (let r = await reader.read(); !r.done; r = await reader.read()) out += r.value;
        return out;
      },
      destroy() {
        this.destroyed = true;
      },
    };
  }

  window.LanguageModel = {
    async availability() {
      return lm.availability;
    },
    create(options = {}) {
      lm.created.push({
        initialPrompts: options.initialPrompts ?? null,
        tools: (options.tools ?? []).map((t) => t.name),
        activation: navigator.userActivation?.isActive ?? null,
      });
      if (lm.availability === 'unavailable') return Promise.reject(new DOMException('Unavailable', 'NotSupportedError'));
      if (lm.availability === 'available') return Promise.resolve(session(options));
      // A download: like Chrome, only from a visitor's click.
      if (!navigator.userActivation?.isActive) return Promise.reject(new DOMException('Requires a user gesture.', 'NotAllowedError'));
      const monitor = new EventTarget();
      options.monitor?.(monitor);
      lm.availability = 'downloading';
      return new Promise((resolve) => {
        const report = (loaded) => {
          const e = new Event('downloadprogress');
          e.loaded = loaded;
          e.total = 1;
          monitor.dispatchEvent(e);
        };
        lm.download = {
          progress: report,
          finish() {
            report(1);
            lm.availability = 'available';
            resolve(session(options));
          },
        };
        if (config.autoDownload !== false) {
          (async () => {
            for (const x of [0, 0.5]) {
              await delay(20);
              report(x);
            }
            await delay(20);
            lm.download.finish();
          })();
        }
      });
    },
  };
  window.__lm = lm;
}

/**
 * Runs in the page (page.addInitScript): plays the operating system's side of a leuria:// link.
 * Headless Chromium has no handler for it, and its external-protocol prompt would swallow the
 * page's later clicks; here the link is recorded in window.__leuriaLinks (with whether it came
 * from a click) instead of being followed.
 */
export function leuriaLinkCatcher() {
  window.__leuriaLinks = [];
  window.addEventListener('click', (event) => {
    const link = event.target?.closest?.('a[href^="leuria:"]');
    if (!link) return;
    event.preventDefault();
    window.__leuriaLinks.push({ href: link.href, activation: navigator.userActivation?.isActive ?? null });
  }, true);
}
