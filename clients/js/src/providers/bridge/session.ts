// One engine session: prepare → open the event stream → register the tool channel and declare the
// tools → approve → turns → close. The stream and the tools are in place before approve, so no
// event is missed and the AI never looks for a tool that isn't declared yet.
import { abortError, ProviderError } from "../../errors.js";
import type { ProviderChatResult, RunEvent, Tool, ToolOutcome } from "../../types.js";
import type { Answer, Engine } from "./engine.js";
import type { EngineImage } from "./prompt.js";
import { SessionStream } from "./stream.js";
import { ToolChannel } from "./webmcp.js";
import { bridgeError, engineDetail, isTooManySessions, words } from "./words.js";

export interface SessionContext {
  engine: Engine;
  provider: string;
  /** ws://127.0.0.1:<port>, for the tool channel. */
  wsBase: string;
  WebSocket: typeof WebSocket;
  /** The AI's plain name, for results. */
  model(): string | undefined;
}

/** What a turn needs from the provider request that asked for it. */
export interface TurnRequest {
  emit(event: RunEvent): void;
  callTool(name: string, args: unknown, callId: string): Promise<ToolOutcome>;
  signal: AbortSignal;
}

export interface PrepareBody {
  prompt?: string;
  attachments?: EngineImage[];
  systemPrompt?: string;
  maxTurns?: number;
}

interface Turn {
  request: TurnRequest;
  /** turn_start seen: a `ready` after that means the turn ended while the stream was away. */
  started: boolean;
  text: string;
  resolve(result: ProviderChatResult): void;
  reject(error: unknown): void;
}

/** The session ended between turns (internal: a conversation then starts a new one). */
export class SessionGone extends Error {
  constructor(
    /** Why it ended, when it failed (a conversation that can't start over throws this). */
    readonly failure: ProviderError | null,
    readonly detail: string,
  ) {
    super("The engine session has ended.");
  }
}

type Phase = "new" | "starting" | "idle" | "running" | "ended";

export class EngineSession {
  id = "";
  private phase: Phase = "new";
  private stream: SessionStream | null = null;
  private channel: ToolChannel | null = null;
  private turn: Turn | null = null;
  private idleWaiters: { resolve(): void; reject(e: unknown): void }[] = [];
  private endError: ProviderError | null = null;
  private closing = false;
  /** POST /session/prepare has gone out and not answered: the engine may hold a session that this
   *  page can't name yet. */
  private preparing = false;
  /** How to end the session prepare is creating, once it names it (see prepare()): the page
   *  cancelled the run (cancel) or closed the session (close) while prepare was in flight. */
  private abandoned: "cancel" | "close" | null = null;
  /** Rejects start() while it waits for prepare: the page stops waiting at once, not when the
   *  engine answers. */
  private leavePrepare: ((error: unknown) => void) | null = null;
  /** Called once when the session ends, whatever the reason. */
  onEnded: (() => void) | null = null;

  constructor(
    private readonly ctx: SessionContext,
    private readonly tools: readonly Tool[],
    /** How a cancelled turn stops the engine: one-off chats end the session, conversations keep it. */
    private readonly cancelRoute: "cancel" | "cancel-turn",
  ) {}

  get ended(): boolean {
    return this.phase === "ended";
  }

