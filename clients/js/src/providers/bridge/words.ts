// What the bridge tells visitors, in plain words. Every `detail` of its state and every
// ProviderError message comes from here: never an engine error string, a status code or an event
// name (those go to ProviderError.detail, for logs).
import { ProviderError } from "../../errors.js";

export const words = {
  connect: "Connect Leuria to use your own AI on this site.",
  waiting: "Waiting for you to allow this site in Leuria…",
  notInstalled: "Leuria isn't running, or isn't installed.",
  notRunning: "Leuria isn't running.",
  // A connected site whose /health gets no answer: the desktop app is silent both when it isn't
  // running and when the visitor revoked the site, and a page can't tell which.
  notRunningOrForgotten: "Leuria isn't running, or no longer knows this site.",
  clickToConnect: "Click the connect button to connect your AI.",
  forgotten: "Leuria no longer knows this site. Connect again to use your AI.",
  denied: "This site wasn't allowed in Leuria. You can connect again whenever you like.",
  tooSoon: "Leuria asked to wait. Try again in a moment.",
  expired: "The request to connect took too long. Try again.",
  connectFailed: "Leuria couldn't connect this site. Try again.",
  notConnected: "This site isn't connected to Leuria. Connect again to use your AI.",
  busy: "Too many conversations with your AI are open on this site. Close one and try again.",
  failed: "Your AI couldn't finish this answer. Try again.",
  stopped: "Leuria stopped this answer.",
  lost: "The connection to Leuria was lost before the answer was complete.",
  unexpected: "Leuria gave an answer this page doesn't understand.",
  noEmbedder: "There's no local model for this on this computer.",
  embedFailed: "The local model couldn't process this. Try again.",
  embedModelChanged: "The local model changed while processing this. Try again.",
  noTool: "This page has no such tool.",
} as const;

/** A ProviderError for the bridge: `message` from `words`, `detail` the raw text behind it. */
export function bridgeError(provider: string, code: string, message: string, detail?: string): ProviderError {
  return new ProviderError(provider, code, message, detail);
}

/** The raw text of an engine error answer, for ProviderError.detail: "<status> <error>". */
export function engineDetail(status: number, body: unknown): string {
  const error = body && typeof body === "object" ? (body as { error?: unknown }).error : undefined;
  return typeof error === "string" ? `${status} ${error}` : `HTTP ${status}`;
}

/** Whether a 400/429 from prepare means the origin holds its 4 live sessions already. */
export function isTooManySessions(status: number, body: unknown): boolean {
  if (status !== 400 && status !== 429) return false;
  const error = body && typeof body === "object" ? (body as { error?: unknown }).error : undefined;
  return typeof error === "string" && /too many sessions/i.test(error);
}
