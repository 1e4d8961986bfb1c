// What <leuria-connect> shows, as a pure function of the cascade's state: the sentence, the main
// button, the progress bar, the other choices. Kept apart from the element so the wording rules
// read in one place. Plain words only: never a status code or an event name.
import { isOwnAI } from "../cascade.js";
import type { LeuriaState, ProviderState } from "../types.js";

export interface ButtonView {
  /** Stable across renders, so focus survives a re-render. */
  key: string;
  label: string;
  provider: string;
  /** cancel: stop waiting for the visitor's answer in Leuria (this element only). */
  kind: "connect" | "choose" | "disconnect" | "cancel";
  /** choose: the provider needs a download too, started by the same click. */
  download?: boolean;
}

export interface ConnectView {
  status: string;
  tone: "ready" | "waiting" | "action" | "problem" | "idle";
  /** 0 to 1 while a model downloads; null otherwise. */
  progress: number | null;
  progressLabel: string;
  primary: ButtonView | null;
  choices: ButtonView[];
  /** "Disconnect" once the own AI is ready, or "Cancel" while waiting for the visitor's answer. */
  disconnect: ButtonView | null;
}

export interface LocalState {
  /** Providers whose connect() is running (started from this element). */
  connecting: { has(id: string): boolean };
  /** The last failed action's message, in plain words. */
  error: string | null;
  /** Providers whose wait the visitor cancelled, with the detail they showed then: that detail
   *  (the waiting words) gives way to the plain invitation until the provider has news. */
  dismissed?: ReadonlyMap<string, string | undefined>;
}

/** "This site's AI" → "this site's AI", "Your AI" → "your AI", for use inside a sentence. */
export function inSentence(label: string): string {
  return label.replace(/^(This|Your)\b/, (word) => word.toLowerCase());
}

function ownAI(state: LeuriaState): ProviderState | undefined {
  return state.providers.find(isOwnAI);
}

/** The words for a provider waiting for the visitor's click. */
function invitation(p: ProviderState, local: LocalState): string {
  const dismissed = local.dismissed?.has(p.id) && local.dismissed.get(p.id) === p.detail;
  if (p.detail && !dismissed) return p.detail;
  return p.action === "download" ? `${p.label} needs a one-time download.` : "Connect Leuria to use your own AI on this site.";
}

function using(p: ProviderState, own: ProviderState | undefined): string {
  if (p === own) return p.model ? `Using ${p.model}` : "Using your own AI";
  return `Using ${inSentence(p.label)}${p.model && p.locality === "device" ? ` (${p.model})` : ""}`;
}

function percent(progress: number | undefined): string {
  return typeof progress === "number" ? ` ${Math.round(progress * 100)}%` : "";
}

export function connectView(state: LeuriaState, local: LocalState): ConnectView {
  const own = ownAI(state);
  const byId = (id: string | null) => (id ? state.providers.find((p) => p.id === id) : undefined);
  const active = byId(state.active);
  const pending = byId(state.pending);
  const downloading = state.providers.find((p) => p.status === "downloading");
  const ownConnecting = own ? local.connecting.has(own.id) && own.status !== "ready" : false;

  // The sentence, most relevant first: what the visitor just started, then what answers now.
  let status: string;
  let tone: ConnectView["tone"];
  // Whether the sentence is about Leuria not answering: then the main button reads "Try again".
  let retry = false;
  if (local.error) {
    status = local.error;
    tone = "problem";
  } else if (ownConnecting && own) {
    retry = own.status === "unavailable";
    status = retry ? own.detail ?? "Leuria isn't running, or isn't installed." : waitingWords(own);
    tone = retry ? "problem" : "waiting";
  } else if (downloading) {
    status = `Downloading ${inSentence(downloading.label)}…${percent(downloading.progress)}`;
    tone = "waiting";
  } else if (active) {
    status = using(active, own);
    tone = "ready";
  } else if (pending && pending.status === "needs-action") {
    status = invitation(pending, local);
    tone = "action";
  } else if (own && own.status === "unavailable") {
    // No answer from Leuria (pending then, with a retry), or not running (nothing to click).
    status = own.detail ?? "Leuria isn't running, or isn't installed.";
    tone = "problem";
    retry = true;
  } else if (state.providers.some((p) => p.status === "unknown" || p.status === "detecting")) {
    status = "Looking for an AI to use…";
    tone = "idle";
  } else if (state.alternatives.length) {
    status = "Choose which AI to use.";
    tone = "action";
  } else {
    status = "No AI is available here right now.";
    tone = "problem";
  }

  // The main button: the pending action, or a retry when Leuria didn't answer.
  let primary: ButtonView | null = null;
  const actionable = pending ?? (own && own.status === "unavailable" && own.action ? own : undefined);
  if (actionable && !local.connecting.has(actionable.id) && actionable.status !== "downloading") {
    primary = { key: `primary:${actionable.id}`, provider: actionable.id, kind: "connect", label: primaryLabel(actionable, own, retry) };
  }

  const choices: ButtonView[] = state.alternatives
    .map((id) => byId(id))
    .filter((p): p is ProviderState => p !== undefined && !local.connecting.has(p.id))
    .map((p) => ({
      key: `choose:${p.id}`,
      provider: p.id,
      kind: "choose" as const,
      label: `Use ${inSentence(p.label)}`,
      download: p.status === "needs-action" && p.action === "download",
    }));

  let disconnect: ButtonView | null = null;
  if (own && own.status === "ready") disconnect = { key: `disconnect:${own.id}`, provider: own.id, kind: "disconnect", label: "Disconnect" };
  else if (ownConnecting && own && !retry) disconnect = { key: `cancel:${own.id}`, provider: own.id, kind: "cancel", label: "Cancel" };

  return {
    status,
    tone,
    progress: downloading ? Math.min(1, Math.max(0, downloading.progress ?? 0)) : null,
    progressLabel: downloading ? `Downloading ${inSentence(downloading.label)}` : "",
    primary,
    choices,
    disconnect,
  };
}

function waitingWords(own: ProviderState): string {
  // The bridge explains the wait itself (words.ts); its "connect" invitation isn't news here.
  if (own.detail && own.status !== "needs-action") return own.detail;
  if (own.detail && /wait/i.test(own.detail)) return own.detail;
  return "Waiting for you to allow this site in Leuria…";
}

function primaryLabel(p: ProviderState, own: ProviderState | undefined, retry: boolean): string {
  if (p.status === "unavailable" && retry) return "Try again";
  if (p.action === "download") return `Download ${inSentence(p.label)}`;
  if (p === own) return "Connect your AI";
  return `Connect ${inSentence(p.label)}`;
}
