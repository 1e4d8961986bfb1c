// Scripted OpenAI-compatible server (the shape Ollama, LM Studio, llama.cpp's
// server and OpenAI itself speak) on 127.0.0.1, port 0.
//
//   const srv = await startOpenAiServer({ respond: (body, i) => ({ text: "hi" }) });
//   srv.url        // "http://127.0.0.1:PORT/v1"  (a provider's baseUrl)
//   srv.requests   // every request: {method, path, query, headers, body, raw, index?}
//   await srv.close();
//
// Routes: GET /v1/models; POST /v1/chat/completions (stream true → SSE chunks
// ending in `data: [DONE]`, stream false → one chat.completion JSON).
//
// opts:
//   respond(body, index) → description (may be async); index counts chat requests from 0
//   script: [description, ...]   used by index when `respond` is absent
//   models: ["scripted-model"]   ids listed by GET /v1/models
//   modelsStatus + modelsErrorBody   GET /v1/models answers that status (≥ 400) with that JSON instead
//   apiKey: "k"                  require `Authorization: Bearer k` (else 401)
// description (all optional; default: text "echo: <last user message>"):
//   text, reasoning (→ delta.reasoning_content), toolCalls: [{name, arguments: {...}, id?}],
//   status + errorBody (HTTP error instead of an answer), breakStream: true (destroy
//   the socket after the first content chunks), delayMs (before answering),
//   chunkDelayMs (between SSE chunks), chunkSize (characters per content delta, 4),
//   finishReason (override), usage (object; sent when stream_options.include_usage),
//   hang: true (never answer, not even the head), stallAfter: n (send n content deltas, then
//   nothing more until the client hangs up),
//   rawBody + contentType (200, or `status` when < 400, with that body instead of an answer: an HTML
//   page, NDJSON, broken SSE), rawSocket (bytes written straight onto the socket, which then closes:
//   a crafted response, e.g. a chunk cut short).
import { startServer, sleep, split, sendJson } from "./http-util.mjs";

/** Text of the last user message (string content or text parts). */
export function lastUserMessage(body) {
  const msgs = body?.messages || [];
  for (let i = msgs.length - 1; i >= 0; i--) {
    if (msgs[i].role !== "user") continue;
    const c = msgs[i].content;
    if (typeof c === "string") return c;
    return (c || []).filter((p) => p.type === "text").map((p) => p.text).join("\n");
  }
  return "";
}

/** Lets what was written reach the client, then drops the connection (no [DONE]). */
async function breakSocket(res) {
  await sleep(50);
  res.socket.destroy();
}

/**
 * Answers one chat request (`body`, the `index`-th) as described by `d` (see the description keys
 * above); the Ollama fake's /v1/chat/completions uses it too.
 */
export async function answerChat(res, body, d, index) {
  const created = Math.floor(Date.now() / 1000);
  if (d.delayMs) await sleep(d.delayMs);
  if (d.hang) return new Promise((r) => res.on("close", r)); // the head never comes
  if (d.rawSocket !== undefined) {
    // Bytes straight onto the socket (a whole crafted response, e.g. a chunk cut short), then gone.
    res.socket.write(d.rawSocket);
    return breakSocket(res);
  }
  if (d.rawBody !== undefined) {
    res.writeHead(d.status ?? 200, { "content-type": d.contentType ?? "text/html; charset=utf-8" });
    return res.end(d.rawBody);
  }
  if (d.status && d.status >= 400) {
    return sendJson(res, d.status, d.errorBody ?? { error: { message: "scripted error", type: "server_error", code: null } });
  }
  const id = `chatcmpl-scripted-${index}`;
  const model = body.model ?? "scripted-model";
  const toolCalls = (d.toolCalls || []).map((t, k) => ({ id: t.id ?? `call_scripted_${index}_${k}`, name: t.name, args: JSON.stringify(t.arguments ?? {}) }));
  const finish = d.finishReason ?? (toolCalls.length ? "tool_calls" : "stop");
  const usage = d.usage ?? { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

  if (!body.stream) {
    const message = { role: "assistant", content: d.text ?? (toolCalls.length ? null : "") };
    if (d.reasoning) message.reasoning_content = d.reasoning;
    if (toolCalls.length) message.tool_calls = toolCalls.map((t) => ({ id: t.id, type: "function", function: { name: t.name, arguments: t.args } }));
    return sendJson(res, 200, { id, object: "chat.completion", created, model, choices: [{ index: 0, message, logprobs: null, finish_reason: finish }], usage });
  }

  // Streaming: one `data:` line per chat.completion.chunk, then [DONE].
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  const send = async (delta, finish_reason = null, extra = {}) => {
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, system_fingerprint: "fp_scripted", choices: [{ index: 0, delta, logprobs: null, finish_reason }], ...extra })}\n\n`);
    if (d.chunkDelayMs) await sleep(d.chunkDelayMs);
  };
  await send({ role: "assistant", content: "" });
  for (const r of d.reasoning ? split(d.reasoning, d.chunkSize ?? 4) : []) await send({ reasoning_content: r });
  const textPieces = d.text ? split(d.text, d.chunkSize ?? 4) : [];
  for (const [i, t] of textPieces.entries()) {
    await send({ content: t });
    if (d.breakStream && i === Math.min(1, textPieces.length - 1)) return breakSocket(res);
    if (d.stallAfter !== undefined && i + 1 >= d.stallAfter) return new Promise((r) => res.on("close", r));
  }
  if (d.breakStream && !textPieces.length) return breakSocket(res);
  for (const [k, t] of toolCalls.entries()) {
    // As OpenAI does: first delta names the call, the next ones carry argument fragments.
    await send({ tool_calls: [{ index: k, id: t.id, type: "function", function: { name: t.name, arguments: "" } }] });
    for (const frag of split(t.args, 7)) await send({ tool_calls: [{ index: k, function: { arguments: frag } }] });
  }
  await send({}, finish);
  if (body.stream_options?.include_usage) {
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage })}\n\n`);
  }
  res.end("data: [DONE]\n\n");
}

export async function startOpenAiServer(opts = {}) {
  let chatIndex = 0;
  const created = Math.floor(Date.now() / 1000);
  const srv = await startServer(async (req, res, entry) => {
    if (opts.apiKey && req.headers.authorization !== `Bearer ${opts.apiKey}`) {
      return sendJson(res, 401, { error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } });
    }
    if (req.method === "GET" && entry.path === "/v1/models") {
      if (opts.modelsStatus) return sendJson(res, opts.modelsStatus, opts.modelsErrorBody ?? { error: { message: "scripted models error" } });
      return sendJson(res, 200, { object: "list", data: (opts.models ?? ["scripted-model"]).map((id) => ({ id, object: "model", created, owned_by: "scripted" })) });
    }
    if (!(req.method === "POST" && entry.path === "/v1/chat/completions")) {
      return sendJson(res, 404, { error: { message: `Unknown route ${req.method} ${entry.path}`, type: "invalid_request_error" } });
    }
    const body = entry.body;
    if (!body) return sendJson(res, 400, { error: { message: "body is not JSON", type: "invalid_request_error" } });
    const index = (entry.index = chatIndex++);
    const d = (opts.respond ? await opts.respond(body, index) : opts.script?.[index]) ?? { text: `echo: ${lastUserMessage(body)}` };
    return answerChat(res, body, d, index);
  });

  return { ...srv, url: `${srv.url}/v1` };
}