  /**
   * prepare, stream, tools, approve. With a prompt in `body`, `first` gets that turn (the returned
   * promise is its result); without one, the session warms up and goes idle.
   */
  async start(body: PrepareBody, first?: TurnRequest): Promise<ProviderChatResult | void> {
    // Cancelled or closed before prepare went out: nothing was sent, so there is nothing to end.
    if (first?.signal.aborted) {
      this.end(null);
      throw abortError(first.signal.reason);
    }
    if (this.ended) throw this.cutShort();
    this.phase = "starting";
    let result: Promise<ProviderChatResult> | undefined;
    try {
      const prepared = await this.prepare(body, first?.signal);
      if (prepared.status !== 201 || typeof prepared.json?.sessionId !== "string") throw this.prepareError(prepared.status, prepared.json);
      // Each step checks that the page still wants the session: one ended meanwhile (close(), a
      // cancelled run) opens no stream or tool channel, and is never approved.
      this.stillStarting(first);
      this.stream = new SessionStream(this.ctx.engine, this.ctx.provider, this.id, {
        onEvent: (name, data) => this.onEvent(name, data),
        onLost: (error) => this.end(error),
      });
      await this.stream.open();
      this.stillStarting(first);
      if (this.tools.length) {
        this.channel = new ToolChannel({
          wsBase: this.ctx.wsBase,
          WebSocket: this.ctx.WebSocket,
          tools: this.tools,
          onCall: (id, name, args) => this.onCall(id, name, args),
          ended: () => this.ended,
        });
        await this.channel.open(prepared.json.registrationToken).catch((error) => {
          this.stillStarting(first); // closed by end(): that is the reason, not the channel
          throw bridgeError(this.ctx.provider, "failed", words.failed, `tool channel: ${(error as Error).message}`);
        });
      }
      this.stillStarting(first);
      result = first ? this.beginTurn(first) : undefined;
      const approved = await this.action("approve");
      if (approved.status !== 200) throw bridgeError(this.ctx.provider, "failed", words.failed, engineDetail(approved.status, approved.json));
      return await result;
    } catch (error) {
      // A turn that never got going (approve failed): settle it, nobody else will.
      result?.catch(() => {});
      const turn = this.turn;
      this.turn = null;
      turn?.reject(error);
      if (this.id) void this.close();
      else this.end(null);
      throw error;
    }
  }

  /** A follow-up turn on this session (waits for the AI to be idle first). Throws SessionGone
   *  when the session ended before the turn could start. */
  async prompt(prompt: string, attachments: EngineImage[], request: TurnRequest): Promise<ProviderChatResult> {
    await this.untilIdle(request.signal);
    // A call that arrives while no channel is connected fails at once: wait for a reconnect.
    if (this.channel) await this.channel.whenOpen();
    if (request.signal.aborted) throw abortError(request.signal.reason);
    const result = this.beginTurn(request);
    const body: PrepareBody = { prompt };
    if (attachments.length) body.attachments = attachments;
    let answer;
    try {
      answer = await this.action("prompt", body);
    } catch (error) {
      this.dropTurn(result);
      throw error;
    }
    if (answer.status !== 200) {
      this.dropTurn(result);
      if (answer.status === 404) {
        this.end(null); // gone (expired, or ended long ago): nothing left to close
        throw new SessionGone(null, engineDetail(answer.status, answer.json));
      }
      if (answer.status === 400) {
        // The session looked idle, yet the engine refused: it ended meanwhile, or it is in a state
        // this page lost track of. Close it either way, so it doesn't hold one of the origin's 4
        // live sessions while the conversation starts a new one.
        await this.close();
        throw new SessionGone(null, engineDetail(answer.status, answer.json));
      }
      throw bridgeError(this.ctx.provider, "failed", words.failed, engineDetail(answer.status, answer.json));
    }
    return result;
  }

  /** Ends the session (completed). keepalive: the page is unloading. */
  async close(options: { keepalive?: boolean } = {}): Promise<void> {
    if (!this.id) {
      // Prepare is in flight: the engine is creating a session that only its answer names. It is
      // closed then (prepare()); until then, it ends here, for the page.
      if (this.preparing) this.abandoned ??= "close";
      return this.end(null);
    }
    if (this.closing) return this.end(null);
    this.closing = true;
    const wasEnded = this.ended;
    this.end(null);
    if (wasEnded) return;
    await this.action("close", undefined, options.keepalive).catch(() => {});
  }

