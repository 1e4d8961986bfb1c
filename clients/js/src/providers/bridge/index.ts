// bridge(): the visitor's own AI, through the Leuria engine on their computer (protocol:
// leuria-engine-protocol.txt). Until the site holds a grant token it sends nothing at all: the
// engine wouldn't answer a site it doesn't know, and the browser might ask the visitor about local
// network access for nothing. Pairing starts only from the visitor's click (connect()).
import type {
  Capability,
  EmbedKind,
  Offer,
  Provider,
  ProviderChatRequest,
  ProviderChatResult,
  ProviderContext,
  ProviderConversation,
  ProviderReport,
  Tool,
} from "../../types.js";
import { BridgeConversation, oneOffChat } from "./chat.js";
import { embedInBatches } from "./embed.js";
import { Engine, engineUrl } from "./engine.js";
import { ClaimLoop, cleanNeeds, connectLink, makeNonce, openLink, type BridgeNeeds, type ClaimOutcome } from "./pairing.js";
import type { EngineSession, SessionContext } from "./session.js";
import { TokenStore, type StorageOption } from "./storage.js";
import { words } from "./words.js";

export type { BridgeNeeds } from "./pairing.js";
export type { KeyValueStorage } from "./storage.js";

export interface BridgeOptions {
  /** The name shown to the visitor in Leuria's approval window, e.g. "Mug shop". */
  app?: string;
  /** What your features need, so Leuria recommends an AI and model that fit, and no bigger. */
  needs?: BridgeNeeds;
  /** The engine's address: http://127.0.0.1:<port> or http://localhost:<port> (anything else is a
   *  TypeError). Default http://127.0.0.1:19570. */
  url?: string;
  /** Where the site's token is kept: "local" (localStorage, the default; memory where it's
   *  blocked), "memory" (forgotten with the page), or your own getItem/setItem/removeItem object. */
  storage?: StorageOption;
  /** Default "bridge". */
  id?: string;
  /** Default "Your AI". */
  label?: string;
  /** Advanced, for tests outside a browser: the fetch to use (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** Advanced, for tests outside a browser: the WebSocket class to use (default globalThis.WebSocket). */
  WebSocket?: typeof WebSocket;
}

export const DEFAULT_URL = "http://127.0.0.1:19570";
/** The protocol's "short timeout" for /health once connected. */
const HEALTH_TIMEOUT_MS = 1500;
const READY_CAPABILITIES: Capability[] = ["chat", "tools", "agent", "images"];

export function bridge(options: BridgeOptions = {}): Provider {
  return new BridgeProvider(options);
}

function report(status: ProviderReport["status"], detail?: string, action?: ProviderReport["action"]): ProviderReport {
  // Every key present: the core merges pushed updates, and an absent key would keep an old value.
  return { status, capabilities: [], model: undefined, action, progress: undefined, detail, embedModel: undefined };
}

class BridgeProvider implements Provider {
  readonly id: string;
  readonly label: string;
  readonly locality = "device" as const;
  readonly offers: readonly Offer[] = ["chat", "embed"];
  /** The visitor's own AI: the cascade holds back the providers after it while it isn't ready. */
  readonly ownAI = true;

  private readonly engine: Engine;
  private readonly tokens: TokenStore;
  private readonly sessionContext: SessionContext;
  private context: ProviderContext | null = null;
  /** The claim loop of the connect in progress. */
  private pairing: ClaimLoop | null = null;
  /** Why the site isn't connected, after a connect that didn't succeed or a forgotten token. */
  private notConnected: ProviderReport | null = null;
  private health: { agent?: string; embed?: string } = {};
  private readonly sessions = new Set<EngineSession>();
  private readonly conversations = new Set<BridgeConversation>();

