// server(): the site's own endpoint speaking the OpenAI Chat Completions API with streaming. The
// site's server adds the API key; the page never holds one. Tools still run in the page: the
// model asks for them in the stream, we run them through request.callTool, and send the results
// back as the next step.
import { ProviderError, abortError } from "../errors.js";
import type {
  Capability,
  JsonSchema,
  Message,
  Provider,
  ProviderChatRequest,
  ProviderChatResult,
  ProviderReport,
  ToolOutcome,
} from "../types.js";
import { ToolCallAssembler, errorText, readEvents, type PendingToolCall } from "./openai-stream.js";

export interface ServerOptions {
  /** The endpoint, e.g. "/api/ai/chat/completions". */
  url: string;
  /** Sent as body.model when given (a server usually picks its own). */
  model?: string;
  /** Extra headers: an object, or a function called for every request (may be async). */
  headers?: Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);
  /** The server accepts response_format { type: "json_schema", json_schema: { name, schema } }.
   *  "strict" adds strict: true, which OpenAI enforces, but only for schemas whose properties are
   *  all required and that set additionalProperties: false. Default false: the schema is asked
   *  for in words, and the answer checked all the same. */
  jsonSchema?: boolean | "strict";
  /** The server accepts tools. Default true. */
  tools?: boolean;
  /** The server accepts images (image_url parts). Default false. */
  images?: boolean;
  id?: string;
  label?: string;
  fetch?: typeof fetch;
}

const UNAVAILABLE = "This site's AI isn't available right now.";

type OpenAiMessage = Record<string, unknown>;

/** The site's server, as a provider. */
export function server(options: ServerOptions): Provider {
  if (!options || typeof options.url !== "string" || !options.url) throw new TypeError("server() needs a url.");
  const id = options.id ?? "server";
  const label = options.label ?? "This site's AI";
  const useTools = options.tools !== false;
  const useImages = options.images === true;
  const useJsonSchema = options.jsonSchema === true || options.jsonSchema === "strict";
  const strict = options.jsonSchema === "strict";
  const capabilities: Capability[] = ["chat"];
  if (useTools) capabilities.push("tools");
  if (useImages) capabilities.push("images");
  if (useJsonSchema) capabilities.push("structured");

  // Looked up per request, so a page (or a test) that replaces fetch later is followed.
  const doFetch = (input: string, init: RequestInit) => (options.fetch ?? globalThis.fetch)(input, init);

  async function post(body: unknown, signal: AbortSignal): Promise<Response> {
    const extra = typeof options.headers === "function" ? await options.headers() : options.headers;
    let response: Response;
    try {
      response = await doFetch(options.url, {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream", ...(extra ?? {}) },
        body: JSON.stringify(body),
        signal,
      });
    } catch (error) {
      if (signal.aborted) throw abortError(signal.reason);
      throw new ProviderError(id, "failed", UNAVAILABLE, (error as Error)?.message);
    }
    if (!response.ok) {
      const text = await response.text().catch(() => "");
      throw new ProviderError(id, `http_${response.status}`, UNAVAILABLE, errorText(text) || response.statusText);
    }
    if (!response.body) throw new ProviderError(id, "bad_answer", UNAVAILABLE, "The response had no body.");
    return response;
  }

  /** One model step: streams text and reasoning out, and returns the tool calls it asked for. */
  async function step(request: ProviderChatRequest, body: Record<string, unknown>, index: number) {
    const response = await post(body, request.signal);
    const calls = new ToolCallAssembler();
    let text = "";
    let finish: string | null = null;
    let ended = false;
    try {
      for await (const item of readEvents(response.body!)) {
        if (item.done) {
          ended = true;
          break;
        }
        const chunk = item.data;
        if (chunk?.error) throw new ProviderError(id, "failed", UNAVAILABLE, errorText(JSON.stringify(chunk)));
        const choice = chunk?.choices?.[0];
        if (!choice) continue;
        const delta = choice.delta ?? {};
        const reasoning = delta.reasoning_content ?? delta.reasoning;
        if (typeof reasoning === "string" && reasoning) request.emit({ type: "reasoning", text: reasoning });
        if (typeof delta.content === "string" && delta.content) {
          text += delta.content;
          request.emit({ type: "text", text: delta.content });
        }
        calls.add(delta.tool_calls);
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    } catch (error) {
      if (request.signal.aborted) throw abortError(request.signal.reason);
      if (error instanceof ProviderError) throw error;
      throw new ProviderError(id, "failed", "This site's AI stopped before finishing its answer.", (error as Error)?.message);
    }
    // Some servers omit [DONE] but always send a finish_reason; with neither, the stream was cut.
    if (!ended && !finish) {
      throw new ProviderError(id, "failed", "This site's AI stopped before finishing its answer.", "The stream ended early.");
    }
    return { text, finish, calls: calls.finish(`call_${index}`) };
  }

  async function chat(request: ProviderChatRequest): Promise<ProviderChatResult> {
    const messages = toOpenAiMessages(request, useImages, useJsonSchema);
    const tools = useTools && request.tools.length ? request.tools.map(toOpenAiTool) : undefined;
    const maxTurns = Math.max(1, request.maxTurns || 1);
    let all = "";
    for (let index = 0; index < maxTurns; index++) {
      if (request.signal.aborted) throw abortError(request.signal.reason);
      const last = index === maxTurns - 1;
      const body: Record<string, unknown> = { messages, stream: true };
      if (options.model) body.model = options.model;
      if (tools) {
        body.tools = tools;
        // The last step must answer: tools stay declared (the history mentions them), unused.
        if (last) body.tool_choice = "none";
      }
      if (request.schema && useJsonSchema) body.response_format = responseFormat(request.schema, strict);

      // Steps are separated in the streamed text, so "Let me look." and the answer don't run together.
      const separator = all && !all.endsWith("\n") ? "\n\n" : "";
      let first = true;
      const result = await step({
        ...request,
        emit(event) {
          if (event.type === "text" && first && separator) request.emit({ type: "text", text: separator });
          if (event.type === "text") first = false;
          request.emit(event);
        },
      }, body, index);
      if (result.text) all += separator + result.text;
      // A schema's answer is the last step's JSON alone, without the words of earlier steps.
      const answer = request.schema ? result.text : all;
      const model = options.model ? { model: options.model } : {};

      if (!result.calls.length || !tools) {
        return { text: answer, reason: result.finish === "length" ? "length" : "stop", ...model };
      }
      if (last) return { text: answer, reason: "tool-limit", ...model };

      messages.push({
        role: "assistant",
        content: result.text || null,
        tool_calls: result.calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments || "{}" } })),
      });
      for (const call of result.calls) {
        const outcome = await runTool(request, call);
        messages.push({ role: "tool", tool_call_id: call.id, content: outcomeText(outcome) });
      }
    }
    return { text: all, reason: "tool-limit" };
  }

  return {
    id,
    label,
    locality: "site",
    offers: ["chat"],
    // The site's own server: nothing to probe, and a probe would cost the site a request.
    async detect(): Promise<ProviderReport> {
      return { status: "ready", capabilities: [...capabilities], ...(options.model ? { model: options.model } : {}) };
    },
    chat,
  };
}

