// POST /embed for any number of texts: the engine takes at most 256 per request, so longer lists go
// in batches of 256, one after the other (one local model does the work either way), and the
// vectors come back in order. Vectors of different models can't be compared, so a model that
// changes between batches fails the whole call.
import type { EmbedKind } from "../../types.js";
import type { Engine } from "./engine.js";
import { bridgeError, engineDetail, words } from "./words.js";

/** The protocol's limit of texts per request. */
export const EMBED_BATCH = 256;

export async function embedInBatches(
  engine: Engine,
  provider: string,
  texts: string[],
  options: { kind: EmbedKind; signal: AbortSignal },
  onNoEmbedder: () => void,
): Promise<{ model: string; vectors: number[][] }> {
  let model: string | undefined;
  const vectors: number[][] = [];
  let start = 0;
  do {
    const answer = await embedOnce(engine, provider, texts.slice(start, start + EMBED_BATCH), options, onNoEmbedder);
    if (model !== undefined && answer.model !== model) {
      throw bridgeError(provider, "model_changed", words.embedModelChanged, `texts from ${start} by ${answer.model}, earlier ones by ${model}`);
    }
    model = answer.model;
    for (const vector of answer.vectors) vectors.push(vector);
    start += EMBED_BATCH;
  } while (start < texts.length);
  return { model: model ?? "", vectors };
}

async function embedOnce(
  engine: Engine,
  provider: string,
  texts: string[],
  options: { kind: EmbedKind; signal: AbortSignal },
  onNoEmbedder: () => void,
): Promise<{ model: string; vectors: number[][] }> {
  const { status, json } = await engine.call("POST", "/embed", { body: { texts, kind: options.kind }, signal: options.signal });
  if (status === 200 && typeof json?.model === "string" && Array.isArray(json.vectors) && json.vectors.length === texts.length) {
    return { model: json.model, vectors: json.vectors };
  }
  if (status === 503 && json?.code === "no_embedder") {
    onNoEmbedder();
    throw bridgeError(provider, "no_embedder", words.noEmbedder, engineDetail(status, json));
  }
  const code = status === 502 ? "failed" : status === 200 ? "bad_answer" : `http_${status}`;
  throw bridgeError(provider, code, status === 200 ? words.unexpected : words.embedFailed, engineDetail(status, json));
}
