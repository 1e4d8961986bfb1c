// HTTP calls to the engine. One place that adds the grant token, applies timeouts, turns network
// failures into plain errors, and forgets the token on 401 not_paired (the protocol's rule: the
// visitor revoked the site, or the engine lost its grants).
import { abortError } from "../../errors.js";
import type { TokenStore } from "./storage.js";
import { bridgeError, engineDetail, words } from "./words.js";

/**
 * The engine's base URL from bridge({ url }), without a trailing slash. Only the loopback forms the
 * protocol allows: the grant token goes with every request, so a page that passes a URL through
 * (a query parameter, a setting) must never send it to another host. Anything else is a TypeError.
 */
export function engineUrl(url: unknown): string {
  const match = typeof url === "string" ? /^http:\/\/(127\.0\.0\.1|localhost):([1-9]\d{0,4})\/?$/.exec(url) : null;
  if (!match || Number(match[2]) > 65535) {
    const shown = typeof url === "string" ? JSON.stringify(url.slice(0, 100)) : typeof url;
    throw new TypeError(`bridge(): url must be http://127.0.0.1:<port> or http://localhost:<port> (Leuria on this computer), not ${shown}.`);
  }
  return `http://${match[1]}:${match[2]}`;
}

export interface EngineOptions {
  provider: string;
  /** The engine's base URL, without a trailing slash. */
  url: string;
  fetch: typeof fetch;
  tokens: TokenStore;
  /** Called once the token was forgotten because the engine no longer knows this site. */
  onUnpaired(): void;
}

export interface CallOptions {
  body?: unknown;
  /** Abort after this long (a timeout counts as "not running"). */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** For calls made while the page unloads (the browser finishes them after the page is gone). */
  keepalive?: boolean;
  /** Send the grant token (default true). Only the claim goes without it. */
  auth?: boolean;
  /** The grant token to send when the store holds none: a session's deferred end after
   *  disconnect() forgot the token it was prepared with (the engine still knows that one). */
  fallbackToken?: string | null;
}

export interface Answer {
  status: number;
  /** The parsed JSON body, or undefined when it isn't JSON. */
  json: any;
  /** The grant token this request carried (null for the claim). */
  token: string | null;
}

/** An AbortSignal that fires when any of `signals` does (AbortSignal.any isn't everywhere yet). */
export function anySignal(signals: (AbortSignal | undefined)[]): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  for (const s of signals) {
    if (!s) continue;
    if (s.aborted) {
      controller.abort(s.reason);
      break;
    }
    const onAbort = () => controller.abort(s.reason);
    s.addEventListener("abort", onAbort, { once: true });
    cleanups.push(() => s.removeEventListener("abort", onAbort));
  }
  return { signal: controller.signal, dispose: () => cleanups.forEach((c) => c()) };
}

export class Engine {
  constructor(private readonly o: EngineOptions) {}

  get url(): string {
    return this.o.url;
  }

  get token(): string | null {
    return this.o.tokens.get();
  }

  /**
   * One request. Resolves with any HTTP answer except 401 not_paired (which forgets the token and
   * throws not_connected). Throws not_running when nothing readable came back (no engine, a silent
   * engine, a timeout), and an AbortError when `signal` aborted.
   */
  async call(method: string, path: string, options: CallOptions = {}): Promise<Answer> {
    const { response, token } = await this.send(method, path, options);
    let json: any;
    try {
      const text = await response.text();
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (response.status === 401 && json?.code === "not_paired") this.unpaired(token, json);
    return { status: response.status, json, token };
  }

  /** The raw response, for the event stream (its body is read as it comes). Throws not_connected
   *  on 401 not_paired, as call() does. */
  async open(path: string, signal: AbortSignal): Promise<Response> {
    const { response, token } = await this.send("GET", path, { signal });
    if (response.status !== 401) return response;
    const json = await response.json().catch(() => undefined);
    if (json?.code === "not_paired") this.unpaired(token, json);
    throw bridgeError(this.o.provider, "http_401", words.lost, engineDetail(401, json));
  }

  /**
   * Forgets the token `sent` and tells the provider, once. Returns false, keeping the store as it
   * is, when the store now holds another token: a re-pair (maybe in another tab) replaced the one
   * the engine refused, and the new one must survive the old one's 401.
   */
  forget(sent: string | null): boolean {
    if (!sent || this.o.tokens.get() !== sent) return false;
    this.o.tokens.forget();
    this.o.onUnpaired();
    return true;
  }

  private unpaired(token: string | null, json: unknown): never {
    this.forget(token);
    throw bridgeError(this.o.provider, "not_connected", words.notConnected, engineDetail(401, json));
  }

  private async send(method: string, path: string, options: CallOptions): Promise<{ response: Response; token: string | null }> {
    const headers: Record<string, string> = {};
    let token: string | null = null;
    if (options.auth !== false) {
      token = this.o.tokens.get() ?? options.fallbackToken ?? null;
      // No token, no request: the engine wouldn't answer, and the browser might ask the visitor
      // about local network access for nothing.
      if (!token) throw bridgeError(this.o.provider, "not_connected", words.notConnected, "no grant token");
      headers.Authorization = `Bearer ${token}`;
    }
    // The engine answers a page's POST only when it says JSON (415 otherwise), with or without a
    // body: that is what makes every state change need a preflight.
    if (options.body !== undefined || method === "POST") headers["Content-Type"] = "application/json";
    const timeout = new AbortController();
    const timer = options.timeoutMs ? setTimeout(() => timeout.abort(), options.timeoutMs) : undefined;
    const both = anySignal([options.signal, timeout.signal]);
    // Called unbound: window.fetch throws "Illegal invocation" when called as a method of another object.
    const doFetch = this.o.fetch;
    try {
      const response = await doFetch(`${this.o.url}${path}`, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: both.signal,
        keepalive: options.keepalive,
        cache: "no-store",
      });
      return { response, token };
    } catch (error) {
      if (options.signal?.aborted) throw abortError(options.signal.reason);
      // A closed port, a silent engine (no CORS headers) and a timeout look the same to a page.
      const why = timeout.signal.aborted ? `no answer within ${options.timeoutMs} ms` : String(error);
      throw bridgeError(this.o.provider, "not_running", words.notRunning, why);
    } finally {
      clearTimeout(timer);
      both.dispose();
    }
  }
}