/** Runs one call through the cascade's callTool, which validates it and announces it (tool-call,
 *  tool-result) in the run's events. Arguments that aren't JSON go as written: callTool says so
 *  to the AI. */
async function runTool(request: ProviderChatRequest, call: PendingToolCall): Promise<ToolOutcome> {
  let args: unknown = call.arguments;
  try {
    args = call.arguments.trim() ? JSON.parse(call.arguments) : {};
  } catch {
    // Left as the string.
  }
  if (request.signal.aborted) throw abortError(request.signal.reason);
  try {
    return await request.callTool(call.name, args, call.id);
  } catch (error) {
    if (request.signal.aborted) throw abortError(request.signal.reason);
    return { ok: false, error: (error as Error)?.message || String(error) };
  }
}

function outcomeText(outcome: ToolOutcome): string {
  if (!outcome.ok) return JSON.stringify({ error: outcome.error });
  if (typeof outcome.result === "string") return outcome.result;
  return outcome.result === undefined ? "null" : JSON.stringify(outcome.result);
}

function toOpenAiTool(tool: { name: string; description?: string; inputSchema?: JsonSchema }) {
  return {
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      parameters: tool.inputSchema ?? { type: "object", properties: {} },
    },
  };
}

/** Not strict unless asked: OpenAI's strict mode rejects any schema with an optional property,
 *  and the cascade checks the answer against the schema anyway. */
function responseFormat(schema: JsonSchema, strict: boolean) {
  const title = typeof schema.title === "string" ? schema.title.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) : "";
  return { type: "json_schema", json_schema: { name: title || "answer", schema, ...(strict ? { strict: true } : {}) } };
}

/** Where there is no native json_schema, the model is asked in words (the cascade checks the JSON). */
export function schemaInstruction(schema: JsonSchema): string {
  return "Answer with only a JSON value matching this JSON Schema, with no other text and no code fence:\n" + JSON.stringify(schema);
}

function toOpenAiMessages(request: ProviderChatRequest, images: boolean, jsonSchema: boolean): OpenAiMessage[] {
  const out: OpenAiMessage[] = [];
  let system = request.system ?? "";
  if (request.schema && !jsonSchema) system = system ? `${system}\n\n${schemaInstruction(request.schema)}` : schemaInstruction(request.schema);
  if (system) out.push({ role: "system", content: system });
  for (const m of request.messages) {
    // System instructions belong in request.system; any left in messages still go first-class.
    out.push({ role: m.role, content: toOpenAiContent(m, images) });
  }
  return out;
}

function toOpenAiContent(message: Message, images: boolean): unknown {
  if (typeof message.content === "string") return message.content;
  const parts = message.content;
  const hasImage = parts.some((p) => p.type === "image");
  if (!hasImage || !images || message.role !== "user") {
    return parts.filter((p) => p.type === "text").map((p) => (p as { text: string }).text).join("\n");
  }
  return parts.map((p) =>
    p.type === "text"
      ? { type: "text", text: p.text }
      : { type: "image_url", image_url: { url: `data:${p.mimeType};base64,${p.data}` } },
  );
}
