// The Node baseline for scenario 6: a WebSocket server written the simplest idiomatic way with the
// `ws` package, doing what the engine's tool channel does with a page's ping: parse the JSON message
// and answer {"type":"pong"}.
//
//   node bench/baselines/node-ws-echo.mjs PORT      prints "listening on <port>"; any path
import { WebSocketServer } from 'ws';

const wss = new WebSocketServer({ host: '127.0.0.1', port: Number(process.argv[2] || 0) });
wss.on('connection', (ws) => {
  ws.on('message', (data) => {
    const m = JSON.parse(data);
    if (m.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
  });
});
wss.on('listening', () => console.log(`listening on ${wss.address().port}`));
