// The engine's own frames on a page's tool channel (http/websocket.cpp): a message goes out as one frame
// written straight to the socket, beside Beast, which still answers the page's pings and closes. What must
// hold: every length form arrives whole (7-bit, 16-bit, 64-bit), the page's pings are answered between
// our messages, never inside one, and a frame half-sent when the page stops reading is never cut by another
// (a ping heard then drops the connection instead).

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {
  startFakeEngine, stopAll, sessionApi, pairCli, freshOrigin, sleep, poll, registerPage, PageChannel, mcpSession,
  request,
} from './helpers.mjs';
import { OP, frame, rawUpgrade } from './lib/ws-frames.mjs';

const LOOKUP = {
  name: 'lookup',
  description: 'Tell the length of a word.',
  inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};

async function prepared(eng, origin = freshOrigin('out')) {
  const { token } = await pairCli(eng, origin);
  const prep = await sessionApi(eng, { origin, token }).prepare({});
  assert.equal(prep.status, 201, prep.body);
  return { origin, token, reg: prep.json.registrationToken };
}

/** What the kernel holds unsent on the engine's end of a loopback connection (/proc/net/tcp's tx_queue). */
function engineSendQueue(enginePort, peerPort) {
  const hex = (n) => n.toString(16).toUpperCase().padStart(4, '0');
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 5) continue;
    if (f[1].endsWith(`:${hex(enginePort)}`) && f[2].endsWith(`:${hex(peerPort)}`)) return parseInt(f[4].split(':')[0], 16);
  }
  return -1;
}

/** A raw page on a fresh channel with the lookup tool registered: {s, reply, heardAt} (when the engine last heard it). */
async function rawPage(eng) {
  const p = await prepared(eng);
  const { reply } = await registerPage(eng, p.reg, { origin: p.origin });
  assert.equal(reply.type, 'registerSuccess', JSON.stringify(reply));
  const s = await rawUpgrade(eng, `${reply.channel}?token=${encodeURIComponent(reply.token)}`, { origin: p.origin });
  const heardAt = Date.now();
  await s.send(frame({ opcode: OP.text, payload: JSON.stringify({ type: 'registerTool', ...LOOKUP }) }));
  await s.until(() => s.texts().some((t) => JSON.parse(t).type === 'ack'), 5000, 'the ack');
  return { s, reply, heardAt };
}

/** Resolves once the engine holds bytes for `s` unsent that stop changing: it is blocked inside a frame. */
async function engineBlocked(eng, s) {
  let last = -1;
  let steady = 0;
  assert.ok(await poll(() => {
    const q = engineSendQueue(eng.port, s.socket.localPort);
    steady = q > 0 && q === last ? steady + 1 : 0;
    last = q;
    return steady >= 5;
  }, { timeoutMs: 15000, intervalMs: 50 }), `the engine never blocked writing (send queue ${last})`);
}

