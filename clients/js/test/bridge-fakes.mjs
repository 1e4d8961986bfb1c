// Shared by the bridge's unit tests: a scripted fetch, and a bridge() attached to a recording
// context. The bridge comes from build-bridge.mjs's bundle.
export const URL0 = 'http://127.0.0.1:19570';
export const KEY = `leuria:token:${URL0}`;

/** A fetch that answers with `handler(req, index)` → {status, json} | 'unreadable' | Promise of one.
 *  req: {url, method, path, headers, body, signal}. */
export function scriptedFetch(handler) {
  const requests = [];
  const fetch = async (url, init = {}) => {
    const req = { url, method: init.method || 'GET', path: new URL(url).pathname, headers: init.headers || {}, body: init.body ? JSON.parse(init.body) : undefined, signal: init.signal };
    requests.push(req);
    const answer = await handler(req, requests.length - 1);
    if (answer === 'unreadable') throw new TypeError('Failed to fetch');
    return new Response(answer.json === undefined ? '' : JSON.stringify(answer.json), { status: answer.status ?? 200, headers: { 'Content-Type': 'application/json' } });
  };
  return { fetch, requests };
}

/** bridge(options) from the bundle B, attached to a context that records updates and redetects. */
export function attachedBridge(B, options) {
  const p = B.bridge({ url: URL0, app: 'Mug shop', ...options });
  const updates = [];
  let redetects = 0;
  p.attach({ update: (r) => updates.push(r), redetect: () => redetects++ });
  return { p, updates, redetects: () => redetects };
}
