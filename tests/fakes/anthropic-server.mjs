// Scripted Anthropic Messages API on loopback, for running the REAL Claude
// Code ACP adapter (@agentclientprotocol/claude-agent-acp) offline.
//
// Claude Code calls only `POST /v1/messages?beta=true` (always streaming) in
// normal use. Besides the turn itself it makes side calls that must be
// answered sensibly or the session misbehaves:
//   - session title: body.output_config.format.type === "json_schema"
//     → answer text that is JSON matching that schema;
//   - prompt suggestion after a turn: last user text contains "[SUGGESTION MODE"
//     → answer empty text;
//   - anything forcing a specific tool (tool_choice {type:"tool"}), e.g. the
//     auto-mode permission classifier → answer a tool_use for it with input
//     built from its schema (overridable with opts.forcedTool).
// Everything else is "the turn" and is answered by opts.respond / opts.reply.
// Unknown endpoints get a 404 JSON error and are recorded (see `requests`).
//
//   const api = await startAnthropicServer({ reply: "Hello from Claude" });
//   env.ANTHROPIC_BASE_URL = api.url;        // no /v1 suffix: Claude adds it
//   ... api.requests, await api.close();
//
// opts.respond(body, index) may return
//   { text?, thinking?, toolUses?: [{name, input, id?}], stopReason?,
//     status?, errorBody?, delayMs?, chunkSize? }
//
// opts.toolCall = { name, input?, reply?(resultText, body) } scripts a turn with one tool call:
// a turn request whose last user message carries no tool_result is answered with a tool_use of `name`
// (the name as the agent lists it in body.tools, e.g. "mcp__webmcp__lookup"); one that carries a
// tool_result is answered with text: reply(resultText) or `Tool said: <resultText>`. When the agent does
// not offer `name`, the answer is the text `tool <name> not offered; tools: <names>` (the test sees why).
// Each turn entry gets `offeredTools` (names) and, when present, `toolResults` (see toolResults()).
import { startServer, sleep, split, sendJson, fillSchema } from "./http-util.mjs";

/** Text of the last user message (string content or text blocks). */
export function lastUserText(body) {
  const msgs = body?.messages || [];
  for (let i = msgs.length - 1; i >= 0; i--) {
    if (msgs[i].role !== "user") continue;
    const c = msgs[i].content;
    if (typeof c === "string") return c;
    return (c || []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
  }
  return "";
}

/** tool_result blocks of the last user message: [{toolUseId, text, isError}] (text blocks joined). */
export function toolResults(body) {
  const msgs = body?.messages || [];
  const last = msgs[msgs.length - 1];
  if (!last || last.role !== "user" || typeof last.content === "string") return [];
  return (last.content || []).filter((b) => b.type === "tool_result").map((b) => ({
    toolUseId: b.tool_use_id,
    isError: !!b.is_error,
    text: typeof b.content === "string" ? b.content : (b.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n"),
  }));
}

/** The scripted answer for opts.toolCall (see the header). */
function toolCallTurn(tc, body, entry) {
  const offered = (body.tools || []).map((t) => t.name);
  entry.offeredTools = offered;
  const results = toolResults(body);
  if (results.length) {
    entry.toolResults = results;
    const text = results.map((r) => r.text).join("\n");
    return { text: tc.reply ? tc.reply(text, body) : `Tool said: ${text}` };
  }
  if (!offered.includes(tc.name)) return { text: `tool ${tc.name} not offered; tools: ${offered.join(", ")}` };
  return { toolUses: [{ name: tc.name, input: tc.input ?? {} }] };
}

/** Classifies a request: "title" | "suggestion" | "forced_tool" | "turn". */
export function classifyAnthropic(body) {
  if (body?.output_config?.format?.type === "json_schema") return "title";
  if (lastUserText(body).includes("[SUGGESTION MODE")) return "suggestion";
  if (body?.tool_choice?.type === "tool") return "forced_tool";
  return "turn";
}

export async function startAnthropicServer(opts = {}) {
  const reply = opts.reply ?? "Hello from the scripted Claude API.";
  let turn = 0;
  return startServer(async (req, res, entry) => {
    const body = entry.body;
    if (req.method === "POST" && entry.path === "/v1/messages/count_tokens") {
      return sendJson(res, 200, { input_tokens: 100 });
    }
    if (!(req.method === "POST" && entry.path === "/v1/messages")) {
      return sendJson(res, 404, { type: "error", error: { type: "not_found_error", message: `no ${entry.path}` } });
    }
    const kind = classifyAnthropic(body);
    entry.kind = kind;
    let d;
    if (kind === "title") {
      d = { text: JSON.stringify(fillSchema(body.output_config.format.schema, opts.titleFields)) };
    } else if (kind === "suggestion") {
      d = { text: "" };
    } else if (kind === "forced_tool") {
      const name = body.tool_choice.name;
      const tool = (body.tools || []).find((t) => t.name === name);
      d = { toolUses: [{ name, input: opts.forcedTool?.(body) ?? fillSchema(tool?.input_schema) }] };
    } else {
      d = opts.toolCall ? toolCallTurn(opts.toolCall, body, entry) : opts.respond ? await opts.respond(body, turn) : { text: reply };
      turn++;
    }
    d = d ?? { text: reply };
    if (d.delayMs) await sleep(d.delayMs);
    if (d.status && d.status >= 400) {
      return sendJson(res, d.status, d.errorBody ?? { type: "error", error: { type: "api_error", message: "scripted error" } });
    }
    const model = body.model || "claude-scripted";
    const blocks = [];
    if (d.thinking) blocks.push({ type: "thinking", thinking: d.thinking });
    if (d.text !== undefined && (d.text !== "" || !d.toolUses)) blocks.push({ type: "text", text: d.text });
    (d.toolUses || []).forEach((t, i) => blocks.push({ type: "tool_use", id: t.id ?? `toolu_scripted_${Date.now()}_${i}`, name: t.name, input: t.input ?? {} }));
    const stopReason = d.stopReason ?? (d.toolUses?.length ? "tool_use" : "end_turn");
    const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    const id = `msg_scripted_${Date.now()}`;

    if (!body.stream) {
      return sendJson(res, 200, { id, type: "message", role: "assistant", model, content: blocks.map((b) => b.type === "thinking" ? { ...b, signature: "sig" } : b), stop_reason: stopReason, stop_sequence: null, usage });
    }
    // Streaming: the documented SSE event sequence.
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "request-id": id });
    const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    ev("message_start", { message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
    ev("ping", {});
    blocks.forEach((b, index) => {
      if (b.type === "text") {
        ev("content_block_start", { index, content_block: { type: "text", text: "" } });
        for (const t of b.text ? split(b.text, d.chunkSize ?? 8) : []) ev("content_block_delta", { index, delta: { type: "text_delta", text: t } });
      } else if (b.type === "thinking") {
        ev("content_block_start", { index, content_block: { type: "thinking", thinking: "", signature: "" } });
        for (const t of split(b.thinking, d.chunkSize ?? 8)) ev("content_block_delta", { index, delta: { type: "thinking_delta", thinking: t } });
        ev("content_block_delta", { index, delta: { type: "signature_delta", signature: "c2NyaXB0ZWQ=" } });
      } else {
        ev("content_block_start", { index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } });
        for (const t of split(JSON.stringify(b.input), 16)) ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: t } });
      }
      ev("content_block_stop", { index });
    });
    ev("message_delta", { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 5 } });
    ev("message_stop", {});
    res.end();
  }, { log: opts.log });
}
