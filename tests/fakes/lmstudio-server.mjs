// Scripted LM Studio server (its REST API /api/v0 plus the OpenAI-compatible /v1) on 127.0.0.1,
// port 0, for the embedding tests.
//
//   const srv = await startLmStudioServer({ models: [...], dims: 8 });
//   srv.url        // "http://127.0.0.1:PORT/v1"  (a provider's baseUrl)
//   srv.root       // "http://127.0.0.1:PORT"
//   srv.requests   // every request: {method, path, query, headers, body, raw}
//   srv.embedCalls()   // the POST /v1/embeddings entries
//   srv.embedMode = "garbage"; srv.listMode = "error500"; srv.setModels([...]);
//   await srv.close();
//
// Routes (the real LM Studio 0.3 formats):
//   GET  /api/v0/models       {object:"list", data:[{id, object:"model", type:"llm"|"vlm"|"embeddings", publisher,
//                              arch, compatibility_type:"gguf", quantization, state:"loaded"|"not-loaded",
//                              max_context_length}]}
//   GET  /api/v0/models/:id   one of those, or 404 {"error":"Model \"x\" not found"}
//   GET  /v1/models           {object:"list", data:[{id, object:"model", owned_by:"organization_owner"}]}
//   POST /v1/embeddings       {model, input: string|string[]} → {object:"list", data:[{object:"embedding",
//                              embedding, index}], model, usage:{prompt_tokens, total_tokens}}; an unknown model →
//                              404, a model that isn't an embedding model → 400, both with an OpenAI-style
//                              {error:{message, type:"invalid_request_error", param:"model", code:"model_not_found"}}
//   anything else             200 {"error":"Unexpected endpoint or method. (GET /x)"}: LM Studio really answers
//                              unknown routes with 200 ("Returning 200 anyway" in its log)
//
// opts:
//   models: [id | {id, type?, publisher?, arch?, quantization?, state?, max_context_length?, dims?}]
//           default DEFAULT_LMSTUDIO_MODELS. `type` defaults to "embeddings" for ids containing "embed",
//           else "llm"; `state` to "not-loaded".
//   noV0: true | "404"   /api/v0/* answers 404 (an LM Studio without the REST API), so only /v1/models lists;
//         "200"          /api/v0/* answers like any unknown route: 200 {"error":"Unexpected endpoint or method. …"}
//   dims, embed, list, host: as in ollama-server.mjs (srv.embedMode / srv.listMode; listMode covers both listings)
// Vectors: fakeVector(<model id>, <input text>, dims), re-exported from here.
import { startServer, sendJson } from "./http-util.mjs";
import { fakeVector, misbehave, withEmbedControls } from "./ollama-server.mjs";

export { fakeVector } from "./ollama-server.mjs";

export const DEFAULT_LMSTUDIO_MODELS = [
  { id: "qwen2.5-7b-instruct", type: "llm", publisher: "lmstudio-community", arch: "qwen2", quantization: "Q4_K_M", state: "loaded", max_context_length: 32768 },
  { id: "text-embedding-nomic-embed-text-v1.5", type: "embeddings", publisher: "nomic-ai", arch: "nomic-bert", quantization: "Q4_K_M", state: "not-loaded", max_context_length: 2048 },
  { id: "qwen2-vl-2b-instruct", type: "vlm", publisher: "mlx-community", arch: "qwen2_vl", quantization: "4bit", state: "not-loaded", max_context_length: 32768 },
];

function lmsModel(m, dims) {
  const e = typeof m === "string" ? { id: m } : { ...m };
  e.type ??= /embed/i.test(e.id) ? "embeddings" : "llm";
  e.publisher ??= e.id.includes("/") ? e.id.split("/")[0] : "lmstudio-community";
  e.arch ??= e.type === "embeddings" ? "bert" : "llama";
  e.quantization ??= e.type === "embeddings" ? "F16" : "Q4_K_M";
  e.state ??= "not-loaded";
  e.max_context_length ??= e.type === "embeddings" ? 2048 : 8192;
  e.dims ??= dims;
  return e;
}

