// Shared helpers for the scripted HTTP model servers (openai-server.mjs,
// anthropic-server.mjs, gemini-server.mjs): loopback listen on port 0, body
// reading, request recording, and a close() that also drops open sockets.
import http from "node:http";

/** Reads the whole request body; parses JSON when it looks like JSON. */
export async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const raw = Buffer.concat(chunks).toString("utf8");
  if (!raw) return { raw, json: undefined };
  try { return { raw, json: JSON.parse(raw) }; } catch { return { raw, json: undefined }; }
}

/**
 * Starts an HTTP server on 127.0.0.1:0 (or `host`, e.g. another 127.x address). `handler(req, res, entry)` gets the
 * recorded entry `{method, path, query, headers, body, raw}` which is also
 * pushed to the returned `requests` array before the handler runs.
 */
export async function startServer(handler, { urlSuffix = "", log, host = "127.0.0.1" } = {}) {
  const requests = [];
  const sockets = new Set();
  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url, "http://x");
    const { raw, json } = await readBody(req);
    const entry = {
      method: req.method, path: u.pathname, query: Object.fromEntries(u.searchParams),
      headers: req.headers, body: json, raw,
    };
    requests.push(entry);
    if (log) log(`${req.method} ${req.url}`);
    try { await handler(req, res, entry, requests.length - 1); }
    catch (e) {
      if (!res.headersSent) { res.writeHead(500, { "content-type": "application/json" }); }
      res.end(JSON.stringify({ error: { message: String(e?.stack || e) } }));
    }
  });
  server.on("connection", (s) => { sockets.add(s); s.on("close", () => sockets.delete(s)); });
  await new Promise((r) => server.listen(0, host, r));
  const { port } = server.address();
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}${urlSuffix}`,
    port,
    requests,
    server,
    close: () => new Promise((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Splits text into pieces of `size` characters (at least one piece). */
export function split(text, size = 4) {
  const out = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [""];
}

/** Sends JSON with a status. */
export function sendJson(res, status, obj) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(obj));
}

/**
 * Builds a minimal value that satisfies a JSON schema (used to answer the
 * agents' structured side calls: Claude's title request, Gemini's router).
 * `overrides` maps property names to values to use instead.
 */
export function fillSchema(schema, overrides = {}, name) {
  if (name !== undefined && name in overrides) return overrides[name];
  if (!schema || typeof schema !== "object") return null;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const t = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const ty = typeof t === "string" ? t.toLowerCase() : t;
  if (ty === "object" || (!ty && schema.properties)) {
    const o = {};
    for (const [k, v] of Object.entries(schema.properties || {})) o[k] = fillSchema(v, overrides, k);
    return o;
  }
  if (ty === "array") return [];
  if (ty === "integer" || ty === "number") return schema.minimum ?? 1;
  if (ty === "boolean") return true;
  if (ty === "string") return name === "title" ? "Scripted title" : "ok";
  if (schema.anyOf) return fillSchema(schema.anyOf[0], overrides, name);
  if (schema.oneOf) return fillSchema(schema.oneOf[0], overrides, name);
  return null;
}
