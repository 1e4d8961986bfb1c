// Page tools: the callTool every provider gets. The cascade, not the providers, runs the tool and
// announces it (tool-call before, tool-result after), so every provider streams the same events
// and a page's middleware and validation apply whichever AI answers.
import { abortError } from "./errors.js";
import { raceAbort } from "./registry.js";
import { checkJsonSchema, validate } from "./schema.js";
import type { JsonSchema, RunEvent, Tool, ToolContext, ToolMiddleware, ToolOutcome } from "./types.js";

/** A request's tools, checked once: names unique, each with an execute. */
export interface ToolSet {
  readonly list: readonly Tool[];
  readonly byName: ReadonlyMap<string, Tool>;
}

/** Throws a clear Error for a tool list a request can't use. */
export function toolSet(tools: readonly Tool[] | undefined): ToolSet {
  if (tools !== undefined && !Array.isArray(tools)) throw new TypeError("tools must be an array of tools.");
  const byName = new Map<string, Tool>();
  for (const tool of tools ?? []) {
    if (!tool || typeof tool.name !== "string" || !tool.name) throw new TypeError("Every tool needs a name.");
    if (typeof tool.execute !== "function") throw new TypeError(`The tool "${tool.name}" needs an execute function.`);
    if (tool.inputSchema !== undefined) checkJsonSchema(tool.inputSchema, "inputSchema");
    if (byName.has(tool.name)) {
      throw new Error(`Two tools are named "${tool.name}": tool names must be unique in a request.`);
    }
    byName.set(tool.name, tool);
  }
  return Object.freeze({ list: Object.freeze([...byName.values()]), byName });
}

export function middlewareList(middleware: ToolMiddleware | ToolMiddleware[] | undefined): ToolMiddleware[] {
  const list = middleware === undefined ? [] : Array.isArray(middleware) ? [...middleware] : [middleware];
  for (const item of list) {
    if (typeof item !== "function") throw new TypeError("middleware must be a function or an array of functions.");
  }
  return list;
}

export interface ToolCallerOptions {
  tools: ToolSet;
  middleware: readonly ToolMiddleware[];
  /** The provider whose AI calls the tools (ToolContext.provider). */
  provider: string;
  signal: AbortSignal;
  /** Where tool-call and tool-result go (the run's event stream). */
  emit(event: RunEvent): void;
}

export type CallTool = (name: string, args: unknown, callId: string) => Promise<ToolOutcome>;

/** The callTool of one run. It never throws: every failure becomes { ok: false, error } for the AI. */
export function toolCaller(options: ToolCallerOptions): CallTool {
  const { tools, middleware, provider, signal, emit } = options;
  let calls = 0;
  return async (name, rawArgs, callId) => {
    const id = typeof callId === "string" && callId ? callId : `call_${++calls}`;
    const tool = tools.byName.get(name);
    const parsed = parseArgs(rawArgs, tool?.inputSchema);
    emit({ type: "tool-call", id, name, args: parsed.args });
    let outcome: ToolOutcome;
    try {
      if (signal.aborted) throw abortError(signal.reason);
      if (!tool) throw new Error(`Unknown tool: ${name}`);
      if (parsed.error) throw new Error(parsed.error);
      const ctx: ToolContext = Object.freeze({ provider, callId: id, signal });
      // Raced with the run's signal: a tool (or middleware) that ignores ctx.signal must not keep
      // the provider waiting once the run is cancelled; it gets a failed outcome to answer with.
      outcome = { ok: true, result: await raceAbort(runChain(tool, parsed.args, ctx, middleware), signal) };
    } catch (error) {
      outcome = { ok: false, error: messageOf(error) };
    }
    emit(outcome.ok ? { type: "tool-result", id, name, result: outcome.result } : { type: "tool-result", id, name, error: outcome.error });
    return outcome;
  };
}

/** Middleware outermost first; the innermost step validates the (possibly replaced) arguments,
 *  then executes. Validating last means a middleware that rewrites arguments is checked too. */
function runChain(tool: Tool, args: unknown, ctx: ToolContext, middleware: readonly ToolMiddleware[]): Promise<unknown> {
  const step = async (index: number, current: unknown): Promise<unknown> => {
    const layer = middleware[index];
    if (layer) {
      const next = (...replaced: unknown[]) => step(index + 1, replaced.length ? replaced[0] : current);
      return layer({ name: tool.name, args: current, ctx }, next);
    }
    const errors = validate(tool.inputSchema ?? { type: "object" }, current);
    if (errors.length) throw new Error(`Invalid arguments: ${errors.join("; ")}`);
    return tool.execute(current, ctx);
  };
  return step(0, args);
}

/** Providers may pass the arguments as the AI wrote them: a JSON string (OpenAI's wire format) is
 *  parsed for tools that take an object, and no arguments mean {}. */
function parseArgs(args: unknown, schema: JsonSchema | undefined): { args: unknown; error?: string } {
  const takesObject = schema === undefined || schema.type === undefined || schema.type === "object";
  if (!takesObject) return { args };
  if (args === undefined || args === null) return { args: {} };
  if (typeof args !== "string") return { args };
  if (!args.trim()) return { args: {} };
  try {
    return { args: JSON.parse(args) };
  } catch {
    return { args, error: "The arguments were not valid JSON." };
  }
}

export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === "string") return error;
  return String(error);
}
