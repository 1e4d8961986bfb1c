// One turn through the cascade, shared by ai.chat() and conversation.send(): pick the provider,
// announce it, give it the request with callTool, and turn its answer into the run's events.
import { needsOf } from "./messages.js";
import type { Registry } from "./registry.js";
import { LeuriaRun } from "./run.js";
import { checkJsonSchema } from "./schema.js";
import { toolCaller, type ToolSet } from "./tools.js";
import type { JsonSchema, Message, Provider, ProviderChatRequest, ProviderChatResult, RoutingOptions, Run, ToolMiddleware } from "./types.js";

export const DEFAULT_MAX_TURNS = 10;

/** What a turn needs from the Leuria instance. */
export interface Core {
  readonly registry: Registry;
  readonly middleware: readonly ToolMiddleware[];
  /** Runs in flight, so destroy() can cancel them. */
  readonly runs: Set<Run>;
}

export interface Turn {
  messages: Message[];
  system?: string;
  tools: ToolSet;
  schema?: JsonSchema;
  maxTurns: number;
  routing: RoutingOptions;
  signal?: AbortSignal;
  /** How the picked provider answers (a conversation uses its provider session). Default: chat. */
  answer?(provider: Provider, request: ProviderChatRequest): Promise<ProviderChatResult>;
  onFinish?(message: Message): void;
  onError?(error: Error): void;
}

export function startTurn(core: Core, turn: Turn): Run {
  const { messages, system, tools, schema, maxTurns, routing } = turn;
  const needs = needsOf({ messages, tools: tools.list, schema });
  const run: Run = new LeuriaRun(
    async (control) => {
      // Checked here, not before: the run then fails like any bad request (error event alone).
      if (schema !== undefined) checkJsonSchema(schema, "schema");
      const provider = await core.registry.pick(needs, routing, control.signal);
      const model = core.registry.getState().providers.find((state) => state.id === provider.id)?.model;
      control.start(provider.id, model);
      const request: ProviderChatRequest = {
        messages,
        ...(system !== undefined ? { system } : {}),
        tools: tools.list,
        callTool: toolCaller({ tools, middleware: core.middleware, provider: provider.id, signal: control.signal, emit: control.emit }),
        ...(schema !== undefined ? { schema } : {}),
        maxTurns,
        signal: control.signal,
        emit: control.emitFromProvider,
      };
      return turn.answer ? turn.answer(provider, request) : provider.chat(request);
    },
    {
      ...(schema !== undefined ? { schema } : {}),
      ...(turn.signal !== undefined ? { signal: turn.signal } : {}),
      onFinish: (message) => {
        core.runs.delete(run);
        turn.onFinish?.(message);
      },
      onError: (error) => {
        core.runs.delete(run);
        turn.onError?.(error);
      },
    },
  );
  core.runs.add(run);
  return run;
}

export function maxTurnsOf(value: number | undefined): number {
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : DEFAULT_MAX_TURNS;
}
