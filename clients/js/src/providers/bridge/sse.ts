// Server-sent events over fetch. EventSource can't send an Authorization header, and the engine
// wants the grant token on the stream too, so the bridge reads the response body itself. The parser
// follows the HTML spec's event-stream rules: lines end in CRLF, LF or CR (a CR at the end of one
// network chunk may be followed by its LF in the next), ":" starts a comment, data lines join with
// "\n", an event is dispatched on a blank line, and a last event without its blank line is dropped.

export interface SseEvent {
  /** The event's name ("message" when the stream names none). */
  event: string;
  data: string;
}

export class SseParser {
  private buffer = "";
  private event = "";
  private data: string[] = [];
  private sawCR = false;
  private started = false;

  constructor(private readonly onEvent: (e: SseEvent) => void) {}

  /** Feeds decoded text, split anywhere. */
  push(text: string): void {
    if (!this.started && text.length) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    }
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 10 && this.sawCR && i === start && this.buffer === "") {
        // The LF of a CRLF whose CR ended the previous line.
        this.sawCR = false;
        start = i + 1;
        continue;
      }
      this.sawCR = false;
      if (c !== 10 && c !== 13) continue;
      this.line(this.buffer + text.slice(start, i));
      this.buffer = "";
      if (c === 13) this.sawCR = true;
      start = i + 1;
    }
    this.buffer += text.slice(start);
  }

  private line(line: string): void {
    if (line === "") return this.dispatch();
    if (line.charCodeAt(0) === 58) return; // ":" comment (the engine's keep-alive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    // id and retry mean nothing here: the bridge reconnects itself, and the engine sends no ids.
  }

  private dispatch(): void {
    const event = this.event || "message";
    const data = this.data;
    this.event = "";
    this.data = [];
    if (data.length === 0) return;
    this.onEvent({ event, data: data.join("\n") });
  }
}

/**
 * Reads a response body as an event stream until it ends. Resolves when the stream ends
 * normally; rejects when reading fails (a dropped connection, or `signal` aborted).
 */
export async function readEventStream(
  body: ReadableStream<Uint8Array>,
  onEvent: (e: SseEvent) => void,
  signal?: AbortSignal,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser(onEvent);
  const onAbort = () => void reader.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (signal?.aborted) throw new Error("aborted");
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }));
    }
    parser.push(decoder.decode());
  } finally {
    signal?.removeEventListener("abort", onAbort);
    try {
      reader.releaseLock();
    } catch {
      // already released, or a read still settling after a cancel
    }
  }
}
