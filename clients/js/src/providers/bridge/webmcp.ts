// The page's tool channel (WebMCP): a WebSocket on which the engine relays the AI's calls to the
// page's tools. Register once with the session's registration token, open the channel, declare the
// tools, answer calls. A dropped channel is reopened with the same channel token (it stays valid for
// the session's life) and the tools declared again, because a call that arrives while no channel is
// connected fails at once.
import type { Tool } from "../../types.js";
import { BACKOFF_MS, sleep } from "./backoff.js";

export type CallHandler = (id: string, name: string, args: unknown) => Promise<{ result?: unknown; error?: string }>;

export interface ChannelOptions {
  /** ws://127.0.0.1:<port> */
  wsBase: string;
  WebSocket: typeof WebSocket;
  tools: readonly Tool[];
  onCall: CallHandler;
  /** Whether the session has ended (then a closed channel stays closed). */
  ended(): boolean;
}

const OPEN_TIMEOUT_MS = 10_000;

export class ToolChannel {
  private socket: WebSocket | null = null;
  private channel: { path: string; token: string } | null = null;
  private closed = false;
  private reconnecting: Promise<boolean> | null = null;

  constructor(private readonly o: ChannelOptions) {}

  /** Registers, opens the channel and declares the tools. Rejects when any step fails. */
  async open(registrationToken: string): Promise<void> {
    this.channel = await this.register(registrationToken);
    await this.connect();
  }

  /** Resolves true once the channel is open (waiting for a reconnect in progress), false if it can't be. */
  async whenOpen(): Promise<boolean> {
    if (this.closed) return false;
    if (this.socket && this.socket.readyState === 1) return true;
    if (!this.channel) return false;
    return this.reconnecting ?? this.reconnect();
  }

  close(): void {
    this.closed = true;
    const s = this.socket;
    this.socket = null;
    try {
      s?.close();
    } catch {
      // already closed
    }
  }

  private register(token: string): Promise<{ path: string; token: string }> {
    return new Promise((resolve, reject) => {
      const ws = new this.o.WebSocket(`${this.o.wsBase}/webmcp/register`);
      const timer = setTimeout(() => fail("no answer to register"), OPEN_TIMEOUT_MS);
      function fail(why: string) {
        clearTimeout(timer);
        try {
          ws.close();
        } catch {
          // never opened
        }
        reject(new Error(why));
      }
      ws.onopen = () => ws.send(JSON.stringify({ type: "register", token }));
      ws.onmessage = (e) => {
        const m = parse(e.data);
        if (m?.type === "registerSuccess" && typeof m.channel === "string" && typeof m.token === "string") {
          clearTimeout(timer);
          resolve({ path: m.channel, token: m.token });
          ws.close();
        } else fail(`register: ${typeof m?.message === "string" ? m.message : String(e.data)}`);
      };
      ws.onerror = () => fail("register: the socket failed");
      ws.onclose = () => fail("register: closed before an answer");
    });
  }

  /** Opens the channel and declares every tool; resolves once the engine answered each one. */
  private connect(): Promise<void> {
    const channel = this.channel!;
    return new Promise((resolve, reject) => {
      const url = `${this.o.wsBase}${channel.path}?token=${encodeURIComponent(channel.token)}`;
      const ws = new this.o.WebSocket(url);
      let waiting = this.o.tools.length;
      let settled = false;
      const timer = setTimeout(() => settle(new Error("the tool channel did not open")), OPEN_TIMEOUT_MS);
      const settle = (error?: Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (!error) return resolve();
        try {
          ws.close();
        } catch {
          // never opened
        }
        reject(error);
      };
      ws.onopen = () => {
        if (this.closed) return settle(new Error("closed"));
        this.socket = ws;
        for (const tool of this.o.tools) ws.send(JSON.stringify(declaration(tool)));
        if (waiting === 0) settle();
      };
      ws.onmessage = (e) => {
        const m = parse(e.data);
        if (!m) return;
        // The engine answers each registerTool in order, with an ack or an error (a bad name).
        if ((m.type === "ack" && m.registration === "registerTool") || m.type === "error") {
          if (m.type === "error") console.warn("[leuria] the engine refused a page tool:", m.message);
          if (--waiting === 0) settle();
          return;
        }
        this.onMessage(ws, m);
      };
      ws.onclose = () => {
        settle(new Error("the tool channel closed"));
        if (this.socket === ws) {
          this.socket = null;
          if (!this.closed && !this.o.ended() && !this.reconnecting) void this.reconnect();
        }
      };
    });
  }

  private onMessage(ws: WebSocket, m: any): void {
    if (m.type === "ping") return send(ws, { type: "pong" });
    if (m.type === "callTool") {
      const id = m.id;
      // Every call gets exactly one answer, whatever happens on the way: a handler that throws or
      // rejects answers with an error (the AI would otherwise wait 10 minutes for it), never with
      // an unhandled rejection in the page.
      void Promise.resolve()
        .then(() => this.o.onCall(id, String(m.tool), m.arguments ?? {}))
        .then(
          (answer) => answer ?? {},
          (error: unknown) => ({ error: `The tool failed: ${errorText(error)}` }),
        )
        .then((answer: { result?: unknown; error?: string }) => {
          // Answer on the channel that is open now: after a reconnect the engine has already failed
          // the call, and ignores an id it doesn't know.
          sendRaw(this.socket ?? ws, toolResponse(id, answer));
        });
      return;
    }
    // Resources and prompts: the bridge declares none, but every request gets an answer.
    if (m.type === "readResource") send(ws, { type: "resourceResponse", id: m.id, error: "No such resource" });
    if (m.type === "getPrompt") send(ws, { type: "promptResponse", id: m.id, error: "No such prompt" });
  }

  private reconnect(): Promise<boolean> {
    this.reconnecting = (async () => {
      try {
        for (const delay of BACKOFF_MS) {
          await sleep(delay);
          if (this.closed || this.o.ended()) return false;
          try {
            await this.connect();
            return true;
          } catch {
            // try again after a longer pause
          }
        }
        return false;
      } finally {
        this.reconnecting = null;
      }
    })();
    return this.reconnecting;
  }
}

function declaration(tool: Tool): Record<string, unknown> {
  const d: Record<string, unknown> = { type: "registerTool", name: tool.name };
  if (tool.description) d.description = tool.description;
  if (tool.inputSchema) d.inputSchema = tool.inputSchema;
  return d;
}

function parse(data: unknown): any {
  try {
    return JSON.parse(String(data));
  } catch {
    return undefined;
  }
}

function send(ws: WebSocket, message: unknown): void {
  sendRaw(ws, JSON.stringify(message));
}

function sendRaw(ws: WebSocket, text: string): void {
  try {
    if (ws.readyState === 1) ws.send(text);
  } catch {
    // the socket closed meanwhile; the engine fails the call on its side
  }
}

/** The toolResponse text; a result JSON can't carry (a cycle, a BigInt) becomes an error. */
function toolResponse(id: unknown, answer: { result?: unknown; error?: string }): string {
  try {
    if (answer.error !== undefined) return JSON.stringify({ type: "toolResponse", id, error: errorText(answer.error) });
    return JSON.stringify({ type: "toolResponse", id, result: answer.result === undefined ? null : answer.result });
  } catch (error) {
    return JSON.stringify({ type: "toolResponse", id, error: `The tool's result can't be sent as JSON: ${errorText(error)}` });
  }
}

function errorText(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return "unknown error";
  }
}