describe("the engine's frames to a page", { timeout: 120000 }, () => {
  after(stopAll);

  it('messages of every length form reach the page whole: up to 125 bytes, up to 65,535, and beyond', async () => {
    const eng = await startFakeEngine();
    const p = await prepared(eng);
    const page = await PageChannel.connect(eng, p.reg, {
      origin: p.origin, tools: [LOOKUP], handler: (m) => `length ${m.arguments.query.length}`,
    });
    const mcp = await mcpSession(eng, page.token);
    const first = await mcp.call('tools/call', { name: 'lookup', arguments: { query: 'x' } });
    assert.equal(first.rpc.result.content[0].text, 'length 1', first.body);
    const envelope = JSON.stringify(page.calls[0]).length - 1;  // the call message without its query
    const lengths = [];
    for (const size of [125, 126, 65535, 65536]) for (let d = -3; d <= 3; d++) lengths.push(size + d - envelope);
    lengths.push(3 * 1024 * 1024);
    for (const n of lengths) {
      const r = await mcp.call('tools/call', { name: 'lookup', arguments: { query: 'q'.repeat(n) } }, { timeoutMs: 15000 });
      assert.equal(r.rpc?.result?.content?.[0]?.text, `length ${n}`, `query of ${n}: ${r.body.slice(0, 200)}`);
    }
    assert.equal(page.calls.length, lengths.length + 1);
    assert.equal(page.sock.closeInfo, null, 'the channel stayed open');
  });

  it("the page's WebSocket pings are answered between the engine's messages, never inside one", async () => {
    const eng = await startFakeEngine();
    const p = await prepared(eng);
    const page = await PageChannel.connect(eng, p.reg, {
      origin: p.origin, tools: [LOOKUP], handler: (m) => `length ${m.arguments.query.length}`,
    });
    const ws = page.sock.ws;
    let pongs = 0;
    ws.on('pong', () => pongs++);
    const mcp = await mcpSession(eng, page.token);
    const calls = [];
    for (let i = 0; i < 60; i++) {
      ws.ping(`p${i}`);
      const n = [10, 300, 70000][i % 3];
      calls.push(mcp.call('tools/call', { name: 'lookup', arguments: { query: 'z'.repeat(n) } }, { timeoutMs: 15000 })
        .then((r) => assert.equal(r.rpc?.result?.content?.[0]?.text, `length ${n}`, r.body.slice(0, 200))));
      if (i % 10 === 9) await Promise.all(calls.splice(0));
    }
    await Promise.all(calls);
    assert.ok(await poll(() => pongs === 60, { timeoutMs: 5000 }), `pongs: ${pongs}`);
    page.send({ type: 'ping' });
    await page.waitFor((m) => m.type === 'pong', 5000);
    assert.equal(page.sock.closeInfo, null, 'the channel stayed open');
  });

  it('a ping heard while a frame is half-sent drops the connection: the frame is cut, never interleaved', async () => {
    const eng = await startFakeEngine({ args: ['--port', '0', '--no-open', '-v'] });
    const { s, reply } = await rawPage(eng);
    try {
      const before = s.frames.length;
      s.socket.pause();  // the page stops reading: the kernel's buffers fill, then the engine holds the rest

      const mcp = await mcpSession(eng, reply.token);
      const call = mcp.call('tools/call', { name: 'lookup', arguments: { query: 'w'.repeat(12 * 1024 * 1024) } }, { timeoutMs: 30000 });
      await engineBlocked(eng, s);

      await s.send(frame({ opcode: OP.ping, payload: 'are you there' }));
      assert.ok(await poll(() => eng.stderrLines.some((l) => l.includes('event=websocket.control_while_half_sent')), { timeoutMs: 5000 }),
        'the engine dropped the connection for the ping');
      s.socket.resume();
      await s.until(() => s.ended || s.closed, 15000, 'the end of the connection');
      const after = s.frames.slice(before);
      assert.equal(after.filter((f) => f.opcode === OP.pong).length, 0, 'no pong written inside the frame');
      assert.ok(after.every((f) => f.opcode === OP.text && !f.masked), s.describe());
      // What came of the call's frame: its head (FIN, text, a 64-bit length), then only the message's own bytes.
      assert.ok(s.buf.length > 10 && s.buf.length < 12 * 1024 * 1024, `the call's frame was cut where the connection ended (${s.buf.length} bytes)`);
      assert.deepEqual([s.buf[0], s.buf[1]], [0x81, 127]);
      assert.match(s.buf.subarray(10).toString('latin1'), /^\{"type":"callTool","id":"[^"]+","tool":"lookup","arguments":\{"query":"w*$/,
        'nothing written inside the frame');

      const r = await call;
      assert.ok(r.rpc?.error || r.rpc?.result?.isError, `the call failed with the page gone: ${r.body.slice(0, 300)}`);
    } finally {
      s.destroy();
    }
    assert.equal((await request(eng, { path: '/health' })).status, 200);
  });

  it('the idle ping due while a frame is half-sent goes out once the frame is whole', async () => {
    // Half the idle timeout (6 s) passes while the page reads nothing and the engine holds the rest of a frame;
    // the page then has 6 s to read the frame before the engine gives up on it.
    const eng = await startFakeEngine({ timings: { idleTimeoutMs: 12000 } });
    const { s, reply, heardAt } = await rawPage(eng);
    try {
      const before = s.frames.length;
      s.socket.pause();
      const mcp = await mcpSession(eng, reply.token);
      const call = mcp.call('tools/call', { name: 'lookup', arguments: { query: 'w'.repeat(12 * 1024 * 1024) } }, { timeoutMs: 30000 });
      await engineBlocked(eng, s);
      await sleep(Math.max(0, heardAt + 6500 - Date.now()));
      s.socket.resume();
      await s.until(() => s.frames.slice(before).some((f) => f.opcode === OP.ping), 5000, "the engine's ping after the frame");
      const after = s.frames.slice(before);
      assert.equal(after[0].opcode, OP.text, s.describe());
      const m = JSON.parse(after[0].payload.toString('utf8'));
      assert.equal(m.type, 'callTool');
      assert.equal(m.arguments.query.length, 12 * 1024 * 1024, 'the call whole');
      call.catch(() => {});
    } finally {
      s.destroy();
    }
  });
});
