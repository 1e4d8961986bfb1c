// Self-checks for the embedding fakes (ollama-server.mjs, lmstudio-server.mjs), not part of the e2e run:
//   node --test tests/fakes/embed-servers.check.mjs
import { describe, it, after } from "node:test";
import assert from "node:assert/strict";
import { startOllamaServer, fakeVector } from "./ollama-server.mjs";
import { startLmStudioServer, fakeVector as lmsFakeVector } from "./lmstudio-server.mjs";

const servers = [];
const track = async (p) => { const s = await p; servers.push(s); return s; };
after(() => Promise.all(servers.map((s) => s.close())));

async function call(url, { method = "GET", body, timeoutMs = 2000 } = {}) {
  const res = await fetch(url, {
    method, signal: AbortSignal.timeout(timeoutMs),
    ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body), headers: { "content-type": "application/json" } } : {}),
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch {}
  return { status: res.status, text, json };
}

describe("fakeVector", () => {
  it("is deterministic, sized, in [-1, 1] with at most 4 decimals, and depends on model and text", () => {
    const a = fakeVector("m", "hello", 8);
    assert.deepEqual(a, fakeVector("m", "hello", 8));
    assert.equal(a.length, 8);
    for (const x of a) {
      assert.ok(x >= -1 && x <= 1, String(x));
      assert.equal(Math.round(x * 1e4) / 1e4, x);
    }
    assert.notDeepEqual(a, fakeVector("m", "hello!", 8));
    assert.notDeepEqual(a, fakeVector("m2", "hello", 8));
    assert.equal(fakeVector("m", "x", 100).length, 100);
    assert.deepEqual(fakeVector("m", "x", 100).slice(0, 8), fakeVector("m", "x", 8));
    assert.equal(lmsFakeVector, fakeVector);
  });
});

