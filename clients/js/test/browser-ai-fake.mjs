// A stand-in for the Prompt API's LanguageModel (Chrome's built-in model), installed on
// globalThis for browserAI()'s unit tests. It records what the provider asks for, and answers
// with `reply(input, session)`: a string, an array of chunks, or { tool, args, after(result) }
// to make the model call a page tool first.

export function installLanguageModel({ availability = 'available', reply = (input) => `echo: ${input}`, progressSteps = [0, 0.5, 1], failCreate, failPrompt } = {}) {
  const lm = {
    availability_: availability,
    availabilityCalls: [],
    created: [],
    sessions: [],
    async availability(options) {
      lm.availabilityCalls.push(options);
      return lm.availability_;
    },
    create(options = {}) {
      lm.created.push(options);
      if (failCreate) return Promise.reject(failCreate);
      const downloading = lm.availability_ === 'downloadable' || lm.availability_ === 'downloading';
      const monitor = new EventTarget();
      options.monitor?.(monitor);
      return (async () => {
        if (downloading) {
          lm.availability_ = 'downloading';
          for (const loaded of progressSteps) {
            await new Promise((r) => setTimeout(r, 5));
            const e = new Event('downloadprogress');
            e.loaded = loaded;
            e.total = 1;
            monitor.dispatchEvent(e);
          }
          lm.availability_ = 'available';
        }
        const session = makeSession(options, reply, failPrompt);
        lm.sessions.push(session);
        return session;
      })();
    },
  };
  globalThis.LanguageModel = lm;
  return lm;
}

export function removeLanguageModel() {
  delete globalThis.LanguageModel;
}

function makeSession(options, reply, failPrompt) {
  const session = {
    options,
    prompts: [],
    destroyed: false,
    promptStreaming(input, promptOptions = {}) {
      session.prompts.push({ input, options: promptOptions });
      const signal = promptOptions.signal;
      return new ReadableStream({
        async start(controller) {
          const abortError = () => new DOMException('The operation was aborted.', 'AbortError');
          try {
            if (failPrompt) throw failPrompt;
            let answer = await reply(input, session);
            if (answer && typeof answer === 'object' && !Array.isArray(answer) && answer.tool) {
              const tool = (options.tools || []).find((t) => t.name === answer.tool);
              const result = await tool.execute(answer.args);
              answer = answer.after(result);
            }
            const chunks = Array.isArray(answer) ? answer : String(answer).match(/.{1,4}/gs) || [''];
            for (const c of chunks) {
              if (signal?.aborted) throw abortError();
              controller.enqueue(c);
              await new Promise((r) => setTimeout(r, session.chunkDelayMs ?? 1));
            }
            if (signal?.aborted) throw abortError();
            controller.close();
          } catch (e) {
            controller.error(e);
          }
        },
      });
    },
    destroy() {
      session.destroyed = true;
    },
  };
  return session;
}
