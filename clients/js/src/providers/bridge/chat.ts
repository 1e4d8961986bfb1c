// The two ways the bridge answers: a one-off chat (a fresh engine session with the conversation
// flattened into its prompt, closed at the end) and a conversation (one engine session kept warm
// for many turns, started again with the history as context if it ends between turns).
import type { ProviderChatRequest, ProviderChatResult, ProviderConversation, Tool } from "../../types.js";
import { promptAfter, promptFor } from "./prompt.js";
import { EngineSession, SessionGone, type PrepareBody, type SessionContext } from "./session.js";
import { bridgeError, words } from "./words.js";

/** Keeps track of live sessions, so disconnect and destroy can close them. */
export type Track = (session: EngineSession) => void;

export interface ConversationHooks {
  track: Track;
  /** The conversation is closed: the provider stops tracking it. */
  onClosed(): void;
}

export async function oneOffChat(ctx: SessionContext, request: ProviderChatRequest, track: Track): Promise<ProviderChatResult> {
  const { prompt, attachments } = promptFor(request.messages, request.schema);
  const body: PrepareBody = { prompt };
  if (attachments.length) body.attachments = attachments;
  if (request.system) body.systemPrompt = request.system;
  if (request.maxTurns) body.maxTurns = request.maxTurns;
  const session = new EngineSession(ctx, request.tools, "cancel");
  track(session);
  try {
    const result = await session.start(body, request);
    return result as ProviderChatResult;
  } finally {
    // An origin holds only 4 live sessions: give this one back at once.
    void session.close().catch(() => {});
  }
}

export class BridgeConversation implements ProviderConversation {
  private session: EngineSession | null = null;
  /** The session warming up, and its warm-up. */
  private starting: { session: EngineSession; ready: Promise<EngineSession> } | null = null;
  private closed = false;
  /** Bumped by endSession(): a session still starting from before then is closed, not used. */
  private epoch = 0;
  private endOptions: { keepalive?: boolean } = {};
  /** How many of the conversation's messages `seenBy` has seen (the prompts and the answers). */
  private seen = 0;
  private seenBy: EngineSession | null = null;

  constructor(
    private readonly ctx: SessionContext,
    private readonly options: { system?: string; tools: readonly Tool[] },
    private readonly hooks: ConversationHooks,
  ) {}

  async send(request: ProviderChatRequest): Promise<ProviderChatResult> {
    if (this.closed) throw bridgeError(this.ctx.provider, "failed", words.failed, "the conversation was closed");
    // Twice at most: a session that ended between turns is replaced once, with the history.
    for (let attempt = 0; ; attempt++) {
      let session: EngineSession;
      try {
        session = await this.warm(request.maxTurns);
      } catch (error) {
        if (error instanceof SessionGone) throw error.failure ?? bridgeError(this.ctx.provider, "failed", words.failed, error.detail);
        throw error;
      }
      // A fresh session hasn't seen the earlier messages, and a warm one hasn't seen the turns
      // another AI answered meanwhile: those go into its prompt as context.
      const seen = this.seenBy === session ? this.seen : 0;
      const { prompt, attachments } = promptAfter(request.messages, seen, request.schema);
      try {
        const result = await session.prompt(prompt, attachments, request);
        this.seenBy = session;
        this.seen = request.messages.length + 1;
        return result;
      } catch (error) {
        if (!(error instanceof SessionGone)) throw error;
        if (this.session === session) this.session = null;
        if (attempt >= 1) throw error.failure ?? bridgeError(this.ctx.provider, "failed", words.failed, error.detail);
      }
    }
  }

  async close(options: { keepalive?: boolean } = {}): Promise<void> {
    this.closed = true;
    this.hooks.onClosed();
    await this.endSession(options);
  }

  /**
   * Ends the engine session but not the conversation (disconnect, page unload): the conversation
   * belongs to the page, which may go on with it, and its next turn starts a new session with the
   * history as context.
   */
  async endSession(options: { keepalive?: boolean } = {}): Promise<void> {
    this.epoch++;
    this.endOptions = options;
    const starting = this.starting;
    const session = this.session;
    this.session = null;
    await session?.close(options);
    // One still starting is closed at once: its start() goes no further, and a prepare still in
    // flight is closed once it names the session. One that finishes starting in between is
    // closed by warm() (it checks the epoch).
    await starting?.session.close(options);
    await starting?.ready.catch(() => null);
  }

  /**
   * The live session, or a new one warming up: prepare without a prompt, approve, then `ready`.
   * Started by the first turn (the core opens a conversation right before its first turn), so it
   * takes that turn's maxTurns; every turn then goes through POST /prompt the same way.
   */
  private warm(maxTurns: number): Promise<EngineSession> {
    if (this.session && !this.session.ended) return Promise.resolve(this.session);
    if (this.starting) return this.starting.ready;
    const session = new EngineSession(this.ctx, this.options.tools, "cancel-turn");
    this.hooks.track(session);
    const body: PrepareBody = {};
    if (this.options.system) body.systemPrompt = this.options.system;
    if (maxTurns) body.maxTurns = maxTurns;
    const epoch = this.epoch;
    const ready = session
      .start(body)
      .then(() => {
        if (this.closed || this.epoch !== epoch) {
          void session.close(this.endOptions);
          throw bridgeError(this.ctx.provider, "failed", words.failed, this.closed ? "the conversation was closed" : "the session was ended while it started");
        }
        this.session = session;
        return session;
      })
      .finally(() => {
        this.starting = null;
      });
    this.starting = { session, ready };
    return ready;
  }
}
