// browserAI(): the browser's built-in model through the Prompt API (the global LanguageModel;
// Gemini Nano in Chrome). Free and on the device, but small. The model may need a one-time
// download, which the browser only starts from a visitor's click: that is this provider's
// visitor action (connect() = download).
import { ProviderError, abortError } from "../errors.js";
import type {
  Capability,
  Message,
  Provider,
  ProviderChatRequest,
  ProviderChatResult,
  ProviderContext,
  ProviderConversation,
  ProviderReport,
  Tool,
  ToolOutcome,
} from "../types.js";

export interface BrowserAIOptions {
  /** Pass page tools to the model. Default false: browser support varies. */
  tools?: boolean;
  /** The languages of inputs and outputs, e.g. ["en"]. */
  languages?: string[];
  id?: string;
  label?: string;
}

// The slice of the Prompt API this provider uses (it isn't in TypeScript's DOM types yet).
interface LMSession {
  promptStreaming(input: string, options?: { signal?: AbortSignal; responseConstraint?: unknown }): ReadableStream<string>;
  destroy(): void;
}
interface LMStatic {
  availability(options?: object): Promise<string>;
  create(options?: object): Promise<LMSession>;
}
type LMPrompt = { role: "system" | "user" | "assistant"; content: string };

const NO_AI = "This browser has no built-in AI.";
const FAILED = "This browser's AI couldn't answer.";

function languageModel(): LMStatic | undefined {
  const lm = (globalThis as { LanguageModel?: LMStatic }).LanguageModel;
  return lm && typeof lm.create === "function" && typeof lm.availability === "function" ? lm : undefined;
}

/** Chrome's is Gemini Nano; other browsers ship other models behind the same API. */
function modelName(): string {
  const ua = typeof navigator !== "undefined" ? navigator.userAgent : "";
  return /Chrome\//.test(ua) && !/Edg\//.test(ua) ? "Gemini Nano" : "Built-in AI";
}

function textOf(message: Message): string {
  if (typeof message.content === "string") return message.content;
  // Images aren't offered (no "images" capability), so only the words go to the model.
  return message.content.filter((p) => p.type === "text").map((p) => (p as { text: string }).text).join("\n");
}

