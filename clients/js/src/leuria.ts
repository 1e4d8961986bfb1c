// createLeuria: the page's AI in one object. It owns the providers (detection, the visitor's pick,
// the page's lifecycle) and sends each request down the cascade (cascade.ts) as a Run.
import { isOwnAI } from "./cascade.js";
import { LeuriaConversation, type ConversationCore } from "./conversation.js";
import { ProviderError } from "./errors.js";
import { prepareMessages } from "./messages.js";
import { every, onWindow, pageVisible, reportError } from "./page.js";
import { destroyedError, raceAbort, Registry } from "./registry.js";
import { failedRun } from "./run.js";
import { middlewareList, toolSet } from "./tools.js";
import { maxTurnsOf, startTurn } from "./turn.js";
import type { ChatRequest, ConversationOptions, EmbedOptions, Embeddings, Leuria, LeuriaOptions, Run } from "./types.js";

const DEFAULT_WATCH_MS = 5000;

export function createLeuria(options: LeuriaOptions): Leuria {
  if (!options || !Array.isArray(options.providers)) {
    throw new TypeError("createLeuria needs { providers: [...] }, for example [bridge({ app: \"My shop\" }), server({ url })].");
  }
  const fallback = options.fallback ?? "ask";
  if (fallback !== "ask" && fallback !== "auto") throw new TypeError('fallback must be "ask" or "auto".');

  const registry = new Registry(options.providers, fallback);
  const core: ConversationCore = { registry, middleware: middlewareList(options.middleware), runs: new Set(), conversations: new Set() };
  /** embed() calls in flight, aborted by destroy(). */
  const embeds = new Set<AbortController>();
  const stops: (() => void)[] = [];
  const autoDetect = options.autoDetect !== false;

  registry.attachAll();
  if (autoDetect) {
    void registry.detectAll();
    // Follow what the visitor does in Leuria (connects, switches AI) when they come back to the page.
    stops.push(onWindow("focus", () => void registry.detectAll()));
    const watchMs = options.watchMs ?? DEFAULT_WATCH_MS;
    if (Number.isFinite(watchMs) && watchMs > 0) {
      stops.push(
        every(watchMs, () => {
          if (pageVisible()) void registry.detectAll();
        }),
      );
    }
  }
  if (options.closeOnUnload !== false) {
    stops.push(onWindow("pagehide", () => unload()));
    // A page restored from the back/forward cache had its sessions closed on pagehide.
    if (autoDetect) {
      stops.push(
        onWindow("pageshow", (event) => {
          if ((event as PageTransitionEvent).persisted) void registry.detectAll();
        }),
      );
    }
  }

  /** The page is going away: end sessions with keepalive requests, which outlive the page. */
  function unload(): void {
    for (const conversation of [...core.conversations]) void conversation.endSessions({ keepalive: true });
    for (const provider of registry.providers) {
      try {
        provider.destroy?.({ keepalive: true });
      } catch (error) {
        reportError(error);
      }
    }
  }

  function chat(request: ChatRequest): Run {
    if (registry.destroyed) return failedRun(destroyedError());
    try {
      if (!request || typeof request !== "object") throw new TypeError("chat() needs a request, for example { prompt: \"Hello\" }.");
      const prepared = prepareMessages(request);
      return startTurn(core, {
        ...prepared,
        tools: toolSet(request.tools),
        ...(request.schema !== undefined ? { schema: request.schema } : {}),
        maxTurns: maxTurnsOf(request.maxTurns),
        routing: { localOnly: request.localOnly === true, ...(request.provider !== undefined ? { provider: request.provider } : {}) },
        ...(request.signal !== undefined ? { signal: request.signal } : {}),
      });
    } catch (error) {
      return failedRun(error instanceof Error ? error : new Error(String(error)));
    }
  }

  function conversation(conversationOptions: ConversationOptions = {}): LeuriaConversation {
    return new LeuriaConversation(core, conversationOptions);
  }

  async function embed(texts: string[], embedOptions: EmbedOptions = {}): Promise<Embeddings> {
    if (registry.destroyed) throw destroyedError();
    if (!Array.isArray(texts) || texts.some((text) => typeof text !== "string")) throw new TypeError("embed() needs an array of strings.");
    const kind = embedOptions.kind ?? "document";
    if (kind !== "query" && kind !== "document") throw new TypeError('kind must be "query" or "document".');
    const controller = new AbortController();
    const outer = embedOptions.signal;
    const onAbort = () => controller.abort(outer?.reason);
    if (outer?.aborted) onAbort();
    else outer?.addEventListener("abort", onAbort, { once: true });
    embeds.add(controller);
    try {
      const routing = { localOnly: embedOptions.localOnly === true, ...(embedOptions.provider !== undefined ? { provider: embedOptions.provider } : {}) };
      const provider = await registry.pick(["embed"], routing, controller.signal);
      if (!texts.length) {
        const model = registry.getState().providers.find((state) => state.id === provider.id)?.embedModel ?? "";
        return { model, vectors: [], provider: provider.id };
      }
      const result = await raceAbort(provider.embed!([...texts], { kind, signal: controller.signal }), controller.signal);
      if (!result || !Array.isArray(result.vectors) || result.vectors.length !== texts.length) {
        throw new ProviderError(provider.id, "bad_answer", "The AI gave an unexpected answer.", "embed() returned a wrong number of vectors");
      }
      return { model: String(result.model ?? ""), vectors: result.vectors, provider: provider.id };
    } finally {
      embeds.delete(controller);
      outer?.removeEventListener("abort", onAbort);
    }
  }

  function connect(providerId?: string): Promise<void> {
    if (registry.destroyed) return Promise.reject(destroyedError());
    const id = providerId ?? registry.connectTarget();
    if (id === null) return Promise.reject(new Error("No AI needs a visitor action right now."));
    const provider = registry.find(id);
    if (!provider) return Promise.reject(new Error(`Unknown provider "${id}".`));
    if (typeof provider.connect !== "function") return Promise.reject(new Error(`${provider.label} has nothing to connect.`));
    // Called before any await: the provider opens a link or a window inside the visitor's click,
    // which browsers allow only synchronously.
    let connecting: Promise<void>;
    try {
      connecting = Promise.resolve(provider.connect());
    } catch (error) {
      connecting = Promise.reject(error);
    }
    return settleThenDetect(connecting, id);
  }

  function disconnect(providerId?: string): Promise<void> {
    if (registry.destroyed) return Promise.reject(destroyedError());
    const id = providerId ?? registry.providers.find(isOwnAI)?.id ?? registry.getState().active;
    if (!id) return Promise.reject(new Error("No AI to disconnect."));
    const provider = registry.find(id);
    if (!provider) return Promise.reject(new Error(`Unknown provider "${id}".`));
    let disconnecting: Promise<void>;
    try {
      disconnecting = Promise.resolve(provider.disconnect?.());
    } catch (error) {
      disconnecting = Promise.reject(error);
    }
    return settleThenDetect(disconnecting, id);
  }

  /** After a connect or disconnect, the provider's state has changed: check it again (once more
   *  if a detect was already in flight), then report the action's own outcome. */
  async function settleThenDetect(action: Promise<void>, id: string): Promise<void> {
    try {
      await action;
    } finally {
      await registry.detectOne(id, true);
    }
  }

  function destroy(): void {
    if (registry.destroyed) return;
    for (const stop of stops.splice(0)) stop();
    for (const run of [...core.runs]) run.cancel("This Leuria instance was destroyed.");
    for (const controller of embeds) controller.abort(destroyedError());
    for (const open of [...core.conversations]) void open.close();
    core.conversations.clear();
    for (const provider of registry.providers) {
      try {
        provider.destroy?.({ keepalive: false });
      } catch (error) {
        reportError(error);
      }
    }
    registry.destroy();
  }

  return Object.freeze({
    getState: registry.getState,
    subscribe: registry.subscribe,
    chat,
    conversation,
    embed,
    connect,
    disconnect,
    chooseInstead: (providerId: string | null) => {
      if (!registry.destroyed) registry.choose(providerId);
    },
    // By hand, after something the page knows changed (the visitor revoked the site in Leuria,
    // say): a detect already in flight began before that, so one more runs after it.
    detect: () => registry.detectAll(true),
    destroy,
  });
}
