// Reading an OpenAI Chat Completions stream: server-sent events split anywhere by the network,
// and tool calls that arrive as fragments keyed by index. Kept apart from server.ts so the
// parsing can be reasoned about (and replaced) without touching the request loop.

/** One parsed `data:` payload of the stream, or the end marker. */
export type StreamItem = { done: true } | { done: false; data: any };

/**
 * Yields each server-sent event's data, parsed as JSON. Events end at a blank line; a chunk may
 * end in the middle of a line, a multi-byte character, or between "\r" and "\n", so nothing is
 * parsed until its line is complete. `[DONE]` yields { done: true } and ends the iteration.
 */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamItem> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let data: string[] = [];
  // Parses one finished event; returns the item, or null for comments and keep-alives.
  const flush = (): StreamItem | null => {
    if (!data.length) return null;
    const text = data.join("\n");
    data = [];
    if (text.trim() === "[DONE]") return { done: true };
    try {
      return { done: false, data: JSON.parse(text) };
    } catch {
      // A proxy's stray line is not worth failing the answer for.
      return null;
    }
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
        // A lone "\r" at the end may be the first half of "\r\n": wait for the next chunk.
        if (!done && nl === buffer.length - 1 && buffer[nl] === "\r") break;
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(buffer[nl] === "\r" && buffer[nl + 1] === "\n" ? nl + 2 : nl + 1);
        if (line === "") {
          const item = flush();
          if (item) yield item;
          if (item?.done) return;
        } else if (line.startsWith("data:")) {
          data.push(line.slice(line[5] === " " ? 6 : 5));
        }
        // Other fields (event:, id:, retry:) and comments (":") carry nothing we use.
      }
      if (done) break;
    }
    if (buffer.startsWith("data:")) data.push(buffer.slice(buffer[5] === " " ? 6 : 5));
    const last = flush();
    if (last) yield last;
  } finally {
    // Stops the download when the caller leaves early (an error, an abort).
    reader.cancel().catch(() => {});
  }
}

/** A tool call as it is being streamed. */
export interface PendingToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** Assembles delta.tool_calls fragments: the first names the call, later ones add arguments. */
export class ToolCallAssembler {
  private readonly calls = new Map<number, PendingToolCall>();

  add(deltas: unknown): void {
    if (!Array.isArray(deltas)) return;
    for (const d of deltas) {
      if (!d || typeof d !== "object") continue;
      const index = typeof d.index === "number" ? d.index : this.calls.size;
      const call = this.calls.get(index) ?? { id: "", name: "", arguments: "" };
      if (typeof d.id === "string" && d.id) call.id = d.id;
      const fn = d.function;
      if (fn && typeof fn.name === "string" && fn.name) call.name = call.name || fn.name;
      if (fn && typeof fn.arguments === "string") call.arguments += fn.arguments;
      // Some servers send the arguments already parsed.
      else if (fn && fn.arguments && typeof fn.arguments === "object") call.arguments = JSON.stringify(fn.arguments);
      this.calls.set(index, call);
    }
  }

  /** The finished calls in index order; ones without a name can't be run and are dropped. */
  finish(idPrefix: string): PendingToolCall[] {
    return [...this.calls.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([index, c]) => ({ ...c, id: c.id || `${idPrefix}_${index}` }))
      .filter((c) => c.name);
  }
}

/** The server's error text from an error response body (JSON { error: { message } } or text). */
export function errorText(body: string): string {
  try {
    const json = JSON.parse(body);
    const e = json?.error ?? json;
    if (typeof e === "string") return e;
    if (typeof e?.message === "string") return e.message;
    if (typeof json?.message === "string") return json.message;
  } catch {
    // Not JSON: the text itself.
  }
  return body.trim().slice(0, 500);
}
