// A scripted OpenAI-compatible model server for the token scenarios (2, 5, 7, 9): it streams chat
// completion chunks whose content carries the moment each was written, so a client can tell how long
// every token took to reach it through whatever relays it (the engine's tool loop, nginx, the Node
// relay, the C floor) or straight from here. Not measured: run it on the helper CPU.
// tests/fakes/openai-server.mjs cannot serve here: its text is fixed before the answer starts, and
// its pacing (a sleep between chunks) drifts and ignores backpressure.
//
//   node bench/fakes/openai-upstream.mjs [PORT]        prints "listening on <port>"
//
// GET  /v1/models            {data: [{id: "bench"}]}
// POST /v1/chat/completions  stream: true. The script is in the last user message, as words
//                            `key=value` (every relay then sends the same request):
//     count=N    content chunks (0: endless, until the client leaves)         default 1000
//     every=MS   one chunk every MS ms (0: a burst, as fast as writes drain)  default 0
//     pad=B      extra characters after each timestamp                        default 0
//     tag=T      name of the stream in /stats
//   Each content chunk's text is `T<µs>;` (+ pad dots): the monotonic clock in µs when it was written
//   (process.hrtime, CLOCK_MONOTONIC: comparable across processes of this machine). The answer is
//   then a finish chunk and `data: [DONE]`. Pacing follows a schedule (chunk i is due at start +
//   i*every): a late timer sends every chunk due, each as its own write and its own timestamp.
//   A burst honours backpressure: when res.write() says the socket is full it waits for 'drain', and
//   counts that as time blocked (what scenario 9 reads to see the relay paused its upstream).
// GET  /stats?tag=T          [{tag, count, written, textBytes, bytes, pending, blocks, blockedMs, blockedNow, done, closed}]
//                            (bytes: the content chunks written, with their chunked framing; pending: bytes
//                            still in Node's buffer, not yet taken by the kernel)
//                            (the streams with that tag, or all of them; the last 5000 kept)
import http from 'node:http';

const nowUs = () => Number(process.hrtime.bigint() / 1000n);
const streams = [];
const pending = new WeakMap();  // stream → bytes written but still in Node's buffer (not the kernel's)

function script(body) {
  const msgs = body?.messages || [];
  const last = [...msgs].reverse().find((m) => m.role === 'user');
  const text = typeof last?.content === 'string' ? last.content : '';
  const o = Object.fromEntries([...text.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]]));
  return { count: Number(o.count ?? 1000), every: Number(o.every ?? 0), pad: '.'.repeat(Number(o.pad ?? 0)), tag: o.tag ?? '' };
}

function chat(req, res, body) {
  const s = script(body);
  const st = { tag: s.tag, count: s.count, written: 0, textBytes: 0, bytes: 0, blocks: 0, blockedMs: 0, blockedNow: false, done: false, closed: false, since: 0 };
  streams.push(st);
  pending.set(st, () => res.writableLength);
  if (streams.length > 5000) streams.shift();
  const head = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":${Math.floor(Date.now() / 1000)},"model":"${body.model ?? 'bench'}","choices":[{"index":0,"delta":`;
  const chunk = (delta, finish = null) => `data: ${head}${delta},"logprobs":null,"finish_reason":${finish}}]}\n\n`;
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.write(chunk('{"role":"assistant","content":""}'));
  let timer = null;
  res.on('close', () => {
    st.closed = true;
    if (timer) clearInterval(timer);
    // Nothing is pending once it closed; and the record must not keep the response (its socket, its
    // buffers) alive: with up to 5,000 records kept, a growing heap slowed the answers of a scenario 5
    // run round by round, in the same pattern in every run.
    pending.delete(st);
  });
  const token = () => {
    st.written++;
    const text = `T${nowUs()};${s.pad}`;
    st.textBytes += text.length;
    const c = chunk(`{"content":"${text}"}`);
    st.bytes += c.length + c.length.toString(16).length + 4;  // as sent: in a chunk of the chunked body
    return res.write(c);
  };
  const finish = () => {
    st.done = true;
    res.write(chunk('{}', '"stop"'));
    res.end('data: [DONE]\n\n');
  };
  const more = () => !s.count || st.written < s.count;
  if (s.every > 0) {
    const t0 = performance.now();
    timer = setInterval(() => {
      const due = Math.floor((performance.now() - t0) / s.every) + 1;
      while (more() && st.written < due) token();
      if (!more()) {
        clearInterval(timer);
        timer = null;
        finish();
      }
    }, s.every);
    return;
  }
  const burst = () => {
    while (more()) {
      if (res.destroyed) return;
      if (!token()) {
        st.blocks++;
        st.blockedNow = true;
        st.since = performance.now();
        res.once('drain', () => {
          st.blockedNow = false;
          st.blockedMs += performance.now() - st.since;
          burst();
        });
        return;
      }
    }
    finish();
  };
  burst();
}

const server = http.createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  if (req.method === 'GET' && u.pathname === '/v1/models') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    return res.end('{"object":"list","data":[{"id":"bench","object":"model","created":0,"owned_by":"bench"}]}');
  }
  if (req.method === 'GET' && u.pathname === '/stats') {
    const tag = u.searchParams.get('tag');
    const now = performance.now();
    const list = streams.filter((s) => tag == null || s.tag === tag)
      .map((st) => {
        const { since, ...s } = st;
        return { ...s, pending: pending.get(st)?.() ?? 0, blockedMs: s.blockedMs + (s.blockedNow ? now - since : 0) };
      });
    const text = JSON.stringify(list);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    return res.end(text);
  }
  if (req.method === 'POST' && u.pathname === '/v1/chat/completions') {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400, { 'Content-Type': 'application/json' });
        return res.end('{"error":{"message":"body is not JSON"}}');
      }
      chat(req, res, body);
    });
    return;
  }
  res.writeHead(404, { 'Content-Type': 'application/json' });
  res.end('{"error":{"message":"no such route"}}');
});
server.maxConnections = 100000;
server.listen(Number(process.argv[2] || 0), '127.0.0.1', () => console.log(`listening on ${server.address().port}`));