  /**
   * POST /session/prepare, sent without the run's signal: once the request has gone out, the engine
   * creates the session (pending_approval) whatever the page does, and only the answer names it.
   * Aborting the fetch would just lose that name, and the session would hold one of the origin's 4
   * live slots until the engine restarts (nothing else ends a session that was never approved).
   * So the page stops waiting at once (a cancelled run, or close(): start() rejects), and the
   * answer, whenever it comes, ends the session it names.
   */
  private prepare(body: PrepareBody, signal: AbortSignal | undefined): Promise<Answer> {
    this.preparing = true;
    const answered = this.ctx.engine.call("POST", "/session/prepare", { body }).then(
      (answer) => {
        this.preparing = false;
        if (answer.status === 201 && typeof answer.json?.sessionId === "string") {
          this.id = answer.json.sessionId;
          if (this.abandoned || this.ended) this.endAbandoned(answer.token);
        }
        return answer;
      },
      (error: unknown) => {
        this.preparing = false;
        throw error;
      },
    );
    return new Promise<Answer>((resolve, reject) => {
      const onAbort = () => {
        // Once prepare has answered, start() sees the abort itself (and closes the named session).
        if (!this.preparing) return;
        this.abandoned ??= "cancel";
        this.leavePrepare = null;
        reject(abortError(signal!.reason));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.leavePrepare = reject;
      answered.then(resolve, reject).finally(() => {
        signal?.removeEventListener("abort", onAbort);
        this.leavePrepare = null;
      });
    });
  }

  /**
   * Ends a session the page gave up while its prepare was in flight, now that prepare named it:
   * cancel for a cancelled run, close for close(), in the background, its failures swallowed (the
   * page has already moved on). Always with keepalive: the answer can come as the page unloads
   * (a prepare in flight at pagehide), and nothing would try again. If the page is already gone
   * when the answer comes, nothing here runs, and nothing can be done: no request can name a
   * session whose id never reached the page.
   */
  private endAbandoned(preparedWith: string | null): void {
    const route = this.abandoned ?? "close";
    this.closing = true; // /cancel and /close both end it: close() has nothing more to send
    this.end(null);
    // disconnect() forgets the token right after closing the sessions, this one included: the end
    // goes with the token prepare carried, which the engine still knows.
    const path = `/session/${encodeURIComponent(this.id)}/${route}`;
    void this.ctx.engine.call("POST", path, { keepalive: true, fallbackToken: preparedWith }).catch(() => {});
  }

  /** Between start()'s steps: throws when the page no longer wants the session. */
  private stillStarting(first: TurnRequest | undefined): void {
    if (first?.signal.aborted) throw abortError(first.signal.reason);
    if (this.ended) throw this.cutShort();
  }

  /** Why start() stopped when the session ended while it started. */
  private cutShort(): ProviderError {
    return this.endError ?? bridgeError(this.ctx.provider, "failed", words.failed, "the session was ended while it started");
  }

  private beginTurn(request: TurnRequest): Promise<ProviderChatResult> {
    return new Promise<ProviderChatResult>((resolve, reject) => {
      const turn: Turn = { request, started: false, text: "", resolve, reject };
      this.turn = turn;
      // Running from now on, not from turn_start: a turn stopped before its turn_start arrived
      // still runs in the engine until its turn_completed, and the next prompt waits for that (the
      // engine would hold one prompt behind a cancelled turn, but then the next turn_completed here
      // would be the cancelled turn's).
      this.phase = "running";
      const onAbort = () => {
        if (this.turn !== turn) return;
        this.turn = null;
        reject(abortError(request.signal.reason));
        // /cancel ends the session: no /close needed after it.
        if (this.cancelRoute === "cancel") this.closing = true;
        void this.action(this.cancelRoute).catch(() => {});
      };
      request.signal.addEventListener("abort", onAbort, { once: true });
      const cleanup = () => request.signal.removeEventListener("abort", onAbort);
      turn.resolve = (r) => (cleanup(), resolve(r));
      turn.reject = (e) => (cleanup(), reject(e));
    });
  }

  private onEvent(name: string, data: unknown): void {
    const turn = this.turn;
    switch (name) {
      case "ready":
        if (turn?.started) {
          // The turn ended while the stream was reconnecting and no turn_completed was replayed
          // (an older engine): its last words are lost.
          this.turn = null;
          turn.reject(bridgeError(this.ctx.provider, "not_running", words.lost, "turn ended while the stream was away"));
        }
        this.becomeIdle();
        break;
      case "turn_start":
        this.phase = "running";
        if (turn) turn.started = true;
        break;
      case "chunk":
        if (turn && typeof data === "string" && data) {
          turn.text += data;
          turn.request.emit({ type: "text", text: data });
        }
        break;
      case "thought":
        if (turn && typeof data === "string" && data) turn.request.emit({ type: "reasoning", text: data });
        break;
      case "turn_completed": {
        // A reopened stream on an idle session replays the last turn's end: it belongs to our
        // turn only if we saw that turn start (a turn not yet started can't be complete).
        if (turn && !turn.started) break;
        this.turn = null;
        const text = typeof (data as { text?: unknown })?.text === "string" ? (data as { text: string }).text : turn?.text ?? "";
        // The stream dropped before the last chunks and came back after the turn ended: the
        // replayed turn_completed carries the whole text, so stream the part we missed.
        if (turn && text.length > turn.text.length && text.startsWith(turn.text)) {
          turn.request.emit({ type: "text", text: text.slice(turn.text.length) });
        }
        this.becomeIdle();
        turn?.resolve({ text, reason: "stop", model: this.ctx.model() });
        break;
      }
      case "completed":
        // An agent that exits cleanly mid-turn completes the session: what it said is the answer.
        if (turn) {
          this.turn = null;
          turn.resolve({ text: turn.text, reason: "stop", model: this.ctx.model() });
        }
        this.end(null);
        break;
      case "cancelled":
        this.end(bridgeError(this.ctx.provider, "failed", words.stopped, "cancelled"));
        break;
      case "failed":
        this.end(bridgeError(this.ctx.provider, "failed", words.failed, typeof data === "string" ? data : JSON.stringify(data)));
        break;
      // webmcp_ready (the channel is registered with prepare's token), tool_call, permission and log
      // (for debugging, never for visitors) need nothing here.
    }
  }

  /** Runs a tool for the AI. The core's callTool validates the arguments, runs the middleware and
   *  announces the call (tool-call, tool-result), and never throws. */
  private async onCall(id: string, name: string, args: unknown): Promise<{ result?: unknown; error?: string }> {
    const turn = this.turn;
    if (!this.tools.some((t) => t.name === name)) return { error: `Unknown tool: ${name}` };
    if (!turn) return { error: "No answer is in progress on this page." };
    const outcome = await turn.request.callTool(name, args, id);
    return outcome.ok ? { result: outcome.result } : { error: outcome.error };
  }

  /** Forgets a turn the engine never started: the session is idle again, as before it. */
  private dropTurn(result: Promise<ProviderChatResult>): void {
    result.catch(() => {});
    const turn = this.turn;
    this.turn = null;
    turn?.reject(abortError("The turn did not start."));
    this.becomeIdle();
  }

  private becomeIdle(): void {
    if (this.ended) return;
    this.phase = "idle";
    for (const w of this.idleWaiters.splice(0)) w.resolve();
  }

  private untilIdle(signal: AbortSignal): Promise<void> {
    if (this.phase === "idle") return Promise.resolve();
    if (this.ended) return Promise.reject(new SessionGone(this.endError, "the session had ended"));
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => (signal.removeEventListener("abort", onAbort), resolve()),
        reject: (e: unknown) => (signal.removeEventListener("abort", onAbort), reject(e)),
      };
      const onAbort = () => {
        this.idleWaiters = this.idleWaiters.filter((w) => w !== waiter);
        reject(abortError(signal.reason));
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.idleWaiters.push(waiter);
    });
  }

  /** The session is over: settle whatever waits on it, stop the stream and the channel. */
  private end(error: ProviderError | null): void {
    if (this.phase === "ended") return;
    this.phase = "ended";
    this.endError = error;
    const failure = error ?? bridgeError(this.ctx.provider, "failed", words.failed, "the session ended");
    const turn = this.turn;
    this.turn = null;
    turn?.reject(failure);
    for (const w of this.idleWaiters.splice(0)) w.reject(new SessionGone(error, "the session ended"));
    // A start() waiting for prepare stops waiting (prepare ends the session once it answers). After
    // a macrotask: when prepare's own answer is why (a 401 not_paired closes every session as it is
    // read), that answer's error, settling in microtasks, is the one start() reports.
    const leave = this.leavePrepare;
    if (leave) setTimeout(() => leave(this.cutShort()), 0);
    this.stream?.close();
    this.channel?.close();
    this.onEnded?.();
  }

  private action(name: string, body?: unknown, keepalive?: boolean) {
    return this.ctx.engine.call("POST", `/session/${encodeURIComponent(this.id)}/${name}`, { body, keepalive });
  }

  private prepareError(status: number, json: unknown): ProviderError {
    if (isTooManySessions(status, json)) return bridgeError(this.ctx.provider, "busy", words.busy, engineDetail(status, json));
    return bridgeError(this.ctx.provider, status >= 500 ? "failed" : `http_${status}`, words.failed, engineDetail(status, json));
  }
}
