// The cascade's rules, as pure functions of the providers' current state: which provider answers a
// request, why each other one can't, and what the page's state shows (active, pending, …).
// leuria.ts feeds them live state; keeping them pure keeps the rules in one readable place.
import type { NoProviderReason } from "./errors.js";
import type { Capability, LeuriaState, Offer, Provider, ProviderState, RoutingOptions } from "./types.js";

/** Whether a provider (or its state) is the visitor's own AI, which makes the providers after it
 *  wait. The id "bridge" counts too, so a bridge-like provider from before the flag still leads. */
export function isOwnAI(provider: { readonly id: string; readonly ownAI?: boolean | undefined }): boolean {
  return provider.ownAI === true || provider.id === "bridge";
}

/** Whether a click of the visitor's would move this provider on: it needs an action, or it is the
 *  visitor's own AI after a connect that got no answer ("isn't running, or isn't installed"),
 *  whose action is a retry. */
export function needsVisitor(state: ProviderState): boolean {
  if (state.status === "needs-action") return true;
  return state.status === "unavailable" && state.action !== undefined && isOwnAI(state);
}

export interface Entry {
  readonly provider: Provider;
  readonly state: ProviderState;
}

export interface Policy {
  readonly fallback: "ask" | "auto";
  readonly chosen: string | null;
}

export interface Route {
  readonly localOnly: boolean;
  /** The providers the request named, in its order; null for the whole cascade. */
  readonly ids: readonly string[] | null;
}

export type Verdict =
  | { kind: "pick"; entry: Entry }
  /** Not known yet (first detection): check this provider, then decide again. */
  | { kind: "wait"; entry: Entry }
  | { kind: "none"; needs: Capability[]; reasons: NoProviderReason[]; choices: string[]; actionable: string | null };

export function routeOf(routing: RoutingOptions | undefined, known: readonly Entry[]): Route {
  const named = routing?.provider;
  let ids: string[] | null = null;
  if (named !== undefined) {
    ids = typeof named === "string" ? [named] : Array.isArray(named) ? [...named] : [];
    if (!ids.length || ids.some((id) => typeof id !== "string")) {
      throw new TypeError('provider must be a provider id, or a non-empty array of ids (e.g. "browser").');
    }
    const unknown = ids.find((id) => !known.some((entry) => entry.provider.id === id));
    if (unknown !== undefined) {
      const list = known.map((entry) => entry.provider.id).join(", ") || "none";
      throw new Error(`Unknown provider "${unknown}" (this page's providers: ${list}).`);
    }
  }
  return { localOnly: routing?.localOnly === true, ids };
}

/** Picks the provider for a request, or says which one to wait for, or why none can answer.
 *  `settled` lists providers already waited for once: never wait for those again. */
export function decide(entries: readonly Entry[], needs: readonly Capability[], route: Route, policy: Policy, settled?: ReadonlySet<string>): Verdict {
  const canWait = (entry: Entry) => settled !== undefined && !settled.has(entry.provider.id) && undetermined(entry);
  for (const entry of candidates(entries, route)) {
    if (excluded(entry, needs, route)) continue;
    const gate = gateOf(entries, entry, needs, route, policy);
    if (gate && canWait(gate)) return { kind: "wait", entry: gate };
    if (gate) continue;
    if (canWait(entry)) return { kind: "wait", entry };
    if (entry.state.status === "ready" && missing(entry, needs).length === 0) return { kind: "pick", entry };
  }
  // Before saying no, know every candidate: the held-back ones make the error's choices.
  const unknown = candidates(entries, route).find((entry) => !excluded(entry, needs, route) && canWait(entry));
  if (unknown) return { kind: "wait", entry: unknown };
  return { kind: "none", needs: [...needs], ...explain(entries, needs, route, policy) };
}

/** Why nothing answers: every provider's reason, the held-back ones that could answer once
 *  picked, and the first one a click would fix. */
function explain(entries: readonly Entry[], needs: readonly Capability[], route: Route, policy: Policy) {
  const reasons: NoProviderReason[] = [];
  const choices: string[] = [];
  let actionable: string | null = null;
  const inRoute = new Set(candidates(entries, route));
  for (const entry of entries) {
    const { id, label } = entry.provider;
    const state = entry.state.status;
    const held = inRoute.has(entry) && !excluded(entry, needs, route) && gateOf(entries, entry, needs, route, policy) !== null;
    const reason = !inRoute.has(entry) ? "Not among the providers this request asked for." : excluded(entry, needs, route) ?? (held ? heldReason(entry) : statusReason(entry, needs));
    reasons.push({ id, label, state, reason });
    if (!inRoute.has(entry) || excluded(entry, needs, route) || !couldServe(entry, needs)) continue;
    if (held && (state === "ready" || clickDownloads(entry))) choices.push(id);
    if (!held && actionable === null && needsVisitor(entry.state)) actionable = id;
  }
  return { reasons, choices, actionable };
}

/** The page's view of the cascade for a plain request (and for embeddings). */
export function summarize(entries: readonly Entry[], policy: Policy): Omit<LeuriaState, "providers"> {
  const whole: Route = { localOnly: false, ids: null };
  const pickFor = (needs: Capability[]) => {
    const verdict = decide(entries, needs, whole, policy);
    return verdict.kind === "pick" ? verdict.entry : null;
  };
  const active = pickFor(["chat"]);
  const embedder = pickFor(["embed"]);
  const alternatives = entries
    .filter((entry) => offers(entry, "chat") && gateOf(entries, entry, ["chat"], whole, policy) !== null)
    .filter((entry) => entry.state.status === "ready" || clickDownloads(entry))
    .map((entry) => entry.provider.id);
  return {
    active: active?.provider.id ?? null,
    pending: pendingFor(entries, "chat", active, policy),
    embedder: embedder?.provider.id ?? null,
    embedPending: pendingFor(entries, "embed", embedder, policy),
    alternatives,
    chosen: policy.chosen,
  };
}

