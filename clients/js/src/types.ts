// The public types of @leuria/client, and the interface every provider implements (the three
// built-in ones and any custom one). This file is the contract between the cascade (leuria.ts)
// and the providers; it holds no code.

// ---------------------------------------------------------------- messages

export type Role = "system" | "user" | "assistant";

export interface TextPart {
  type: "text";
  text: string;
}

/** An image in a message: base64 data (no data: prefix) and its MIME type. */
export interface ImagePart {
  type: "image";
  data: string;
  mimeType: string;
}

export type Part = TextPart | ImagePart;

export interface MessageMetadata {
  /** The provider that wrote an assistant message, e.g. "bridge". */
  provider?: string;
  /** The model in plain words when the provider knows it, e.g. "Claude Code". */
  model?: string;
}

export interface Message {
  role: Role;
  content: string | Part[];
  metadata?: MessageMetadata;
}

/** A file for the AI to look at. Images only today: { mimeType: "image/png", data: base64 }. */
export interface Attachment {
  mimeType: string;
  /** base64, without a data: prefix */
  data: string;
  name?: string;
}

/** A JSON Schema (draft 2020-12 subset: type, properties, required, items, enum, const, anyOf,
 *  oneOf, allOf, minimum, maximum, minLength, maxLength, pattern, minItems, maxItems,
 *  additionalProperties, nullable types). */
export type JsonSchema = { [key: string]: unknown };

// ---------------------------------------------------------------- tools

export interface ToolContext {
  /** The provider whose AI called the tool. */
  provider: string;
  /** The call's id, as the AI gave it. */
  callId: string;
  /** Aborted when the run is cancelled. Pass it on (to fetch, say): a tool that ignores it keeps
   *  running, though its call ends at once with an error and its result is dropped. */
  signal: AbortSignal;
}

/** A function that runs in the page when the AI asks for it. Arguments come from the AI: they are
 *  validated against inputSchema before execute runs, and a call with bad arguments fails with a
 *  message the AI can read. */
export interface Tool<Args = any, Result = unknown> {
  name: string;
  description?: string;
  /** A JSON Schema (not a Zod schema: convert one with z.toJSONSchema()). Default: an object with
   *  any properties. */
  inputSchema?: JsonSchema;
  execute(args: Args, ctx: ToolContext): Result | Promise<Result>;
}

export interface ToolCall {
  name: string;
  args: unknown;
  ctx: ToolContext;
}

/** Wraps every tool call: log it, ask the visitor to confirm, change the arguments, or refuse by
 *  throwing. `next(args?)` runs the rest of the chain (validation, then execute). */
export type ToolMiddleware = (call: ToolCall, next: (args?: unknown) => Promise<unknown>) => Promise<unknown>;

/** What a provider gets back from running a tool: a result, or an error message for the AI. */
export type ToolOutcome = { ok: true; result: unknown } | { ok: false; error: string };

// ---------------------------------------------------------------- requests and runs

export interface RoutingOptions {
  /** Keep the data on this device: providers whose locality isn't "device" are skipped. */
  localOnly?: boolean;
  /** Use these providers, in this order (they never wait for the visitor's own AI). */
  provider?: string | string[];
}

export interface ChatRequest extends RoutingOptions {
  /** A single user message. Use this or messages. */
  prompt?: string;
  /** The conversation so far, ending with a user message. */
  messages?: Message[];
  /** Instructions for the AI. */
  system?: string;
  tools?: Tool[];
  /** Ask for a JSON answer matching this JSON Schema (not a Zod schema: convert one with
   *  z.toJSONSchema()); read it with run.object(). */
  schema?: JsonSchema;
  /** Images for the AI, added to the last user message. */
  attachments?: Attachment[];
  signal?: AbortSignal;
  /** How many model steps a tool loop may take (default 10). */
  maxTurns?: number;
}

export type FinishReason = "stop" | "length" | "tool-limit";

export type RunEvent =
  | { type: "start"; provider: string; model?: string }
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string }
  | { type: "tool-call"; id: string; name: string; args: unknown }
  | { type: "tool-result"; id: string; name: string; result?: unknown; error?: string }
  | { type: "finish"; text: string; message: Message; reason: FinishReason }
  | { type: "error"; error: Error };

/** One request's answer. Iterate it for events (each iterator sees every event from the start),
 *  iterate textStream for the text alone, or await text(), object() or message(). Every run begins
 *  with start and ends with finish or error; a run that never reached a provider (NoProviderError,
 *  a bad request, cancelled at once) has the error event alone. cancel() stops it: the run then
 *  fails with an AbortError. A run nobody awaits never causes an unhandled rejection. */
export interface Run extends AsyncIterable<RunEvent> {
  /** The answer's text as it streams, chunk by chunk, from the start. Unlike the event iterator
   *  (which yields an error event and ends), it throws the run's error, as the Vercel AI SDK's
   *  textStream and OpenAI's streams do: `for await (const chunk of run.textStream)` in a try. */
  readonly textStream: AsyncIterable<string>;
  text(): Promise<string>;
  /** The answer parsed as JSON and checked against the request's schema. An answer that isn't
   *  JSON, or doesn't match, rejects with SchemaError (its text and the problems found). */
  object<T = unknown>(): Promise<T>;
  message(): Promise<Message>;
  /** The provider that answers, once the run has started. */
  readonly provider: string | undefined;
  readonly done: boolean;
  cancel(reason?: string): void;
}

