// A conversation: several turns, one at a time. Each turn goes through the cascade; a provider with
// openConversation (bridge: one warm engine session) keeps one session for the conversation's
// life, the others get the whole history on every turn.
import { abortError } from "./errors.js";
import { copyMessage, frozenMessage, textOf, userMessage } from "./messages.js";
import { destroyedError } from "./registry.js";
import { reportError } from "./page.js";
import { failedRun } from "./run.js";
import { toolSet, type ToolSet } from "./tools.js";
import { maxTurnsOf, startTurn, type Core } from "./turn.js";
import type {
  Conversation,
  ConversationOptions,
  Message,
  Provider,
  ProviderChatRequest,
  ProviderChatResult,
  ProviderConversation,
  RoutingOptions,
  Run,
  SendOptions,
} from "./types.js";

/** The Leuria instance's view of its conversations. Only those holding provider sessions are
 *  listed (to end them on destroy and page unload), so a page's forgotten conversations can be
 *  garbage-collected. */
export interface ConversationCore extends Core {
  readonly conversations: Set<LeuriaConversation>;
}

export class LeuriaConversation implements Conversation {
  readonly #core: ConversationCore;
  readonly #tools: ToolSet;
  readonly #system: string | undefined;
  readonly #routing: RoutingOptions;
  readonly #maxTurns: number;
  #messages: readonly Message[];
  #current: Run | undefined;
  #closed = false;
  /** One session per provider that keeps state, opened on its first turn. */
  readonly #sessions = new Map<string, ProviderConversation>();

  constructor(core: ConversationCore, options: ConversationOptions = {}) {
    this.#core = core;
    this.#tools = toolSet(options.tools);
    this.#routing = { ...(options.localOnly !== undefined ? { localOnly: options.localOnly } : {}), ...(options.provider !== undefined ? { provider: options.provider } : {}) };
    this.#maxTurns = maxTurnsOf(options.maxTurns);
    const instructions = typeof options.system === "string" && options.system ? [options.system] : [];
    const history: Message[] = [];
    if (options.messages !== undefined && !Array.isArray(options.messages)) throw new TypeError("messages must be an array of messages.");
    for (const message of options.messages ?? []) {
      if (message?.role === "system") instructions.push(textOf(message.content));
      else if (message && (message.role === "user" || message.role === "assistant")) history.push(frozenMessage(copyMessage(message)));
      else throw new TypeError('Each message needs a role ("user", "assistant" or "system") and content.');
    }
    this.#system = instructions.filter(Boolean).join("\n\n") || undefined;
    this.#messages = Object.freeze(history);
  }

  get messages(): readonly Message[] {
    return this.#messages;
  }

  send(prompt: string, options: SendOptions = {}): Run {
    if (this.#core.registry.destroyed) return failedRun(destroyedError());
    if (this.#closed) return failedRun(new Error("This conversation is closed: start a new one with ai.conversation()."));
    if (this.#current && !this.#current.done) {
      return failedRun(new Error("This conversation is still answering: wait for the answer, or cancel it, before sending the next message."));
    }
    let user: Message;
    try {
      user = frozenMessage(userMessage(prompt, options.attachments));
    } catch (error) {
      return failedRun(error as Error);
    }
    const before = this.#messages;
    this.#setMessages([...before, user]);
    const run: Run = startTurn(this.#core, {
      messages: this.#messages.map(copyMessage),
      ...(this.#system !== undefined ? { system: this.#system } : {}),
      tools: this.#tools,
      ...(options.schema !== undefined ? { schema: options.schema } : {}),
      maxTurns: this.#maxTurns,
      routing: this.#routing,
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
      answer: (provider, request) => this.#answer(provider, request),
      onFinish: (message) => this.#setMessages([...this.#messages, frozenMessage(message)]),
      // A turn that never reached an AI (none ready, cancelled at once) leaves no trace, so the
      // page can send the same message again. One that did keeps the visitor's message.
      onError: () => {
        if (run.provider === undefined && this.#messages[this.#messages.length - 1] === user) this.#setMessages(before);
      },
    });
    this.#current = run;
    return run;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#current?.cancel("The conversation was closed.");
    await this.endSessions({ keepalive: false });
  }

  /** Ends the provider sessions. On page unload (keepalive) the conversation itself stays usable:
   *  a page restored from the back/forward cache opens new sessions with the whole history. */
  async endSessions(options: { keepalive: boolean }): Promise<void> {
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    this.#core.conversations.delete(this);
    await Promise.all(
      sessions.map(async (session) => {
        try {
          await session.close(options);
        } catch (error) {
          reportError(error);
        }
      }),
    );
  }

  async #answer(provider: Provider, request: ProviderChatRequest): Promise<ProviderChatResult> {
    if (typeof provider.openConversation !== "function") return provider.chat(request);
    if (this.#closed) throw abortError("The conversation was closed."); // don't open a session we'd leak
    let session = this.#sessions.get(provider.id);
    if (!session) {
      session = provider.openConversation({ ...(this.#system !== undefined ? { system: this.#system } : {}), tools: this.#tools.list });
      this.#sessions.set(provider.id, session);
      this.#core.conversations.add(this);
    }
    return session.send(request);
  }

  #setMessages(messages: Message[] | readonly Message[]): void {
    this.#messages = Object.freeze([...messages]);
  }
}
