// The providers' live state: detection, pushed updates, the visitor's pick, and the immutable
// snapshot pages read with getState()/subscribe(). The rules that turn this state into a choice
// live in cascade.ts.
import { connectTarget, decide, isOwnAI, routeOf, summarize, type Entry, type Policy } from "./cascade.js";
import { abortError, NoProviderError, ProviderError } from "./errors.js";
import { reportError } from "./page.js";
import type { Capability, LeuriaState, Provider, ProviderReport, ProviderState, RoutingOptions } from "./types.js";

interface Slot {
  readonly provider: Provider;
  report: ProviderReport;
  /** The detect in flight, if any: a second request joins it instead of starting another. */
  detecting: Promise<void> | undefined;
  /** Something changed while a detect was in flight (a connect finished): detect once more. */
  again: boolean;
  /** A detect bug is logged once, not at every watch tick. */
  logged: boolean;
}

const REPORT_KEYS = ["status", "capabilities", "model", "action", "progress", "detail", "embedModel"] as const;

export class Registry {
  readonly #slots: Slot[];
  readonly #fallback: "ask" | "auto";
  #chosen: string | null = null;
  #state: LeuriaState;
  #listeners = new Set<() => void>();
  #destroyed = false;

  constructor(providers: readonly Provider[], fallback: "ask" | "auto") {
    const ids = new Set<string>();
    for (const provider of providers) {
      if (!provider || typeof provider.id !== "string" || typeof provider.detect !== "function" || typeof provider.chat !== "function") {
        throw new TypeError("Each provider needs an id, detect() and chat(): use bridge(), browserAI(), server() or a custom Provider.");
      }
      if (ids.has(provider.id)) throw new Error(`Two providers have the id "${provider.id}": give each its own id.`);
      ids.add(provider.id);
    }
    this.#fallback = fallback;
    this.#slots = providers.map((provider) => ({ provider, report: { status: "unknown", capabilities: [] }, detecting: undefined, again: false, logged: false }));
    this.#state = this.#snapshot();
  }

  get providers(): readonly Provider[] {
    return this.#slots.map((slot) => slot.provider);
  }

  get destroyed(): boolean {
    return this.#destroyed;
  }

  // ------------------------------------------------------------ state

  getState = (): LeuriaState => this.#state;

  subscribe = (listener: () => void): (() => void) => {
    if (typeof listener !== "function") throw new TypeError("subscribe needs a function.");
    // Wrapped, so the same function subscribed twice gets two independent subscriptions.
    const entry = () => listener();
    this.#listeners.add(entry);
    return () => void this.#listeners.delete(entry);
  };

  find(id: string): Provider | undefined {
    return this.#slot(id)?.provider;
  }