export interface ConversationOptions extends RoutingOptions {
  system?: string;
  tools?: Tool[];
  /** Earlier messages to continue from. */
  messages?: Message[];
  maxTurns?: number;
}

export interface SendOptions {
  attachments?: Attachment[];
  schema?: JsonSchema;
  signal?: AbortSignal;
}

/** Several turns with one AI. On the bridge it keeps one engine session warm; on other providers
 *  each turn sends the history. One turn at a time. A turn that never reached an AI leaves
 *  messages as they were; one that failed after keeps the visitor's message. */
export interface Conversation {
  send(prompt: string, options?: SendOptions): Run;
  /** Every message so far, assistant ones with metadata.provider. A new array after each change. */
  readonly messages: readonly Message[];
  close(): Promise<void>;
}

export type EmbedKind = "query" | "document";

export interface EmbedOptions extends RoutingOptions {
  kind?: EmbedKind;
  signal?: AbortSignal;
}

export interface Embeddings {
  /** Vectors from different models can't be compared: keep model with them. */
  model: string;
  vectors: number[][];
  provider: string;
}

// ---------------------------------------------------------------- state

export type Locality = "device" | "visitor-cloud" | "site";
export type ProviderStatus = "unknown" | "detecting" | "unavailable" | "needs-action" | "downloading" | "ready";
export type Capability = "chat" | "tools" | "images" | "structured" | "agent" | "embed";
export type Offer = "chat" | "embed";
export type VisitorAction = "connect" | "download";

/** One provider, as the UI shows it. */
export interface ProviderState {
  readonly id: string;
  readonly label: string;
  readonly locality: Locality;
  /** What it can be used for at all. */
  readonly offers: readonly Offer[];
  readonly status: ProviderStatus;
  /** What it can do now (bridge: embed only when the visitor has a local embedding model). */
  readonly capabilities: readonly Capability[];
  /** The AI in plain words, e.g. "Claude Code", "Gemini Nano". */
  readonly model?: string;
  /** What a click would do while status is needs-action (or unavailable with a retry). */
  readonly action?: VisitorAction;
  /** 0 to 1 while downloading. */
  readonly progress?: number;
  /** Why, in plain words for visitors. */
  readonly detail?: string;
  readonly embedModel?: string;
  /** Present (true) on the visitor's own AI (Provider.ownAI), which the UI offers first. */
  readonly ownAI?: true;
}

/** An immutable snapshot: a new object after every change, the same object until then. */
export interface LeuriaState {
  readonly providers: readonly ProviderState[];
  /** The provider a plain chat request would use now. */
  readonly active: string | null;
  /** A provider that needs a visitor action and is preferred over the active one (or none is ready):
   *  needs-action, or the visitor's own AI unavailable with an action (a retry, after a connect
   *  that got no answer). Never one held back for the visitor's own AI: those are in alternatives. */
  readonly pending: string | null;
  /** The same two, for embeddings. */
  readonly embedder: string | null;
  readonly embedPending: string | null;
  /** Providers that would answer once the visitor picks them instead of their own AI. */
  readonly alternatives: readonly string[];
  /** The visitor's pick (chooseInstead) for this page, if any. */
  readonly chosen: string | null;
}

export interface LeuriaOptions {
  providers: Provider[];
  /** "ask" (default): providers after the visitor's own AI (bridge(), or a provider with ownAI)
   *  wait until the visitor picks one. "auto": they answer at once while it isn't ready. */
  fallback?: "ask" | "auto";
  middleware?: ToolMiddleware | ToolMiddleware[];
  /** End provider sessions when the page goes away. Default true. */
  closeOnUnload?: boolean;
  /** Detect at creation, on focus and every watchMs while visible. Default true. With false, a
   *  request still detects, once, the providers it needs that were never detected. */
  autoDetect?: boolean;
  /** Default 5000. 0 turns the periodic check off (focus still checks). */
  watchMs?: number;
}

export interface Leuria {
  getState(): LeuriaState;
  subscribe(listener: () => void): () => void;
  chat(request: ChatRequest): Run;
  conversation(options?: ConversationOptions): Conversation;
  embed(texts: string[], options?: EmbedOptions): Promise<Embeddings>;
  /** Runs a visitor action (connect, download). Without an id: the visitor's own AI when it needs
   *  them (a connect, or a retry), else the first chat provider (in the providers' order) that
   *  needs a visitor action, leaving out those held back while the own AI isn't ready. That isn't
   *  always state.pending: once the own AI is ready nothing is held back, so a plain connect()
   *  takes the first other provider needing an action, such as the browser model's download.
   *  For a button meant for the visitor's own AI, pass its id (connect("bridge")): without one, a
   *  ready bridge means the first provider needing an action (a download) is taken. Call it from
   *  a click. It resolves once the action has run its course (bridge: the visitor answered, or
   *  didn't) and reports the outcome in the state: it doesn't reject when the visitor says no. */
  connect(providerId?: string): Promise<void>;
  /** Forgets the site's grant (or the provider's equivalent) in this browser. */
  disconnect(providerId?: string): Promise<void>;
  /** Records the visitor's pick of another provider instead of their own AI, for this page. */
  chooseInstead(providerId: string | null): void;
  /** Checks every provider again now. A check already in flight began before the call, so one
   *  more runs after it: the state it resolves with is never older than the call. */
  detect(): Promise<void>;
  destroy(): void;
}

