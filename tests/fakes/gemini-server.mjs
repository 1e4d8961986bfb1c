// Scripted Gemini API (generativelanguage v1beta) on loopback, for running the
// REAL Gemini CLI (`gemini --acp`) offline with GOOGLE_GEMINI_BASE_URL.
//
// Gemini CLI 0.61 makes, per turn:
//   - a routing call  POST /v1beta/models/<m>:generateContent  whose
//     generationConfig.responseJsonSchema asks for {complexity_reasoning,
//     complexity_score}: answered with JSON text built from that schema;
//   - the turn itself POST /v1beta/models/<m>:streamGenerateContent?alt=sse:
//     answered with `data: {candidates:[{content:{role:"model",parts}}]}` frames,
//     the last with finishReason "STOP" and usageMetadata.
// Any other generateContent with a JSON schema gets schema-shaped JSON; one
// without gets the reply text. :countTokens answers a count. Unknown
// endpoints get 404 and are recorded in `requests`.
//
//   const api = await startGeminiServer({ reply: "Hello from Gemini" });
//   env.GOOGLE_GEMINI_BASE_URL = api.url;    // no /v1beta suffix
//
// opts.respond(body, index, model) may return
//   { text?, thought?, functionCalls?: [{name, args}], status?, errorBody?,
//     delayMs?, chunkSize? }
//
// opts.toolCall = { name, args?, reply?(resultText, body) } scripts a turn with one tool call: a turn
// whose last content carries no functionResponse is answered with a functionCall of `name` (as Gemini
// lists it in body.tools[].functionDeclarations, e.g. "mcp_webmcp_lookup"); one that carries a
// functionResponse is answered with text: reply(resultText) or `Tool said: <resultText>`. When the
// agent does not declare `name`, the answer is `tool <name> not offered; tools: <names>`.
// Each turn entry gets `offeredTools` and, when present, `toolResults` (see functionResponses()).
import { startServer, sleep, split, sendJson, fillSchema } from "./http-util.mjs";

/** functionResponse parts of the last content: [{name, response, text}]; text is the response's output/error as text. */
export function functionResponses(body) {
  const last = (body?.contents || []).at(-1);
  if (!last) return [];
  return (last.parts || []).filter((p) => p.functionResponse).map((p) => {
    const { name, response } = p.functionResponse;
    const out = response?.output ?? response?.error ?? response?.content ?? response;
    return { name, response, text: typeof out === "string" ? out : JSON.stringify(out) };
  });
}

/** Tool names the request declares. */
export function declaredTools(body) {
  return (body?.tools || []).flatMap((t) => (t.functionDeclarations || []).map((f) => f.name));
}

function toolCallTurn(tc, body, entry) {
  const offered = declaredTools(body);
  entry.offeredTools = offered;
  const results = functionResponses(body);
  if (results.length) {
    entry.toolResults = results;
    const text = results.map((r) => r.text).join("\n");
    return { text: tc.reply ? tc.reply(text, body) : `Tool said: ${text}` };
  }
  if (!offered.includes(tc.name)) return { text: `tool ${tc.name} not offered; tools: ${offered.join(", ")}` };
  return { functionCalls: [{ name: tc.name, args: tc.args ?? {} }] };
}

const usage = { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 };

export async function startGeminiServer(opts = {}) {
  const reply = opts.reply ?? "Hello from the scripted Gemini API.";
  let turn = 0;
  return startServer(async (req, res, entry) => {
    // Paths look like /v1beta/models/gemini-2.5-pro:streamGenerateContent
    const m = entry.path.match(/^\/v1beta\/models\/([^:]+):(\w+)$/);
    if (req.method !== "POST" || !m) {
      return sendJson(res, 404, { error: { code: 404, message: `no ${entry.path}`, status: "NOT_FOUND" } });
    }
    const [, model, action] = m;
    const body = entry.body || {};
    entry.model = model;
    if (action === "countTokens") return sendJson(res, 200, { totalTokens: 10 });

    const schema = body.generationConfig?.responseJsonSchema ?? body.generationConfig?.responseSchema;
    let d;
    if (action === "generateContent" && schema) {
      // Side call (router, etc.): schema-shaped JSON. Router: low score = "flash".
      entry.kind = "structured";
      d = { text: JSON.stringify(fillSchema(schema, { complexity_score: 10, complexity_reasoning: "simple greeting", ...opts.schemaFields })) };
    } else {
      entry.kind = "turn";
      d = (opts.toolCall ? toolCallTurn(opts.toolCall, body, entry) : opts.respond ? await opts.respond(body, turn, model) : null) ?? { text: reply };
      turn++;
    }
    if (d.delayMs) await sleep(d.delayMs);
    if (d.status && d.status >= 400) {
      return sendJson(res, d.status, d.errorBody ?? { error: { code: d.status, message: "scripted error", status: "INTERNAL" } });
    }
    // Parts in the order the real API sends them: thought, text, function calls.
    const frames = [];
    if (d.thought) for (const t of split(d.thought, d.chunkSize ?? 16)) frames.push([{ text: t, thought: true }]);
    if (d.text) for (const t of split(d.text, d.chunkSize ?? 16)) frames.push([{ text: t }]);
    if (d.functionCalls?.length) frames.push(d.functionCalls.map((f) => ({ functionCall: { name: f.name, args: f.args ?? {} } })));
    if (!frames.length) frames.push([{ text: "" }]);
    const candidate = (parts, last) => ({
      candidates: [{ content: { role: "model", parts }, index: 0, ...(last ? { finishReason: "STOP" } : {}) }],
      ...(last ? { usageMetadata: usage } : {}),
      modelVersion: model,
      responseId: `scripted-${turn}`,
    });

    if (action === "generateContent") {
      // Non-streamed: one part per kind, as the real API answers.
      const parts = [
        ...(d.thought ? [{ text: d.thought, thought: true }] : []),
        ...(d.text || !d.functionCalls?.length ? [{ text: d.text ?? "" }] : []),
        ...(d.functionCalls || []).map((f) => ({ functionCall: { name: f.name, args: f.args ?? {} } })),
      ];
      return sendJson(res, 200, candidate(parts, true));
    }
    if (action !== "streamGenerateContent") {
      return sendJson(res, 404, { error: { code: 404, message: `no action ${action}`, status: "NOT_FOUND" } });
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    frames.forEach((parts, i) => res.write(`data: ${JSON.stringify(candidate(parts, i === frames.length - 1))}\r\n\r\n`));
    res.end();
  }, { log: opts.log });
}
