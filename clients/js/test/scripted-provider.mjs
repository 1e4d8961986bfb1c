// A configurable Provider for the core tests: its status and capabilities are set by the test, and
// its chat follows a script (text, reasoning, tool calls through callTool, failures, waiting for
// the abort). Everything it is asked is recorded in provider.log.

/** @typedef {{ text?: string, reasoning?: string, tool?: string, args?: unknown, id?: string,
 *   fail?: Error | string, waitForAbort?: boolean, wait?: number, emit?: object }} Step */

export const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise with its resolve and reject, to hold a provider in a given state. */
export function deferred() {
  let resolve, reject;
  const promise = new Promise((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/**
 * @param {object} options
 * @param {string} [options.id]
 * @param {boolean} [options.ownAI] the visitor's own AI (Provider.ownAI)
 * @param {string} [options.label]
 * @param {"device"|"visitor-cloud"|"site"} [options.locality]
 * @param {string[]} [options.offers]
 * @param {string} [options.status]
 * @param {string[]} [options.capabilities]
 * @param {string} [options.reply] what chat answers (streamed as one text event)
 * @param {Step[]} [options.steps] a chat script, instead of reply
 * @param {object} [options.result] overrides what chat returns ({ text, model, reason })
 * @param {(request: object) => Promise<object>} [options.chat] a chat of the test's own
 * @param {Error} [options.detectError] detect() throws it
 * @param {Promise<unknown>} [options.detectGate] detect() waits for it
 * @param {boolean} [options.sessions] offer openConversation
 * @param {boolean} [options.connectable] offer connect/disconnect
 * @param {boolean} [options.embeds] offer embed()
 */
export function scripted(options = {}) {
  const id = options.id ?? "p";
  const log = {
    attached: 0,
    detects: 0,
    detectsInFlight: 0,
    maxDetectsInFlight: 0,
    chats: [],
    outcomes: [],
    aborted: 0,
    sessions: [],
    sessionSends: [],
    sessionCloses: [],
    embeds: [],
    connects: 0,
    disconnects: 0,
    destroyed: [],
    order: [],
  };
  let report = pick(options, ["status", "capabilities", "model", "action", "progress", "detail", "embedModel"]);
  report.status ??= "ready";
  report.capabilities ??= ["chat"];
  let context;

  async function answer(request) {
    log.order.push("chat");
    if (options.chat) return options.chat(request);
    const steps = options.steps ?? [{ text: options.reply ?? `Hello from ${id}` }];
    let text = "";
    for (const step of steps) {
      if (step.text !== undefined) {
        text += step.text;
        request.emit({ type: "text", text: step.text });
      }
      if (step.reasoning !== undefined) request.emit({ type: "reasoning", text: step.reasoning });
      if (step.emit) request.emit(step.emit);
      if (step.tool !== undefined) log.outcomes.push(await request.callTool(step.tool, step.args, step.id ?? ""));
      if (step.wait !== undefined) await tick(step.wait);
      if (step.fail !== undefined) throw typeof step.fail === "string" ? new Error(step.fail) : step.fail;
      if (step.waitForAbort) {
        await new Promise((resolve) => request.signal.addEventListener("abort", resolve, { once: true }));
        log.aborted++;
        throw request.signal.reason;
      }
    }
    return { text, ...options.result };
  }

  const provider = {
    id,
    label: options.label ?? `Provider ${id}`,
    locality: options.locality ?? "device",
    offers: options.offers ?? ["chat"],
    ...(options.ownAI !== undefined ? { ownAI: options.ownAI } : {}),
    attach(ctx) {
      log.attached++;
      log.order.push("attach");
      context = ctx;
    },
    async detect() {
      log.detects++;
      log.order.push("detect");
      log.detectsInFlight++;
      log.maxDetectsInFlight = Math.max(log.maxDetectsInFlight, log.detectsInFlight);
      try {
        if (options.detectGate) await options.detectGate;
        if (options.detectError) throw options.detectError;
        return structuredClone(report);
      } finally {
        log.detectsInFlight--;
      }
    },
    chat(request) {
      log.chats.push(request);
      return answer(request);
    },
    destroy(opts) {
      log.destroyed.push(opts);
    },

    // ---- test controls (not part of the Provider interface)
    log,
    /** What the next detect() reports. */
    set(partial) {
      report = { ...report, ...partial };
      return provider;
    },
    /** Pushes a change now, as a provider does with ProviderContext.update. */
    push(partial) {
      context.update(partial);
    },
    redetect() {
      context.redetect();
    },
  };

  if (options.sessions) {
    provider.openConversation = (opts) => {
      const session = { opts, sends: [] };
      log.sessions.push(session);
      return {
        send(request) {
          session.sends.push(request);
          log.sessionSends.push(request);
          return answer(request);
        },
        async close(closeOptions) {
          log.sessionCloses.push(closeOptions);
        },
      };
    };
  }
  if (options.connectable) {
    provider.connect = () => {
      log.connects++;
      log.order.push("connect");
      if (options.connectError) return Promise.reject(options.connectError);
      report = { ...report, ...(options.afterConnect ?? { status: "ready", action: undefined }) };
      return Promise.resolve();
    };
    provider.disconnect = async () => {
      log.disconnects++;
      report = { ...report, status: "needs-action", action: "connect" };
    };
  }
  if (options.embeds) {
    provider.embed = async (texts, opts) => {
      log.embeds.push({ texts, opts });
      if (options.embedError) throw options.embedError;
      if (options.embedHang) await new Promise(() => {});
      return { model: options.embedModelName ?? "nomic", vectors: texts.map((text) => [text.length, 1]) };
    };
  }
  return provider;
}

function pick(object, keys) {
  const out = {};
  for (const key of keys) if (object[key] !== undefined) out[key] = object[key];
  return out;
}

/** Collects a run's events with one iterator. */
export async function events(run) {
  const out = [];
  for await (const event of run) out.push(event);
  return out;
}

/** Event types, in order: ["start", "text", "finish"]. */
export async function types(run) {
  return (await events(run)).map((event) => event.type);
}

/** Creates an instance for a test, without timers or page events unless asked. */
export function quiet(extra = {}) {
  return { autoDetect: false, closeOnUnload: false, ...extra };
}
