// Scripted Ollama server (its native /api routes plus the OpenAI-compatible /v1 ones) on
// 127.0.0.1, port 0, for the embedding tests.
//
//   const srv = await startOllamaServer({ models: ["nomic-embed-text:latest", ...], dims: 8 });
//   srv.url        // "http://127.0.0.1:PORT/v1"  (a provider's baseUrl, as providers.json holds it)
//   srv.root       // "http://127.0.0.1:PORT"     (where /api/* lives)
//   srv.requests   // every request: {method, path, query, headers, body, raw}
//   srv.embedCalls()   // the POST /api/embed (and /v1/embeddings) entries
//   srv.embedMode = "error500"; srv.listMode = "close"; srv.setModels([...]);
//   await srv.close();
//
// Routes (the real Ollama formats, as of 0.12):
//   GET  /                 "Ollama is running"
//   GET  /api/version      {version:"0.12.6"}
//   GET  /api/tags         {models:[{name, model, modified_at, size, digest, details:{parent_model, format,
//                           family, families, parameter_size, quantization_level}}]}
//   POST /api/show         {model} (legacy {name}) → {license, modelfile, parameters, template, details,
//                           model_info, capabilities, modified_at}; unknown → 404 {"error":"model 'x' not found"}
//   POST /api/embed        {model, input: string|string[], truncate?, keep_alive?} → {model, embeddings,
//                           total_duration, load_duration, prompt_eval_count}; unknown model → 404
//                           {"error":"model \"x\" not found, try pulling it first"}; a model that doesn't
//                           embed → 400 {"error":"\"x\" does not support embeddings"}
//   GET  /v1/models        OpenAI-style list (owned_by "library")
//   POST /v1/embeddings    OpenAI-style embeddings (Ollama's compatibility layer)
//   POST /v1/chat/completions  OpenAI-style chat (what the engine's model door speaks to Ollama), answered
//                          by opts.chat(body, index) → a description as openai-server.mjs takes it
//                          (default: text "echo: <last user message>")
//   anything else          404 text/plain "404 page not found" (Ollama's router)
//
// opts:
//   models: [name | {name, family?, families?, capabilities?, noCapabilities?, embeds?, dims?}]
//           default DEFAULT_OLLAMA_MODELS. A bare name "x" means {name:"x"}. `family` defaults to
//           "nomic-bert" for names containing "embed", else "llama"; `capabilities` defaults to
//           ["embedding"] for names containing "embed", else ["completion"]; `noCapabilities: true`
//           leaves the field out of /api/show (an Ollama older than 0.6.4); `embeds` (default: the
//           capabilities include "embedding", or without capabilities a bert family or an "embed"
//           name) says whether /api/embed answers for it.
//   dims: 8            vector length (per model: `dims`)
//   embed: "ok"        initial srv.embedMode; list: "ok" initial srv.listMode (GET /api/tags and /v1/models)
//   host: "127.0.0.1"  listen address (any 127.x address works on Linux)
// Modes (settable at any time): "ok" | "error500" (500 {"error":"…"}) | "garbage" (200, not JSON) |
//   "wrongCount" (embed only: one vector fewer) | "hang" (never answers) | "close" (drops the connection).
// Vectors are fakeVector(<the model's listed name>, <input text>, dims), so a test can recompute them.
import crypto from "node:crypto";
import { startServer, sendJson } from "./http-util.mjs";
import { answerChat, lastUserMessage } from "./openai-server.mjs";

export const DEFAULT_OLLAMA_MODELS = [
  { name: "llama3.2:latest", family: "llama", capabilities: ["completion", "tools"] },
  { name: "nomic-embed-text:latest", family: "nomic-bert", capabilities: ["embedding"] },
  { name: "qwen2.5-coder:7b", family: "qwen2", capabilities: ["completion", "tools", "insert"] },
];

export const MODES = ["ok", "error500", "garbage", "wrongCount", "hang", "close"];

/**
 * The deterministic vector the fakes return for `text` embedded by `model`: `dims` numbers in [-1, 1]
 * with 4 decimals, from sha256(model + "\n" + text [+ "\n" + block]).
 */