describe("ollama-server", () => {
  it("lists, shows and embeds in Ollama's formats", async () => {
    const srv = await track(startOllamaServer());
    assert.match(srv.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    assert.equal(srv.url, `${srv.root}/v1`);
    assert.deepEqual((await call(`${srv.root}/api/version`)).json, { version: "0.12.6" });
    const tags = (await call(`${srv.root}/api/tags`)).json;
    assert.deepEqual(tags.models.map((m) => m.name), ["llama3.2:latest", "nomic-embed-text:latest", "qwen2.5-coder:7b"]);
    const nomic = tags.models[1];
    assert.equal(nomic.model, nomic.name);
    assert.match(nomic.digest, /^[0-9a-f]{64}$/);
    assert.deepEqual(Object.keys(nomic.details).sort(), ["families", "family", "format", "parameter_size", "parent_model", "quantization_level"]);
    assert.equal(nomic.details.family, "nomic-bert");

    const show = await call(`${srv.root}/api/show`, { method: "POST", body: { model: "nomic-embed-text:latest" } });
    assert.equal(show.status, 200);
    assert.deepEqual(show.json.capabilities, ["embedding"]);
    assert.equal(show.json.model_info["general.architecture"], "nomic-bert");
    assert.equal(show.json.model_info["nomic-bert.embedding_length"], 8);
    assert.deepEqual((await call(`${srv.root}/api/show`, { method: "POST", body: { name: "llama3.2" } })).json.capabilities, ["completion", "tools"]);
    const missing = await call(`${srv.root}/api/show`, { method: "POST", body: { model: "nope" } });
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.json, { error: "model 'nope' not found" });

    const e = await call(`${srv.root}/api/embed`, { method: "POST", body: { model: "nomic-embed-text:latest", input: ["a", "b"] } });
    assert.equal(e.status, 200);
    assert.equal(e.json.model, "nomic-embed-text:latest");
    assert.deepEqual(e.json.embeddings, [fakeVector("nomic-embed-text:latest", "a", 8), fakeVector("nomic-embed-text:latest", "b", 8)]);
    for (const k of ["total_duration", "load_duration", "prompt_eval_count"]) assert.equal(typeof e.json[k], "number");
    const one = await call(`${srv.root}/api/embed`, { method: "POST", body: { model: "nomic-embed-text", input: "a" } });
    assert.deepEqual(one.json.embeddings, [fakeVector("nomic-embed-text:latest", "a", 8)], "a bare name means :latest; a string input is one text");
    assert.deepEqual((await call(`${srv.root}/api/embed`, { method: "POST", body: { model: "nope", input: ["a"] } })).json, { error: 'model "nope" not found, try pulling it first' });
    const llm = await call(`${srv.root}/api/embed`, { method: "POST", body: { model: "llama3.2:latest", input: ["a"] } });
    assert.equal(llm.status, 400);
    assert.deepEqual(llm.json, { error: '"llama3.2:latest" does not support embeddings' });
    assert.equal(srv.embedCalls().length, 4);
    assert.deepEqual(srv.embedCalls()[0].body.input, ["a", "b"]);

    const v1 = (await call(`${srv.url}/models`)).json;
    assert.equal(v1.object, "list");
    assert.deepEqual(v1.data.map((m) => m.id), ["llama3.2:latest", "nomic-embed-text:latest", "qwen2.5-coder:7b"]);
    const unknown = await call(`${srv.root}/api/nothing`);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.text, "404 page not found");
  });

  it("model options: dims, noCapabilities, inferred families, setModels", async () => {
    const srv = await track(startOllamaServer({
      dims: 4,
      models: [{ name: "old-bert", family: "bert", noCapabilities: true, dims: 16 }, "my-embedder", { name: "plain", noCapabilities: true }],
    }));
    const tags = (await call(`${srv.root}/api/tags`)).json;
    assert.deepEqual(tags.models.map((m) => m.name), ["old-bert:latest", "my-embedder:latest", "plain:latest"]);
    const show = (await call(`${srv.root}/api/show`, { method: "POST", body: { model: "old-bert:latest" } })).json;
    assert.equal("capabilities" in show, false);
    assert.equal((await call(`${srv.root}/api/embed`, { method: "POST", body: { model: "old-bert:latest", input: ["x"] } })).json.embeddings[0].length, 16);
    assert.deepEqual((await call(`${srv.root}/api/show`, { method: "POST", body: { model: "my-embedder:latest" } })).json.capabilities, ["embedding"]);
    assert.equal((await call(`${srv.root}/api/embed`, { method: "POST", body: { model: "my-embedder:latest", input: ["x"] } })).json.embeddings[0].length, 4);
    assert.equal((await call(`${srv.root}/api/embed`, { method: "POST", body: { model: "plain:latest", input: ["x"] } })).status, 400);
    srv.setModels(["only:1b"]);
    assert.deepEqual((await call(`${srv.root}/api/tags`)).json.models.map((m) => m.name), ["only:1b"]);
  });

  it("failure modes", async () => {
    const srv = await track(startOllamaServer());
    const embed = () => call(`${srv.root}/api/embed`, { method: "POST", body: { model: "nomic-embed-text:latest", input: ["a", "b"] }, timeoutMs: 500 });
    srv.embedMode = "error500";
    assert.equal(srv.embedMode, "error500");
    const e500 = await embed();
    assert.equal(e500.status, 500);
    assert.equal(typeof e500.json.error, "string");
    srv.embedMode = "garbage";
    const g = await embed();
    assert.equal(g.status, 200);
    assert.equal(g.json, undefined);
    srv.embedMode = "wrongCount";
    assert.equal((await embed()).json.embeddings.length, 1);
    srv.embedMode = "close";
    await assert.rejects(embed());
    srv.embedMode = "hang";
    await assert.rejects(embed(), /abort|timeout/i);
    srv.embedMode = "ok";
    assert.equal((await embed()).json.embeddings.length, 2);
    srv.listMode = "error500";
    assert.equal((await call(`${srv.root}/api/tags`)).status, 500);
    srv.listMode = "close";
    await assert.rejects(call(`${srv.root}/api/tags`));
  });

  it("listens on another loopback address", async () => {
    const srv = await track(startOllamaServer({ host: "127.0.0.2" }));
    assert.match(srv.url, /^http:\/\/127\.0\.0\.2:\d+\/v1$/);
    assert.equal((await call(`${srv.root}/api/version`)).status, 200);
  });
});