/** The browser's built-in model, as a provider. */
export function browserAI(options: BrowserAIOptions = {}): Provider {
  const id = options.id ?? "browser";
  const label = options.label ?? "This browser's AI";
  const capabilities: Capability[] = ["chat", "structured"];
  if (options.tools) capabilities.push("tools");
  const expected = options.languages?.length
    ? { expectedInputs: [{ type: "text", languages: options.languages }], expectedOutputs: [{ type: "text", languages: options.languages }] }
    : {};
  let context: ProviderContext | undefined;
  let download: Promise<void> | null = null;
  let progress: number | undefined;
  const sessions = new Set<LMSession>();

  async function detect(): Promise<ProviderReport> {
    const lm = languageModel();
    if (!lm) return { status: "unavailable", capabilities: [], detail: NO_AI };
    let availability: string;
    try {
      availability = await lm.availability(expected);
    } catch {
      // e.g. languages the model doesn't support.
      return { status: "unavailable", capabilities: [], detail: "This browser's AI can't be used here." };
    }
    switch (availability) {
      case "available":
      case "readily": // the API's earlier spelling
        return { status: "ready", capabilities: [...capabilities], model: modelName() };
      case "downloadable":
      case "after-download":
        return { status: "needs-action", capabilities: [...capabilities], action: "download", detail: "This browser's AI needs a one-time download." };
      case "downloading":
        return { status: "downloading", capabilities: [...capabilities], action: "download", detail: "Downloading this browser's AI…", ...(progress !== undefined ? { progress } : {}) };
      default:
        return { status: "unavailable", capabilities: [], detail: "This browser's AI isn't available on this device." };
    }
  }

  // The download. LanguageModel.create is called before any await: the browser only starts a
  // download with the visitor's click (user activation), which an await would lose.
  function connect(): Promise<void> {
    const lm = languageModel();
    if (!lm) return Promise.reject(new ProviderError(id, "failed", NO_AI));
    if (download) return download;
    progress = 0;
    let created: Promise<LMSession>;
    try {
      created = lm.create({
        ...expected,
        monitor(m: EventTarget) {
          m.addEventListener("downloadprogress", (e) => {
            const { loaded, total } = e as Event & { loaded?: number; total?: number };
            // loaded is 0..1 today; older builds sent bytes with a total.
            const value = typeof loaded === "number" ? (total && total > 1 ? loaded / total : loaded) : 0;
            progress = Math.min(1, Math.max(0, value));
            context?.update({ status: "downloading", progress, action: "download" });
          });
        },
      });
    } catch (error) {
      created = Promise.reject(error);
    }
    context?.update({ status: "downloading", progress: 0, action: "download" });
    download = created.then(
      (session) => {
        // The download is what we wanted; chats make their own sessions.
        session.destroy();
        progress = undefined;
        context?.update({ status: "ready", capabilities: [...capabilities], model: modelName(), progress: undefined, action: undefined, detail: undefined });
        context?.redetect();
      },
      (error) => {
        progress = undefined;
        download = null;
        context?.redetect();
        throw new ProviderError(id, "failed", "This browser's AI couldn't be downloaded.", (error as Error)?.message);
      },
    );
    download.then(() => { download = null; }, () => {});
    return download;
  }

  /** A session primed with the system prompt and the history before the newest message. */
  async function openSession(system: string | undefined, history: Message[], tools: LMTools | undefined, signal?: AbortSignal) {
    const lm = languageModel();
    if (!lm) throw new ProviderError(id, "failed", NO_AI);
    const initialPrompts: LMPrompt[] = [];
    if (system) initialPrompts.push({ role: "system", content: system });
    for (const m of history) if (m.role !== "system") initialPrompts.push({ role: m.role, content: textOf(m) });
    try {
      const session = await lm.create({ ...expected, ...(initialPrompts.length ? { initialPrompts } : {}), ...(tools ? { tools: tools.list } : {}), ...(signal ? { signal } : {}) });
      sessions.add(session);
      return session;
    } catch (error) {
      throw failure(error, signal);
    }
  }

  /** Streams one answer from a session: the text deltas go out as they come. */
  async function prompt(session: LMSession, request: ProviderChatRequest): Promise<ProviderChatResult> {
    const last = request.messages[request.messages.length - 1];
    const input = last ? textOf(last) : "";
    let text = "";
    try {
      const stream = session.promptStreaming(input, {
        signal: request.signal,
        ...(request.schema ? { responseConstraint: request.schema } : {}),
      });
      const reader = stream.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        if (typeof value !== "string" || !value) continue;
        text += value;
        request.emit({ type: "text", text: value });
      }
    } catch (error) {
      throw failure(error, request.signal);
    }
    if (request.signal.aborted) throw abortError(request.signal.reason);
    return { text, reason: "stop", model: modelName() };
  }

  function failure(error: unknown, signal?: AbortSignal): Error {
    if (signal?.aborted) return abortError(signal.reason);
    if (error instanceof ProviderError) return error;
    const name = (error as Error)?.name;
    const message = name === "QuotaExceededError" ? "This conversation is too long for this browser's AI." : FAILED;
    return new ProviderError(id, "failed", message, (error as Error)?.message);
  }

  function close(session: LMSession | undefined) {
    if (!session) return;
    sessions.delete(session);
    try {
      session.destroy();
    } catch {
      // Already gone.
    }
  }

  const useTools = (tools: readonly Tool[]) => options.tools === true && tools.length > 0;

  return {
    id,
    label,
    locality: "device",
    offers: ["chat"],
    attach(ctx) {
      context = ctx;
    },
    detect,
    connect,
    async chat(request) {
      const tools = useTools(request.tools) ? pageTools(request.tools, () => request) : undefined;
      const session = await openSession(request.system, request.messages.slice(0, -1), tools, request.signal);
      try {
        return await prompt(session, request);
      } finally {
        close(session);
      }
    },
    openConversation({ system, tools: declared }): ProviderConversation {
      let session: LMSession | undefined;
      // How many messages the session has seen; a history that doesn't continue it starts over.
      let seen = 0;
      let current: ProviderChatRequest | undefined;
      const tools = useTools(declared) ? pageTools(declared, () => current) : undefined;
      return {
        async send(request) {
          current = request;
          if (session && request.messages.length !== seen + 1) {
            close(session);
            session = undefined;
          }
          session ??= await openSession(system ?? request.system, request.messages.slice(0, -1), tools);
          try {
            const result = await prompt(session, request);
            seen = request.messages.length + 1; // the prompt and the answer
            return result;
          } catch (error) {
            // An aborted or failed prompt leaves the session's history unknown: start over next time.
            close(session);
            session = undefined;
            throw error;
          } finally {
            current = undefined;
          }
        },
        async close() {
          close(session);
          session = undefined;
        },
      };
    },
    destroy() {
      for (const s of [...sessions]) close(s);
    },
  };
}

type LMTools = { list: Array<{ name: string; description: string; inputSchema: unknown; execute(args: unknown): Promise<string> }> };

/**
 * The page's tools in the Prompt API's shape. The model calls execute itself; it runs the tool
 * through the current request's callTool (validation, middleware, and the run's tool events).
 */
function pageTools(tools: readonly Tool[], currentRequest: () => ProviderChatRequest | undefined): LMTools {
  let n = 0;
  return {
    list: tools.map((tool) => ({
      name: tool.name,
      description: tool.description ?? tool.name,
      inputSchema: tool.inputSchema ?? { type: "object", properties: {} },
      async execute(args: unknown): Promise<string> {
        const request = currentRequest();
        if (!request) return JSON.stringify({ error: "This tool can't be used right now." });
        const outcome = await request
          .callTool(tool.name, args, `browser_call_${++n}`)
          .catch((e: Error): ToolOutcome => ({ ok: false, error: e?.message || String(e) }));
        // The Prompt API hands the model a tool's result as text.
        if (!outcome.ok) return JSON.stringify({ error: outcome.error });
        return typeof outcome.result === "string" ? outcome.result : JSON.stringify(outcome.result ?? null);
      },
    })),
  };
}