  constructor(private readonly options: BridgeOptions) {
    this.id = options.id ?? "bridge";
    this.label = options.label ?? "Your AI";
    const url = engineUrl(options.url ?? DEFAULT_URL);
    this.tokens = new TokenStore(options.storage, url);
    const doFetch = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
    this.engine = new Engine({ provider: this.id, url, fetch: doFetch, tokens: this.tokens, onUnpaired: () => this.onUnpaired() });
    this.sessionContext = {
      engine: this.engine,
      provider: this.id,
      // The tool channel is on the same engine: webmcpUrl names the same host and port.
      wsBase: url.replace(/^http/i, "ws"),
      WebSocket: options.WebSocket ?? (globalThis as { WebSocket: typeof WebSocket }).WebSocket,
      model: () => this.health.agent,
    };
  }

  attach(context: ProviderContext): void {
    this.context = context;
  }

  detect(): Promise<ProviderReport> {
    return this.check(true);
  }

  /** detect(); `again`: whether a refused token may be checked once more (another tab re-paired). */
  private async check(again: boolean): Promise<ProviderReport> {
    // A connect in progress says so, even over an old token (a re-pair after a revoke).
    if (this.pairing) return report("needs-action", words.waiting, "connect");
    if (!this.tokens.get()) return this.notConnected ?? report("needs-action", words.connect, "connect");
    let answer;
    try {
      answer = await this.engine.call("GET", "/health", { timeoutMs: HEALTH_TIMEOUT_MS });
    } catch (error) {
      if ((error as { code?: string }).code === "not_connected") {
        // The token was refused; if another tab paired again meanwhile, check the new one.
        if (again && this.tokens.get()) return this.check(false);
        return this.notConnected ?? report("needs-action", words.forgotten, "connect");
      }
      return this.silent();
    }
    const health = answer.json;
    if (answer.status !== 200 || !health || typeof health !== "object" || !("leuria" in health)) return this.silent();
    if (health.paired === false) {
      if (!this.engine.forget(answer.token) && again) return this.check(false);
      return this.notConnected ?? report("needs-action", words.forgotten, "connect");
    }
    this.notConnected = null;
    this.health = {
      agent: typeof health.agent === "string" ? health.agent : undefined,
      embed: typeof health.embed === "string" && health.embed ? health.embed : undefined,
    };
    const capabilities = [...READY_CAPABILITIES];
    if (this.health.embed) capabilities.push("embed");
    return { status: "ready", capabilities, model: this.health.agent, action: undefined, progress: undefined, detail: undefined, embedModel: this.health.embed };
  }

  /**
   * Connected, but /health got no answer. The desktop app is silent both when it isn't running and
   * to a site the visitor revoked there (no 401 ever comes), so keep the token (Leuria may just be
   * closed) and offer connect: a click sends a new link, and the new token replaces the old one.
   */
  private silent(): ProviderReport {
    return this.notConnected ?? report("unavailable", words.notRunningOrForgotten, "connect");
  }

  /** Called synchronously from the visitor's click: the link opens before the first await. */
  connect(): Promise<void> {
    // Pairing starts only from the visitor's action (the protocol's rule). Where the browser tells
    // (userActivation), a call outside a click opens nothing; elsewhere (Node) it goes ahead.
    const activation = (globalThis as { navigator?: { userActivation?: { isActive?: boolean } } }).navigator?.userActivation;
    if (activation && activation.isActive === false) {
      if (!this.pairing) {
        this.notConnected = report(this.tokens.get() ? "unavailable" : "needs-action", words.clickToConnect, "connect");
        this.push(this.notConnected);
      }
      return Promise.resolve();
    }
    this.pairing?.stop(); // a second click restarts with a new nonce, and a new link
    const nonce = makeNonce();
    const needs = cleanNeeds(this.options.needs);
    const origin = (globalThis as { location?: Location }).location?.origin ?? "";
    openLink(connectLink(origin, this.options.app, nonce, needs));
    const body: { nonce: string; app?: string; needs?: BridgeNeeds } = { nonce };
    if (this.options.app) body.app = this.options.app;
    if (needs) body.needs = needs;
    const loop = new ClaimLoop(this.engine, body);
    this.pairing = loop;
    this.notConnected = null;
    this.push(report("needs-action", words.waiting, "connect"));
    return this.finishPairing(loop);
  }