/** The first provider that needs a visitor action and comes before the one answering now (or
 *  any, when none answers). Held-back providers are alternatives, not the main action. */
function pendingFor(entries: readonly Entry[], offer: Offer, current: Entry | null, policy: Policy): string | null {
  const whole: Route = { localOnly: false, ids: null };
  const end = current ? entries.indexOf(current) : entries.length;
  const found = entries
    .slice(0, end)
    .find((entry) => offers(entry, offer) && needsVisitor(entry.state) && gateOf(entries, entry, [offer], whole, policy) === null);
  return found?.provider.id ?? null;
}

/** What ai.connect() without an id acts on: the visitor's own AI when it needs them (a connect,
 *  or a retry), else the first chat provider that needs one (the spec's rule), which isn't always
 *  state.pending: with the own AI ready, that can be the browser model's download. Never a
 *  provider held back for the own AI: a plain connect() must not start the browser model's
 *  download when the page meant "connect Leuria". */
export function connectTarget(entries: readonly Entry[], policy: Policy): string | null {
  const own = entries.find((entry) => isOwnAI(entry.provider) && offers(entry, "chat") && needsVisitor(entry.state));
  return own?.provider.id ?? pendingFor(entries, "chat", null, policy);
}

function candidates(entries: readonly Entry[], route: Route): Entry[] {
  if (!route.ids) return [...entries];
  return route.ids.map((id) => entries.find((entry) => entry.provider.id === id)).filter((entry): entry is Entry => entry !== undefined);
}

/** A reason that doesn't depend on the provider's current state (routing, what it offers). */
function excluded(entry: Entry, needs: readonly Capability[], route: Route): string | null {
  if (route.localOnly && entry.provider.locality !== "device") return "Sends data off this device, and this request must stay on it.";
  if (needs.includes("chat") && !offers(entry, "chat")) return "Doesn't answer messages.";
  if (needs.includes("embed") && (!offers(entry, "embed") || typeof entry.provider.embed !== "function")) return "Doesn't make embeddings.";
  return null;
}

/** The visitor's own AI, when it holds this entry back for this request; else null. The own AI
 *  holds back the providers after it while it isn't ready, unless the page said fallback: "auto",
 *  the request named providers, or the visitor picked this one. It only holds back what it could
 *  do itself: a bridge that doesn't offer embeddings doesn't make the others' wait. */
function gateOf(entries: readonly Entry[], entry: Entry, needs: readonly Capability[], route: Route, policy: Policy): Entry | null {
  if (policy.fallback === "auto" || route.ids || policy.chosen === entry.provider.id) return null;
  const gateIndex = entries.findIndex((other) => isOwnAI(other.provider));
  if (gateIndex < 0 || entries.indexOf(entry) <= gateIndex) return null;
  const gate = entries[gateIndex]!;
  if (gate.state.status === "ready") return null;
  const offer: Offer = needs.includes("embed") ? "embed" : "chat";
  return offers(gate, offer) ? gate : null;
}

function undetermined(entry: Entry): boolean {
  return entry.state.status === "unknown" || entry.state.status === "detecting";
}

function offers(entry: Entry, offer: Offer): boolean {
  return entry.provider.offers.includes(offer);
}

/** The capabilities a ready provider lacks for these needs. Chat is an offer, not a capability:
 *  a provider that offers chat can chat. */
function missing(entry: Entry, needs: readonly Capability[]): Capability[] {
  const has = (capability: Capability) => entry.state.capabilities.includes(capability);
  return needs.filter((need) => {
    if (need === "chat") return false;
    if (need === "structured") return !has("structured") && !has("tools");
    return !has(need);
  });
}

/** Whether a provider that isn't ready would fit once it is. One that reports no capabilities
 *  yet (before a connect, say) is given the benefit of the doubt. */
function couldServe(entry: Entry, needs: readonly Capability[]): boolean {
  if (entry.state.status !== "ready" && entry.state.capabilities.length === 0) return true;
  return missing(entry, needs).length === 0;
}

function clickDownloads(entry: Entry): boolean {
  return entry.state.status === "needs-action" && entry.state.action === "download";
}

function heldReason(entry: Entry): string {
  return entry.state.status === "ready" || clickDownloads(entry)
    ? "Waits until the visitor chooses it instead of their own AI."
    : statusReason(entry, []);
}

const CAN_NOT: Record<Capability, string> = {
  chat: "Doesn't answer messages.",
  tools: "Can't use this page's tools.",
  images: "Can't look at images.",
  structured: "Can't give answers in the requested format.",
  agent: "Can't work as an agent.",
  embed: "Doesn't make embeddings right now.",
};

function statusReason(entry: Entry, needs: readonly Capability[]): string {
  const { status, detail, action, progress } = entry.state;
  switch (status) {
    case "ready": {
      const lacks = missing(entry, needs)[0];
      return lacks ? CAN_NOT[lacks] : "Ready.";
    }
    case "unknown":
    case "detecting":
      return "Still being checked.";
    case "downloading":
      return detail ?? (typeof progress === "number" ? `Downloading its model (${Math.round(progress * 100)}%).` : "Downloading its model.");
    case "needs-action":
      return detail ?? (action === "download" ? "Needs a download first." : "Needs to be connected first.");
    case "unavailable":
      return detail ?? "Isn't available.";
  }
}