describe("lmstudio-server", () => {
  it("lists and embeds in LM Studio's formats", async () => {
    const srv = await track(startLmStudioServer());
    const v0 = (await call(`${srv.root}/api/v0/models`)).json;
    assert.equal(v0.object, "list");
    assert.deepEqual(v0.data.map((m) => [m.id, m.type, m.state]), [
      ["qwen2.5-7b-instruct", "llm", "loaded"],
      ["text-embedding-nomic-embed-text-v1.5", "embeddings", "not-loaded"],
      ["qwen2-vl-2b-instruct", "vlm", "not-loaded"],
    ]);
    assert.deepEqual(Object.keys(v0.data[1]).sort(), ["arch", "compatibility_type", "id", "max_context_length", "object", "publisher", "quantization", "state", "type"]);
    assert.equal((await call(`${srv.root}/api/v0/models/qwen2.5-7b-instruct`)).json.type, "llm");
    const v1 = (await call(`${srv.url}/models`)).json;
    assert.deepEqual(v1.data[1], { id: "text-embedding-nomic-embed-text-v1.5", object: "model", owned_by: "organization_owner" });

    const id = "text-embedding-nomic-embed-text-v1.5";
    const e = await call(`${srv.url}/embeddings`, { method: "POST", body: { model: id, input: ["a", "b"] } });
    assert.equal(e.status, 200);
    assert.equal(e.json.object, "list");
    assert.equal(e.json.model, id);
    assert.deepEqual(e.json.data, [
      { object: "embedding", embedding: fakeVector(id, "a", 8), index: 0 },
      { object: "embedding", embedding: fakeVector(id, "b", 8), index: 1 },
    ]);
    assert.equal(typeof e.json.usage.prompt_tokens, "number");
    assert.equal((await call(`${srv.url}/embeddings`, { method: "POST", body: { model: id, input: "a" } })).json.data.length, 1);
    const missing = await call(`${srv.url}/embeddings`, { method: "POST", body: { model: "nope", input: ["a"] } });
    assert.equal(missing.status, 404);
    assert.equal(missing.json.error.code, "model_not_found");
    assert.equal(typeof missing.json.error.message, "string");
    assert.equal((await call(`${srv.url}/embeddings`, { method: "POST", body: { model: "qwen2.5-7b-instruct", input: ["a"] } })).status, 400);
    assert.equal(srv.embedCalls().length, 4);
    const unknown = await call(`${srv.root}/nothing`);
    assert.equal(unknown.status, 200, "LM Studio answers unknown routes with 200");
    assert.deepEqual(unknown.json, { error: "Unexpected endpoint or method. (GET /nothing)" });
  });

  it("noV0, failure modes, setModels", async () => {
    const old = await track(startLmStudioServer({ noV0: true }));
    assert.equal((await call(`${old.root}/api/v0/models`)).status, 404);
    assert.equal((await call(`${old.url}/models`)).status, 200);
    const old200 = await track(startLmStudioServer({ noV0: "200" }));
    const r = await call(`${old200.root}/api/v0/models`);
    assert.equal(r.status, 200);
    assert.match(r.json.error, /Unexpected endpoint/);

    const srv = await track(startLmStudioServer({ dims: 3, models: ["my-embed-model", { id: "chat", type: "llm", state: "loaded" }] }));
    const v0 = (await call(`${srv.root}/api/v0/models`)).json.data;
    assert.deepEqual(v0.map((m) => [m.id, m.type, m.state]), [["my-embed-model", "embeddings", "not-loaded"], ["chat", "llm", "loaded"]]);
    const embed = () => call(`${srv.url}/embeddings`, { method: "POST", body: { model: "my-embed-model", input: ["a", "b"] }, timeoutMs: 500 });
    assert.equal((await embed()).json.data[0].embedding.length, 3);
    srv.embedMode = "wrongCount";
    assert.equal((await embed()).json.data.length, 1);
    srv.embedMode = "error500";
    assert.equal((await embed()).status, 500);
    srv.embedMode = "garbage";
    assert.equal((await embed()).json, undefined);
    srv.embedMode = "hang";
    await assert.rejects(embed());
    srv.embedMode = "close";
    await assert.rejects(embed());
    srv.listMode = "garbage";
    assert.equal((await call(`${srv.root}/api/v0/models`)).json, undefined);
    assert.equal((await call(`${srv.url}/models`)).json, undefined);
    srv.listMode = "ok";
    srv.setModels([{ id: "other-embed", state: "loaded" }]);
    assert.deepEqual((await call(`${srv.root}/api/v0/models`)).json.data.map((m) => [m.id, m.type, m.state]), [["other-embed", "embeddings", "loaded"]]);
  });
});
