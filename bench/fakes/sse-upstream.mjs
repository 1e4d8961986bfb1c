// An upstream that streams server-sent events, for the relays under test (nginx, the Node relay, the
// C relay floor, the engine's own relays later). It is not measured: run it on the CPU the contender
// does not use.
//
//   node bench/fakes/sse-upstream.mjs [PORT]       prints "listening on <port>"
//
// GET <any path>?every=MS&count=N&size=B
//   answers 200 text/event-stream at once, then one event `data: <B bytes>` every MS ms, N times,
//   then ends the response. every=0 (the default) sends nothing and holds the stream open until the
//   client leaves: an idle stream, as scenario 8 holds them.
import http from 'node:http';

const server = http.createServer((req, res) => {
  const q = new URL(req.url, 'http://x').searchParams;
  const every = Number(q.get('every') || 0);
  const count = Number(q.get('count') || 0);
  const data = 'x'.repeat(Number(q.get('size') || 16));
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.flushHeaders();
  if (!every) return;
  let sent = 0;
  const timer = setInterval(() => {
    res.write(`data: ${data}\n\n`);
    if (count && ++sent >= count) {
      clearInterval(timer);
      res.end();
    }
  }, every);
  res.on('close', () => clearInterval(timer));
});
server.keepAliveTimeout = 0;
server.listen(Number(process.argv[2] || 0), '127.0.0.1', () => console.log(`listening on ${server.address().port}`));
