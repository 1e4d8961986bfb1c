// A Run: one request's answer, as a replayable event stream and as promises. Every run begins with
// start and ends with finish or error (a run that never reaches a provider has only the error).
// Events are kept, so each iterator sees all of them from the start, whenever it attaches.
import { abortError, SchemaError } from "./errors.js";
import { reportError } from "./page.js";
import { validate } from "./schema.js";
import type { FinishReason, JsonSchema, Message, ProviderChatResult, RunEvent, Run } from "./types.js";

/** What a run's body gets: the signal to pass on, and the stream's two inner doors. */
export interface RunControl {
  readonly signal: AbortSignal;
  /** Names the provider that answers: emits start. */
  start(provider: string, model?: string): void;
  /** For the cascade's own events (tool-call, tool-result). */
  emit(event: RunEvent): void;
  /** For the provider's request.emit: only text and reasoning get through (see ProviderChatRequest). */
  emitFromProvider(event: RunEvent): void;
}

export interface RunOptions {
  /** The request's schema, for object(). */
  schema?: JsonSchema;
  /** The caller's signal: aborting it cancels the run. */
  signal?: AbortSignal;
  /** Called before the run's promises settle, so a conversation's messages are up to date when
   *  `await send(…).text()` returns. */
  onFinish?(message: Message): void;
  onError?(error: Error): void;
}

type Outcome = { ok: true; text: string; message: Message } | { ok: false; error: Error };
type Finish = Extract<RunEvent, { type: "finish" }>;

export class LeuriaRun implements Run {
  readonly #events: RunEvent[] = [];
  #wake: (() => void)[] = [];
  #outcome: Outcome | undefined;
  #provider: string | undefined;
  #model: string | undefined;
  #streamedText = "";
  readonly #controller = new AbortController();
  readonly #options: RunOptions;
  readonly #settled: Promise<Outcome>;
  #resolve!: (outcome: Outcome) => void;
  readonly #onCallerAbort = () => this.cancel(this.#options.signal?.reason);