  /** The provider ai.connect() acts on without an id (see cascade.ts), or null. */
  connectTarget(): string | null {
    return connectTarget(this.#entries(), this.#policy());
  }

  choose(id: string | null): void {
    if (id !== null && !this.#slot(id)) throw new Error(`Unknown provider "${id}".`);
    this.#chosen = id;
    this.#commit();
  }

  /** A new snapshot only when something a page can see changed: React re-renders on a new object. */
  #commit(): void {
    if (this.#destroyed) return;
    const next = this.#snapshot();
    if (JSON.stringify(next) === JSON.stringify(this.#state)) return;
    this.#state = next;
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch (error) {
        reportError(error);
      }
    }
  }

  #snapshot(): LeuriaState {
    const entries = this.#entries();
    return deepFreeze({ providers: entries.map((entry) => entry.state), ...summarize(entries, this.#policy()) });
  }

  #entries(): Entry[] {
    return this.#slots.map((slot) => ({ provider: slot.provider, state: stateOf(slot) }));
  }

  #policy(): Policy {
    return { fallback: this.#fallback, chosen: this.#chosen };
  }

  #slot(id: string): Slot | undefined {
    return this.#slots.find((slot) => slot.provider.id === id);
  }

  // ------------------------------------------------------------ detection

  /** Gives each provider its context: attach() once, before the first detect. */
  attachAll(): void {
    for (const slot of this.#slots) {
      try {
        slot.provider.attach?.({
          update: (report) => this.#update(slot, report),
          redetect: () => queueMicrotask(() => void this.detectOne(slot.provider.id, true)),
        });
      } catch (error) {
        reportError(error);
        this.#apply(slot, { status: "unavailable", capabilities: [], detail: "Couldn't start." });
      }
    }
  }

  /** Detects every provider; `fresh` as in detectOne (a check by hand must not be answered by one
   *  that began before it). */
  detectAll(fresh = false): Promise<void> {
    return Promise.all(this.#slots.map((slot) => this.detectOne(slot.provider.id, fresh))).then(() => undefined);
  }

  /** Detects one provider. A detect already in flight is joined; with `fresh`, one more runs after
   *  it, because its answer may predate what the caller just did (a connect, say). */
  detectOne(id: string, fresh = false): Promise<void> {
    const slot = this.#slot(id);
    if (!slot || this.#destroyed) return Promise.resolve();
    if (slot.detecting) {
      if (fresh) slot.again = true;
      return slot.detecting;
    }
    if (slot.report.status === "unknown") this.#apply(slot, { ...slot.report, status: "detecting" });
    slot.detecting = (async () => {
      try {
        do {
          slot.again = false;
          await this.#detectOnce(slot);
        } while (slot.again && !this.#destroyed);
      } finally {
        slot.detecting = undefined;
      }
    })();
    return slot.detecting;
  }

  async #detectOnce(slot: Slot): Promise<void> {
    let report: ProviderReport;
    try {
      report = await slot.provider.detect();
      if (!report || typeof report !== "object" || typeof report.status !== "string") throw new Error("detect() returned no report");
    } catch (error) {
      // A provider's own ProviderError speaks plain words; anything else is a bug, for logs.
      const detail = error instanceof ProviderError ? error.message : "Couldn't be checked.";
      if (!(error instanceof ProviderError) && !slot.logged) {
        slot.logged = true;
        reportError(error);
      }
      report = { status: "unavailable", capabilities: [], detail };
    }
    this.#apply(slot, report);
  }

  #update(slot: Slot, partial: Partial<ProviderReport>): void {
    if (!partial || typeof partial !== "object") return;
    this.#apply(slot, { ...slot.report, ...partial });
  }

  #apply(slot: Slot, report: ProviderReport): void {
    if (this.#destroyed) return;
    slot.report = cleanReport(report);
    this.#commit();
  }

  // ------------------------------------------------------------ picking

  /** The provider for a request. Waits for providers still being detected the first time (a page
   *  may ask right after createLeuria), and detects on demand those never detected (autoDetect:
   *  false). Throws NoProviderError when none can answer. */
  async pick(needs: Capability[], routing: RoutingOptions | undefined, signal: AbortSignal): Promise<Provider> {
    const settled = new Set<string>();
    for (;;) {
      if (this.#destroyed) throw destroyedError();
      if (signal.aborted) throw abortError(signal.reason);
      const entries = this.#entries();
      const verdict = decide(entries, needs, routeOf(routing, entries), this.#policy(), settled);
      if (verdict.kind === "pick") return verdict.entry.provider;
      if (verdict.kind === "none") throw new NoProviderError(verdict);
      const id = verdict.entry.provider.id;
      settled.add(id);
      await raceAbort(this.detectOne(id), signal);
    }
  }

  destroy(): void {
    this.#destroyed = true;
    this.#listeners.clear();
  }
}

export function destroyedError(): Error {
  return new Error("This Leuria instance was destroyed: create a new one with createLeuria().");
}

function stateOf(slot: Slot): ProviderState {
  const { id, label, locality, offers } = slot.provider;
  const report = slot.report;
  const state: Record<string, unknown> = { id, label: typeof label === "string" ? label : id, locality, offers: [...offers] };
  for (const key of REPORT_KEYS) if (report[key] !== undefined) state[key] = key === "capabilities" ? [...report.capabilities] : report[key];
  // The UI reads state only, and must know which provider is the visitor's own AI.
  if (isOwnAI(slot.provider)) state.ownAI = true;
  return state as unknown as ProviderState;
}

/** Keeps only the known fields, with the right types: a provider's extra fields never reach pages. */
function cleanReport(report: ProviderReport): ProviderReport {
  const clean: ProviderReport = {
    status: report.status,
    capabilities: Array.isArray(report.capabilities) ? report.capabilities.filter((c) => typeof c === "string") : [],
  };
  for (const key of ["model", "action", "detail", "embedModel"] as const) {
    if (typeof report[key] === "string") (clean as unknown as Record<string, unknown>)[key] = report[key];
  }
  if (typeof report.progress === "number" && Number.isFinite(report.progress)) clean.progress = Math.min(1, Math.max(0, report.progress));
  return clean;
}

/** The promise's outcome, or an AbortError as soon as the signal aborts (a provider that ignores
 *  its signal can't hold the caller). */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(abortError(signal.reason));
    const onAbort = () => reject(abortError(signal.reason));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
