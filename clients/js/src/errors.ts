// The errors a page can branch on. Messages are plain words a page may show a visitor; the raw
// detail (an engine's or a server's own error text) is kept apart, for logs.
import type { Capability, ProviderStatus } from "./types.js";

export interface NoProviderReason {
  id: string;
  label: string;
  state: ProviderStatus;
  /** Why it could not answer, in plain words. */
  reason: string;
}

/** Nothing could answer the request. */
export class NoProviderError extends Error {
  override readonly name = "NoProviderError";
  /** The capabilities the request needed (chat, tools, images, structured, embed). */
  readonly needs: Capability[];
  /** Per provider, why it could not answer. */
  readonly reasons: NoProviderReason[];
  /** Providers that would answer once the visitor picks one instead of their own AI. */
  readonly choices: string[];
  /** A provider that a click would fix (bridge: connect, or try again; browser: download), if any. */
  readonly actionable: string | null;

  constructor(init: { needs: Capability[]; reasons: NoProviderReason[]; choices: string[]; actionable: string | null }) {
    super(NoProviderError.describe(init.actionable, init.choices));
    this.needs = init.needs;
    this.reasons = init.reasons;
    this.choices = init.choices;
    this.actionable = init.actionable;
  }

  private static describe(actionable: string | null, choices: string[]): string {
    if (actionable) return "No AI is ready yet. Connect one to continue.";
    if (choices.length) return "Your own AI isn't connected. Connect it, or choose another AI.";
    return "No AI is available for this right now.";
  }
}

/** A provider failed while answering. message is plain words; detail is the provider's own text. */
export class ProviderError extends Error {
  override readonly name = "ProviderError";
  readonly provider: string;
  /** A stable word to branch on: "not_connected", "not_running", "failed", "busy", "bad_answer",
   *  "no_embedder", "http_<status>". */
  readonly code: string;
  readonly detail: string | undefined;

  constructor(provider: string, code: string, message: string, detail?: string) {
    super(message);
    this.provider = provider;
    this.code = code;
    this.detail = detail;
  }
}

/** run.object() got an answer that isn't the JSON the request's schema asked for. */
export class SchemaError extends Error {
  override readonly name = "SchemaError";
  /** The AI's answer, as it wrote it. */
  readonly text: string;
  /** What is wrong with it, each naming its path ("items[2].name: expected string"). */
  readonly problems: string[];

  constructor(text: string, problems: string[]) {
    super(`The answer doesn't match the schema: ${problems.join("; ")}`);
    this.text = text;
    this.problems = problems;
  }
}

/** The error a cancelled run or an aborted signal rejects with (as fetch does). */
export function abortError(reason?: unknown): Error {
  if (reason instanceof Error && reason.name === "AbortError") return reason;
  const message = typeof reason === "string" ? reason : "The request was cancelled.";
  if (typeof DOMException !== "undefined") return new DOMException(message, "AbortError");
  const e = new Error(message);
  e.name = "AbortError";
  return e;
}
