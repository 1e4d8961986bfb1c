// One session's event stream (GET /session/:id/stream), kept open until the session ends. A stream
// dropped before that is reopened with backoff. A new stream replays webmcp_ready, ready (when idle)
// and the current turn's chunks so far; the engine sends no event ids and may merge chunks for a
// reader that fell behind, so replayed text is skipped by its length, counted since turn_start.
import { ProviderError } from "../../errors.js";
import type { Engine } from "./engine.js";
import { readEventStream } from "./sse.js";
import { BACKOFF_MS, sleep } from "./backoff.js";
import { bridgeError, engineDetail, words } from "./words.js";

export interface StreamHandlers {
  /** An engine event, its data parsed. Chunks arrive once each, replays removed. */
  onEvent(name: string, data: unknown): void;
  /** The stream is gone for good before the session ended (reconnects failed, or the session is gone). */
  onLost(error: ProviderError): void;
}

const FINAL = new Set(["completed", "cancelled", "failed"]);

export class SessionStream {
  private readonly stopper = new AbortController();
  private ended = false;
  /** Characters of chunk text delivered in the current turn. */
  private turnChars = 0;
  /** Characters of replayed chunk text still to drop on a reopened stream. */
  private skip = 0;

  constructor(
    private readonly engine: Engine,
    private readonly provider: string,
    private readonly sessionId: string,
    private readonly handlers: StreamHandlers,
  ) {}

  /** Opens the stream; resolves once the engine answered 200 (events then flow to the handlers). */
  async open(): Promise<void> {
    const response = await this.connect();
    void this.follow(response);
  }

  close(): void {
    this.ended = true;
    this.stopper.abort();
  }

  private get stopped(): boolean {
    return this.ended || this.stopper.signal.aborted;
  }

  private async connect(): Promise<Response> {
    const path = `/session/${encodeURIComponent(this.sessionId)}/stream`;
    const response = await this.engine.open(path, this.stopper.signal);
    if (response.ok && response.body) return response;
    // (A 401 not_paired was handled by engine.open: the token forgotten, not_connected thrown.)
    const json = await response.json().catch(() => undefined);
    throw bridgeError(this.provider, response.status === 404 ? "failed" : `http_${response.status}`, words.lost, engineDetail(response.status, json));
  }

  /** Reads streams until the session ends, reopening dropped ones. */
  private async follow(response: Response): Promise<void> {
    let attempt = 0;
    for (;;) {
      let sawEvent = false;
      try {
        await readEventStream(response.body!, (e) => {
          sawEvent = true;
          this.handle(e.event, e.data);
        }, this.stopper.signal);
      } catch {
        // dropped: reopened below
      }
      if (this.stopped) return;
      // A stream that delivered something was healthy: the next drop starts the backoff over.
      if (sawEvent) attempt = 0;
      let next: Response | null = null;
      let lastError: unknown;
      while (!next) {
        if (attempt >= BACKOFF_MS.length) {
          const detail = lastError instanceof ProviderError ? lastError.detail : String(lastError ?? "the stream ended");
          return this.lose(bridgeError(this.provider, "not_running", words.lost, detail));
        }
        await sleep(BACKOFF_MS[attempt++]);
        if (this.stopped) return;
        try {
          next = await this.connect();
        } catch (error) {
          if (this.stopped) return;
          // Only "nothing answered" is worth another try; a gone session or a revoked site isn't.
          if (error instanceof ProviderError && error.code !== "not_running") return this.lose(error);
          lastError = error;
        }
      }
      this.skip = this.turnChars;
      response = next;
    }
  }

  private lose(error: ProviderError): void {
    if (this.stopped) return;
    this.ended = true;
    this.handlers.onLost(error);
  }

  private handle(name: string, raw: string): void {
    if (this.ended) return;
    let data: unknown;
    try {
      data = JSON.parse(raw);
    } catch {
      data = raw;
    }
    if (name === "turn_start" || name === "ready" || name === "turn_completed") {
      // A new turn, or none running: nothing of an earlier turn will be replayed.
      this.turnChars = 0;
      this.skip = 0;
    } else if (name === "chunk") {
      let text = typeof data === "string" ? data : String(data ?? "");
      if (this.skip > 0) {
        const dropped = Math.min(this.skip, text.length);
        this.skip -= dropped;
        text = text.slice(dropped);
        if (!text) return;
      }
      this.turnChars += text.length;
      data = text;
    }
    if (FINAL.has(name)) this.ended = true;
    this.handlers.onEvent(name, data);
    if (this.ended) this.stopper.abort();
  }
}