  constructor(body: (control: RunControl) => Promise<ProviderChatResult>, options: RunOptions = {}) {
    this.#options = options;
    // Resolved (never rejected) with the outcome: a run nobody awaits can't cause an unhandled
    // rejection. text(), message() and object() turn it into rejections only for their callers.
    this.#settled = new Promise((resolve) => (this.#resolve = resolve));
    // Start on the next microtask, so a caller can attach iterators and listeners synchronously.
    queueMicrotask(() => void this.#begin(body).catch(reportError));
  }

  get provider(): string | undefined {
    return this.#provider;
  }

  get done(): boolean {
    return this.#outcome !== undefined;
  }

  cancel(reason?: unknown): void {
    if (this.#outcome) return;
    const error = abortError(reason);
    // Settle first: whatever the provider emits while it reacts to the abort is ignored.
    this.#fail(error);
    this.#controller.abort(error);
  }

  async text(): Promise<string> {
    const outcome = await this.#settled;
    if (!outcome.ok) throw outcome.error;
    return outcome.text;
  }

  async message(): Promise<Message> {
    const outcome = await this.#settled;
    if (!outcome.ok) throw outcome.error;
    return outcome.message;
  }

  async object<T = unknown>(): Promise<T> {
    const text = await this.text();
    let value: unknown;
    try {
      value = parseJsonAnswer(text);
    } catch (error) {
      throw new SchemaError(text, [`value: ${(error as Error).message}`]);
    }
    const problems = validate(this.#options.schema, value);
    if (problems.length) throw new SchemaError(text, problems);
    return value as T;
  }

  /** A fresh iterable each time, each from the start, like the event iterator. */
  get textStream(): AsyncIterable<string> {
    return { [Symbol.asyncIterator]: () => this.#texts() };
  }

  async *#texts(): AsyncGenerator<string> {
    for await (const event of this) {
      if (event.type === "text") yield event.text;
      else if (event.type === "error") throw event.error;
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<RunEvent> {
    let index = 0;
    for (;;) {
      while (index < this.#events.length) yield this.#events[index++] as RunEvent;
      if (this.#outcome) return;
      await new Promise<void>((wake) => this.#wake.push(wake));
    }
  }

  async #begin(body: (control: RunControl) => Promise<ProviderChatResult>): Promise<void> {
    if (this.#outcome) return; // cancelled before it began
    const control: RunControl = {
      signal: this.#controller.signal,
      start: (provider, model) => {
        if (this.#outcome || this.#provider !== undefined) return;
        this.#provider = provider;
        this.#model = model;
        this.#push(model ? { type: "start", provider, model } : { type: "start", provider });
      },
      emit: (event) => {
        if (event.type === "tool-call" || event.type === "tool-result") this.#push(event);
      },
      emitFromProvider: (event) => this.#fromProvider(event),
    };
    try {
      const signal = this.#options.signal;
      if (signal?.aborted) return this.cancel(signal.reason);
      signal?.addEventListener("abort", this.#onCallerAbort, { once: true });
      this.#finish(await body(control));
    } catch (error) {
      this.#fail(toError(error));
    }
  }

  #fromProvider(event: RunEvent): void {
    if (this.#provider === undefined || !event || typeof event !== "object") return;
    if ((event.type === "text" || event.type === "reasoning") && typeof event.text === "string" && event.text) {
      if (event.type === "text") this.#streamedText += event.text;
      this.#push({ type: event.type, text: event.text });
    }
    // start, finish and error are the run's own; tool-call and tool-result come from callTool.
  }

  #finish(result: ProviderChatResult): void {
    if (this.#outcome) return;
    if (!result || typeof result !== "object") return this.#fail(new Error("The provider returned no answer."));
    const text = typeof result.text === "string" ? result.text : this.#streamedText;
    // A provider that doesn't stream still gives iterators the text, as one event.
    if (!this.#streamedText && text) this.#push({ type: "text", text });
    const model = result.model ?? this.#model;
    const metadata = Object.freeze({
      ...(this.#provider !== undefined ? { provider: this.#provider } : {}),
      ...(model ? { model } : {}),
    });
    const message: Message = Object.freeze({ role: "assistant", content: text, metadata });
    const reason: FinishReason = result.reason ?? "stop";
    const finish: Finish = { type: "finish", text, message, reason };
    try {
      this.#options.onFinish?.(message);
    } catch (error) {
      reportError(error);
    }
    this.#settle({ ok: true, text, message }, finish);
  }

  #fail(error: Error): void {
    if (this.#outcome) return;
    try {
      this.#options.onError?.(error);
    } catch (hookError) {
      reportError(hookError);
    }
    this.#settle({ ok: false, error }, { type: "error", error });
  }

  #settle(outcome: Outcome, last: RunEvent): void {
    this.#push(last);
    this.#outcome = outcome;
    this.#options.signal?.removeEventListener("abort", this.#onCallerAbort);
    this.#resolve(outcome);
    this.#notify();
  }

  #push(event: RunEvent): void {
    if (this.#outcome) return;
    this.#events.push(Object.freeze(event));
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = [];
    for (const resolve of wake) resolve();
  }
}

/** A run that fails at once: a request the SDK can't send, a conversation that is busy. */
export function failedRun(error: Error): Run {
  return new LeuriaRun(() => Promise.reject(error));
}

/** The answer as JSON, tolerating a ```json fence or a sentence around the object. */
export function parseJsonAnswer(text: string): unknown {
  const trimmed = text.trim();
  const fenced = /^```[\w-]*\s*\n?([\s\S]*?)\n?\s*```$/.exec(trimmed);
  const candidates = [fenced ? fenced[1]!.trim() : trimmed];
  const start = trimmed.search(/[[{]/);
  const end = Math.max(trimmed.lastIndexOf("}"), trimmed.lastIndexOf("]"));
  if (start >= 0 && end > start) candidates.push(trimmed.slice(start, end + 1));
  for (const candidate of candidates) {
    try {
      return JSON.parse(candidate);
    } catch {
      // try the next reading
    }
  }
  throw new Error("isn't valid JSON");
}

function toError(error: unknown): Error {
  if (error instanceof Error) return error;
  return new Error(typeof error === "string" ? error : "The AI failed to answer.");
}
