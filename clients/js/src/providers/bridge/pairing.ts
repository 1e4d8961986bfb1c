// Pairing from the page's side: the leuria://connect link, opened in the visitor's click, and the
// claim loop that collects the answer with POST /connect/claim.
import type { Engine } from "./engine.js";

export interface BridgeNeeds {
  tools?: boolean;
  images?: boolean;
  effort?: "light" | "standard" | "deep";
  /** About how many tokens one turn sends. */
  context?: number;
}

/** A fresh secret for one attempt: 32 random bytes, base64url (43 characters). */
export function makeNonce(): string {
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The needs in the closed vocabulary of the protocol; anything else is left out. */
export function cleanNeeds(needs: BridgeNeeds | undefined): BridgeNeeds | undefined {
  if (!needs) return undefined;
  const out: BridgeNeeds = {};
  if (needs.tools) out.tools = true;
  if (needs.images) out.images = true;
  if (needs.effort === "light" || needs.effort === "standard" || needs.effort === "deep") out.effort = needs.effort;
  if (typeof needs.context === "number" && Number.isFinite(needs.context) && needs.context > 0) out.context = Math.round(needs.context);
  return Object.keys(out).length ? out : undefined;
}

export function connectLink(origin: string, app: string | undefined, nonce: string, needs: BridgeNeeds | undefined): string {
  const q = (k: string, v: string) => `${k}=${encodeURIComponent(v)}`;
  const parts = [q("origin", origin)];
  if (app) parts.push(q("app", app));
  parts.push(q("nonce", nonce));
  if (needs?.tools) parts.push("tools=1");
  if (needs?.images) parts.push("images=1");
  if (needs?.effort) parts.push(q("effort", needs.effort));
  if (needs?.context) parts.push(q("context", String(needs.context)));
  return `leuria://connect?${parts.join("&")}`;
}

/**
 * Opens the link as a click on a link would: the browser hands leuria:// to the system, which starts
 * the Leuria app. Must run inside the visitor's click (browsers block protocol links otherwise).
 * Without a document (Node tests), there is nothing to open.
 */
export function openLink(href: string): void {
  const doc = (globalThis as { document?: Document }).document;
  if (!doc?.createElement) return;
  const a = doc.createElement("a");
  a.href = href;
  a.rel = "noopener";
  a.style.display = "none";
  (doc.body ?? doc.documentElement).appendChild(a);
  try {
    a.click();
  } finally {
    a.remove();
  }
}

export type ClaimOutcome =
  | { kind: "allowed"; token: string }
  | { kind: "denied" }
  /** No readable answer for about 10 s: Leuria isn't running or isn't installed. */
  | { kind: "no_answer"; detail: string }
  /** 429: a No less than 30 s ago, or too many open questions. */
  | { kind: "too_soon" }
  /** 410: the question expired before the visitor decided. */
  | { kind: "expired" }
  /** 404: a newer attempt (maybe in another tab) replaced this one. */
  | { kind: "replaced" }
  | { kind: "error"; detail: string }
  | { kind: "stopped" };

export interface ClaimTimings {
  /** How long to keep claiming without a readable answer (the protocol: about 10 s). */
  giveUpMs: number;
  /** The pause after an unreadable answer. */
  retryMs: number;
  /** The fetch timeout: above the engine's 25 s long poll. */
  requestMs: number;
}

export const CLAIM_TIMINGS: ClaimTimings = { giveUpMs: 10_000, retryMs: 1_000, requestMs: 35_000 };

/** One attempt's claims, until an answer, a give-up, or stop() (a newer attempt). */
export class ClaimLoop {
  private readonly stopper = new AbortController();

  constructor(
    private readonly engine: Engine,
    private readonly body: { nonce: string; app?: string; needs?: BridgeNeeds },
    private readonly timings: ClaimTimings = CLAIM_TIMINGS,
  ) {}

  stop(): void {
    this.stopper.abort();
  }

  get stopped(): boolean {
    return this.stopper.signal.aborted;
  }

  async run(): Promise<ClaimOutcome> {
    let lastReadable = Date.now();
    let lastError = "";
    for (;;) {
      if (this.stopped) return { kind: "stopped" };
      let answer;
      try {
        answer = await this.engine.call("POST", "/connect/claim", {
          body: this.body,
          auth: false,
          timeoutMs: this.timings.requestMs,
          signal: this.stopper.signal,
        });
      } catch (error) {
        if (this.stopped) return { kind: "stopped" };
        // Unreadable: nothing listens, or an app engine that hasn't received the link yet (it stays
        // silent until then). The app may be starting: try again for a while.
        lastError = (error as { detail?: string }).detail ?? String(error);
        if (Date.now() - lastReadable >= this.timings.giveUpMs) return { kind: "no_answer", detail: lastError };
        await this.pause(this.timings.retryMs);
        continue;
      }
      lastReadable = Date.now();
      const { status, json } = answer;
      if (status === 200 && json?.status === "pending") continue;
      if (status === 200 && json?.status === "allowed" && typeof json.token === "string") return { kind: "allowed", token: json.token };
      if (status === 200 && json?.status === "denied") return { kind: "denied" };
      if (status === 429) return { kind: "too_soon" };
      if (status === 410) return { kind: "expired" };
      if (status === 404) return { kind: "replaced" };
      return { kind: "error", detail: `${status} ${json?.error ?? JSON.stringify(json)}` };
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      this.stopper.signal.addEventListener("abort", done, { once: true });
      function done() {
        clearTimeout(timer);
        resolve();
      }
    });
  }
}