  async disconnect(): Promise<void> {
    this.stopPairing();
    this.closeAll(false);
    this.tokens.forget();
    this.health = {};
    this.notConnected = null;
    this.push(report("needs-action", words.connect, "connect"));
  }

  destroy(options: { keepalive: boolean }): void {
    this.stopPairing();
    this.closeAll(options.keepalive);
  }

  chat(request: ProviderChatRequest): Promise<ProviderChatResult> {
    return oneOffChat(this.sessionContext, request, (s) => this.track(s));
  }

  openConversation(options: { system?: string; tools: readonly Tool[] }): ProviderConversation {
    const conversation: BridgeConversation = new BridgeConversation(this.sessionContext, options, {
      track: (s) => this.track(s),
      onClosed: () => this.conversations.delete(conversation),
    });
    this.conversations.add(conversation);
    return conversation;
  }

  embed(texts: string[], options: { kind: EmbedKind; signal: AbortSignal }): Promise<{ model: string; vectors: number[][] }> {
    // The visitor's embedding model went away (503 no_embedder): the state should stop offering embed.
    return embedInBatches(this.engine, this.id, texts, options, () => this.context?.redetect());
  }

  private async finishPairing(loop: ClaimLoop): Promise<void> {
    const outcome = await loop.run();
    if (this.pairing !== loop) return; // replaced by a newer attempt, or disconnected
    this.pairing = null;
    if (outcome.kind === "allowed") {
      // Replaces any old token (a re-pair after a revoke the page couldn't see).
      this.tokens.set(outcome.token);
      // The core checks again once connect() settles; this makes the state ready at once.
      this.push(await this.detect());
      return;
    }
    this.notConnected = this.afterClaim(outcome);
    this.push(this.notConnected ?? report("needs-action", words.connect, "connect"));
  }

  /** What the state says after a connect that didn't give a token (null: as if none was tried). */
  private afterClaim(outcome: Exclude<ClaimOutcome, { kind: "allowed" }>): ProviderReport | null {
    switch (outcome.kind) {
      case "no_answer":
        // The only way a site learns Leuria isn't there: a connect got no answer. Offer a retry.
        return report("unavailable", words.notInstalled, "connect");
      case "denied":
        return report("needs-action", words.denied, "connect");
      case "too_soon":
        return report("needs-action", words.tooSoon, "connect");
      case "expired":
        return report("needs-action", words.expired, "connect");
      case "error":
        console.warn("[leuria] connect failed:", outcome.detail);
        return report("needs-action", words.connectFailed, "connect");
      default:
        // replaced (another attempt, maybe in another tab, took over) or stopped: quietly.
        return null;
    }
  }

  /** A 401 not_paired, or /health's paired: false: the visitor revoked the site. */
  private onUnpaired(): void {
    this.health = {};
    this.notConnected = report("needs-action", words.forgotten, "connect");
    this.push(this.notConnected);
    // The engine ended the site's sessions when it was revoked; stop following them.
    for (const session of this.sessions) void session.close();
  }

  private stopPairing(): void {
    this.pairing?.stop();
    this.pairing = null;
  }

  private track(session: EngineSession): void {
    this.sessions.add(session);
    session.onEnded = () => this.sessions.delete(session);
  }

  /** Ends every engine session. Conversations stay open: they belong to the page, and their next
   *  turn (after a reconnect, say) starts a new session with the history. */
  private closeAll(keepalive: boolean): void {
    for (const conversation of [...this.conversations]) void conversation.endSession({ keepalive });
    for (const session of [...this.sessions]) void session.close({ keepalive });
  }

  private push(r: ProviderReport): void {
    this.context?.update(r);
  }
}