// ---------------------------------------------------------------- providers

/** What a provider reports about itself (detect(), and pushed with ProviderContext.update). */
export interface ProviderReport {
  status: ProviderStatus;
  /** What it can do now. Chat is an offer, so listing "chat" is optional. While needs-action,
   *  report what it will do once ready, or nothing (it then counts as able to do all it offers,
   *  for NoProviderError.actionable and choices). */
  capabilities: Capability[];
  model?: string;
  action?: VisitorAction;
  progress?: number;
  detail?: string;
  embedModel?: string;
}

/** Given to a provider once, when createLeuria takes it. */
export interface ProviderContext {
  /** Push a change (a download's progress, a token forgotten on 401) without waiting for detect.
   *  The fields given replace the current ones; a field given as undefined is cleared. */
  update(report: Partial<ProviderReport>): void;
  /** Ask the cascade to run detect() again soon (for example after a connect succeeded). A detect
   *  already in flight is followed by a fresh one, as its answer may predate the change. */
  redetect(): void;
}

/** What a provider's chat gets: the cascade has already picked it. */
export interface ProviderChatRequest {
  /** The whole conversation, ending with the new user message (attachments already added as
   *  image parts). System instructions are in `system`, not in messages. */
  messages: Message[];
  system?: string;
  /** The tools' declarations; run them with callTool (validation and middleware included). */
  tools: readonly Tool[];
  /** Runs a tool the AI asked for: middleware, then validation against inputSchema, then execute.
   *  It emits tool-call before and tool-result after, so a provider must not emit those itself.
   *  It never throws: an unknown tool, bad arguments or a failing tool give { ok: false, error }, and
   *  so does a cancel, at once, even while the tool itself runs on.
   *  args may be the JSON text the AI wrote (parsed for tools that take an object; empty means
   *  {}). callId is the AI's id for the call (one is made up when it is empty). */
  callTool(name: string, args: unknown, callId: string): Promise<ToolOutcome>;
  schema?: JsonSchema;
  maxTurns: number;
  /** Aborted when the run is cancelled (run.cancel(), the request's signal, conversation.close(),
   *  ai.destroy()), with an AbortError as its reason. The run has already failed by then: stop,
   *  and reject (throwing signal.reason is fine); whatever comes after is ignored. */
  signal: AbortSignal;
  /** Stream text and reasoning as they happen. The cascade adds start, finish and error, and
   *  callTool adds tool-call and tool-result: any other event a provider emits is ignored. A
   *  provider that doesn't stream may emit nothing: its result's text becomes one text event. */
  emit(event: RunEvent): void;
}

export interface ProviderChatResult {
  /** The whole answer text (for a schema: the JSON text). */
  text: string;
  reason?: FinishReason;
  /** The model in plain words, if known. */
  model?: string;
}

/** A stateful conversation kept by a provider (bridge: one warm engine session). */
export interface ProviderConversation {
  /** One turn; request.messages holds the whole history, so a provider can rebuild its state if
   *  it must start over. */
  send(request: ProviderChatRequest): Promise<ProviderChatResult>;
  close(options?: { keepalive?: boolean }): Promise<void>;
}

/** The small interface behind bridge(), browserAI() and server(). A custom provider implements
 *  it, and createLeuria({ providers: [myProvider, …] }) takes it like the built-in ones. */
export interface Provider {
  readonly id: string;
  readonly label: string;
  readonly locality: Locality;
  readonly offers: readonly Offer[];
  /** The visitor's own AI: providers after it wait while it isn't ready (see the cascade). A
   *  provider with the id "bridge" counts as one too. */
  readonly ownAI?: boolean;
  /** Called once by createLeuria, before the first detect. */
  attach?(context: ProviderContext): void;
  /** Where the provider stands now. Must not prompt the visitor, and (bridge) must not reach the
   *  engine while there is no token. */
  detect(): Promise<ProviderReport>;
  chat(request: ProviderChatRequest): Promise<ProviderChatResult>;
  /** Optional: keep state across turns (see Conversation). */
  openConversation?(options: { system?: string; tools: readonly Tool[] }): ProviderConversation;
  embed?(texts: string[], options: { kind: EmbedKind; signal: AbortSignal }): Promise<{ model: string; vectors: number[][] }>;
  /** The visitor action (connect, download). Called synchronously from the click: a provider
   *  that opens a link or a window must do it before its first await. */
  connect?(): Promise<void>;
  disconnect?(): Promise<void>;
  /** The page is going away (closeOnUnload) or the cascade is destroyed. */
  destroy?(options: { keepalive: boolean }): void;
}
