// The Node baseline for GET /health: an http server written the simplest idiomatic way, as a Node
// engine would answer it. The body is passed in so that every contender sends the same bytes.
//
//   node bench/baselines/node-health.mjs PORT [BODY]     prints "listening on <port>"
import http from 'node:http';

const body = process.argv[3] || '{"ok":true}';
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
});
// Defaults kept: Node caps no requests per kept-alive socket (maxRequestsPerSocket 0), as nginx's
// keepalive_requests is lifted in its config.
server.listen(Number(process.argv[2] || 0), '127.0.0.1', () => console.log(`listening on ${server.address().port}`));