const v0Item = (m) => ({
  id: m.id, object: "model", type: m.type, publisher: m.publisher, arch: m.arch, compatibility_type: "gguf",
  quantization: m.quantization, state: m.state, max_context_length: m.max_context_length,
});

export async function startLmStudioServer(opts = {}) {
  const dims = opts.dims ?? 8;
  let models = (opts.models ?? DEFAULT_LMSTUDIO_MODELS).map((m) => lmsModel(m, dims));
  const state = { embedMode: opts.embed ?? "ok", listMode: opts.list ?? "ok" };
  const noV0 = opts.noV0 === true ? "404" : opts.noV0;
  const unexpected = (req, entry) => ({ error: `Unexpected endpoint or method. (${req.method} ${entry.path})` });
  const apiError = (message, code = "model_not_found") => ({ error: { message, type: "invalid_request_error", param: "model", code } });

  const srv = await startServer(async (req, res, entry) => {
    const route = `${req.method} ${entry.path}`;
    if (req.method === "GET" && entry.path.startsWith("/api/v0/")) {
      if (noV0 === "404") return sendJson(res, 404, unexpected(req, entry));
      if (noV0 === "200") return sendJson(res, 200, unexpected(req, entry));
    }
    if (route === "GET /api/v0/models" || route === "GET /v1/models") {
      if (await misbehave(res, state.listMode, { error: "scripted listing failure" })) return;
      if (route === "GET /v1/models") {
        return sendJson(res, 200, { object: "list", data: models.map((m) => ({ id: m.id, object: "model", owned_by: "organization_owner" })) });
      }
      return sendJson(res, 200, { object: "list", data: models.map(v0Item) });
    }
    if (req.method === "GET" && entry.path.startsWith("/api/v0/models/")) {
      const id = decodeURIComponent(entry.path.slice("/api/v0/models/".length));
      const m = models.find((x) => x.id === id);
      return m ? sendJson(res, 200, v0Item(m)) : sendJson(res, 404, { error: `Model "${id}" not found` });
    }
    if (route === "POST /v1/embeddings") {
      if (await misbehave(res, state.embedMode, { error: { message: "scripted embed failure", type: "server_error", param: null, code: null } })) return;
      const body = entry.body;
      if (!body || typeof body !== "object") return sendJson(res, 400, apiError("Unexpected token in JSON body", "invalid_json"));
      const m = models.find((x) => x.id === body.model);
      if (!m) return sendJson(res, 404, apiError(`Model "${body.model}" not found. Please specify a valid model.`));
      if (m.type !== "embeddings") return sendJson(res, 400, apiError(`Failed to load model "${body.model}". Error: Model is not embedding.`));
      const input = typeof body.input === "string" ? [body.input] : body.input;
      if (!Array.isArray(input) || input.some((t) => typeof t !== "string")) {
        return sendJson(res, 400, apiError("'input' field must be a string or an array of strings", "invalid_input"));
      }
      let data = input.map((t, index) => ({ object: "embedding", embedding: fakeVector(m.id, t, m.dims), index }));
      if (state.embedMode === "wrongCount") data = data.slice(0, -1);
      const tokens = input.reduce((n, t) => n + Math.max(1, Math.ceil(t.length / 4)), 0);
      return sendJson(res, 200, { object: "list", data, model: m.id, usage: { prompt_tokens: tokens, total_tokens: tokens } });
    }
    return sendJson(res, 200, unexpected(req, entry));
  }, { host: opts.host });

  return withEmbedControls(srv, state, {
    getModels: () => models,
    setModels: (list) => { models = list.map((m) => lmsModel(m, dims)); },
    embedPaths: ["/v1/embeddings"],
  });
}