export function fakeVector(model, text, dims = 8) {
  const out = [];
  for (let block = 0; out.length < dims; block++) {
    const h = crypto.createHash("sha256").update(`${model}\n${text}${block ? `\n${block}` : ""}`).digest();
    for (let i = 0; i + 1 < h.length && out.length < dims; i += 2) {
      out.push(Math.round((h.readUInt16BE(i) / 65535) * 2e4 - 1e4) / 1e4 || 0); // never -0
    }
  }
  return out;
}

/** Waits until the client gives up (for "hang"). */
export function hang(res) {
  return new Promise((r) => res.on("close", r));
}

/**
 * Answers a request in a failure mode; returns false for "ok" / "wrongCount" (the caller answers).
 * `errorBody` is the service's own error shape.
 */
export async function misbehave(res, mode, errorBody) {
  switch (mode) {
    case "error500": sendJson(res, 500, errorBody); return true;
    case "garbage":
      res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
      res.end("this is not JSON {{{ <html>");
      return true;
    case "hang": await hang(res); return true;
    case "close": res.socket.destroy(); return true;
    default: return false;
  }
}

/**
 * The controls both embedding fakes (Ollama, LM Studio) add to their server: url (the OpenAI-style
 * base) and root, the embedMode / listMode knobs over `state`, the listing (`models` read through
 * getModels, replaced with setModels), embedCalls (the POSTs to `embedPaths`) and count.
 */
export function withEmbedControls(srv, state, { getModels, setModels, embedPaths }) {
  const controls = {
    url: `${srv.url}/v1`,
    root: srv.url,
    get embedMode() { return state.embedMode; },
    set embedMode(v) { state.embedMode = v; },
    get listMode() { return state.listMode; },
    set listMode(v) { state.listMode = v; },
    get models() { return getModels(); },
    setModels,
    embedCalls: () => srv.requests.filter((r) => r.method === "POST" && embedPaths.includes(r.path)),
    count: (method, path) => srv.requests.filter((r) => r.method === method && r.path === path).length,
  };
  return Object.defineProperties(srv, Object.getOwnPropertyDescriptors(controls));
}

/** Normalizes a model entry of opts.models. */
function ollamaModel(m, dims) {
  const e = typeof m === "string" ? { name: m } : { ...m };
  if (!e.name.includes(":")) e.name += ":latest";
  const embedName = /embed/i.test(e.name);
  e.family ??= embedName ? "nomic-bert" : "llama";
  e.families ??= [e.family];
  e.capabilities ??= embedName ? ["embedding"] : ["completion"];
  e.dims ??= dims;
  e.embeds ??= e.noCapabilities
    ? [e.family, ...e.families].some((f) => /bert/i.test(f)) || embedName
    : e.capabilities.includes("embedding");
  return e;
}

const digest = (name) => crypto.createHash("sha256").update(name).digest("hex");
const MODIFIED = "2026-10-01T12:00:00.000000000Z";

function details(m) {
  const embedding = m.capabilities.includes("embedding") || /bert/.test(m.family);
  return {
    parent_model: "", format: "gguf", family: m.family, families: m.families,
    parameter_size: embedding ? "137M" : "3.2B", quantization_level: embedding ? "F16" : "Q4_K_M",
  };
}

export async function startOllamaServer(opts = {}) {
  const dims = opts.dims ?? 8;
  let models = (opts.models ?? DEFAULT_OLLAMA_MODELS).map((m) => ollamaModel(m, dims));
  const created = Math.floor(Date.now() / 1000);
  const find = (name) => {
    if (typeof name !== "string" || !name) return undefined;
    const full = name.includes(":") ? name : `${name}:latest`;
    return models.find((m) => m.name === full);
  };
  const state = { embedMode: opts.embed ?? "ok", listMode: opts.list ?? "ok" };
  let chatIndex = 0;

  const srv = await startServer(async (req, res, entry) => {
    const route = `${req.method} ${entry.path}`;
    if (route === "GET /" || route === "HEAD /") {
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
      return res.end("Ollama is running");
    }
    if (route === "GET /api/version") return sendJson(res, 200, { version: "0.12.6" });

    if (route === "GET /api/tags" || route === "GET /v1/models") {
      if (await misbehave(res, state.listMode, { error: "scripted listing failure" })) return;
      if (route === "GET /v1/models") {
        return sendJson(res, 200, { object: "list", data: models.map((m) => ({ id: m.name, object: "model", created, owned_by: "library" })) });
      }
      return sendJson(res, 200, {
        models: models.map((m) => ({
          name: m.name, model: m.name, modified_at: MODIFIED, size: m.embeds ? 274302450 : 2019393189,
          digest: digest(m.name), details: details(m),
        })),
      });
    }

    if (route === "POST /api/show") {
      const name = entry.body?.model ?? entry.body?.name;
      const m = find(name);
      if (!m) return sendJson(res, 404, { error: `model '${name ?? ""}' not found` });
      const arch = m.family;
      const show = {
        license: "",
        modelfile: `# Modelfile generated by "ollama show"\nFROM /root/.ollama/models/blobs/sha256-${digest(m.name)}\n`,
        parameters: m.embeds ? "num_ctx 8192" : 'stop "<|eot_id|>"',
        template: m.embeds ? "{{ .Prompt }}" : "{{ if .System }}{{ .System }}{{ end }}{{ .Prompt }}",
        details: details(m),
        model_info: {
          "general.architecture": arch, "general.file_type": 1, "general.parameter_count": m.embeds ? 136727040 : 3212749888,
          "general.quantization_version": 2, [`${arch}.context_length`]: 2048, [`${arch}.embedding_length`]: m.dims,
        },
        modified_at: MODIFIED,
      };
      if (!m.noCapabilities) show.capabilities = m.capabilities;
      return sendJson(res, 200, show);
    }

    if (route === "POST /api/embed" || route === "POST /v1/embeddings") {
      const openai = route === "POST /v1/embeddings";
      const err = (status, message) => sendJson(res, status, openai ? { error: { message, type: "invalid_request_error", param: null, code: null } } : { error: message });
      if (await misbehave(res, state.embedMode, openai ? { error: { message: "scripted embed failure", type: "api_error" } } : { error: "scripted embed failure" })) return;
      const body = entry.body;
      if (!body || typeof body !== "object") return err(400, "invalid character 'x' looking for beginning of value");
      if (!body.model) return err(400, "model is required");
      const m = find(body.model);
      if (!m) return err(404, `model "${body.model}" not found, try pulling it first`);
      if (!m.embeds) return err(400, `"${body.model}" does not support embeddings`);
      const input = typeof body.input === "string" ? [body.input] : body.input;
      if (!Array.isArray(input) || input.some((t) => typeof t !== "string")) return err(400, "invalid input type");
      let vectors = input.map((t) => fakeVector(m.name, t, m.dims));
      if (state.embedMode === "wrongCount") vectors = vectors.slice(0, -1);
      const tokens = input.reduce((n, t) => n + Math.max(1, Math.ceil(t.length / 4)), 0);
      if (openai) {
        return sendJson(res, 200, {
          object: "list", data: vectors.map((embedding, index) => ({ object: "embedding", embedding, index })),
          model: body.model, usage: { prompt_tokens: tokens, total_tokens: tokens },
        });
      }
      return sendJson(res, 200, { model: body.model, embeddings: vectors, total_duration: 14143917, load_duration: 1019500, prompt_eval_count: tokens });
    }

    if (route === "POST /v1/chat/completions" && entry.body) {
      const index = chatIndex++;
      return answerChat(res, entry.body, (await opts.chat?.(entry.body, index)) ?? { text: `echo: ${lastUserMessage(entry.body)}` }, index);
    }

    res.writeHead(404, { "content-type": "text/plain" });
    res.end("404 page not found");
  }, { host: opts.host });

  return withEmbedControls(srv, state, {
    getModels: () => models,
    setModels: (list) => { models = list.map((m) => ollamaModel(m, dims)); },
    embedPaths: ["/api/embed", "/v1/embeddings"],
  });
}
