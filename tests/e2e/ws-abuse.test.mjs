// WebSocket frame-level abuse on both page channels (issue 7, "Hostile bytes"): after a valid upgrade of
// /webmcp/register and /webmcp/channel/<id>, raw frames no browser would send. Each is answered with the close
// code RFC 6455 asks for (1002 protocol error, 1003 data we can't accept, 1007 invalid UTF-8, 1009 too big), the
// engine ends the TCP connection, allocates nothing for lengths it refuses, stays bounded under ping floods, and
// keeps serving. Frames are built by hand (lib/ws-frames.mjs), never with `ws`.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {
  startFakeEngine, stopAll, sessionApi, pairCli, freshOrigin, sleep, poll, rssKb, request,
  wsUrl, wsOpen, recordSocket, registerPage,
} from './helpers.mjs';
import { OP, frame, closePayload, rawUpgrade } from './lib/ws-frames.mjs';

const MAX_MESSAGE = 16 * 1024 * 1024;  // http::ServerLimits::body_bytes, Beast's read_message_max
const BAD_UTF8 = {
  'a lone 0xFF': Buffer.from([0x7b, 0xff, 0x7d]),
  'an overlong "/"': Buffer.from([0xc0, 0xaf]),
  'a UTF-16 surrogate': Buffer.from([0xed, 0xa0, 0x80]),
  'a code point over U+10FFFF': Buffer.from([0xf4, 0x90, 0x80, 0x80]),
  'a cut sequence': Buffer.from([0x61, 0xe2, 0x82]),
};
const BAD_CLOSE_CODES = [0, 1, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 5001, 65535];

/** An engine built with AddressSanitizer: its freed memory waits in a quarantine, so RSS says little. */
function sanitized(eng) {
  try {
    return /libasan|libubsan/.test(fs.readFileSync(`/proc/${eng.proc.pid}/maps`, 'utf8')) || /asan/.test(eng.proc.spawnfile);
  } catch {
    return false;
  }
}

/** A paired origin with a registered session: what both channels need. */
async function pagePaths(eng) {
  const origin = freshOrigin('abuse');
  const { token } = await pairCli(eng, origin);
  const prep = await sessionApi(eng, { origin, token }).prepare({});
  assert.equal(prep.status, 201, prep.body);
  const { reply } = await registerPage(eng, prep.json.registrationToken, { origin });
  assert.equal(reply.type, 'registerSuccess', JSON.stringify(reply));
  return { origin, register: '/webmcp/register', channel: `${reply.channel}?token=${encodeURIComponent(reply.token)}` };
}

/** The engine still answers HTTP and a well-behaved page on the channel. */
async function stillServing(eng, page) {
  const h = await request(eng, { path: '/health' });
  assert.equal(h.status, 200, h.body);
  const r = await wsOpen(wsUrl(eng, page.channel), { origin: page.origin });
  assert.ok(r.ws, `channel upgrade after the abuse: ${r.status} ${r.body}`);
  const sock = recordSocket(r.ws);
  sock.send({ type: 'ping' });
  assert.deepEqual(await sock.waitFor('pong', 5000), { type: 'pong' });
  sock.close();
  await sock.waitClosed(5000);
}

/** Sends `bytes` on a fresh socket of `which` channel and expects the engine's close `code`, then the TCP end. */
async function expectClose(eng, page, which, bytes, code, what) {
  const s = await rawUpgrade(eng, page[which], { origin: page.origin });
  try {
    await s.send(bytes);
    const c = await s.waitClosed(8000).catch((e) => assert.fail(`${which}, ${what}: ${e.message}`));
    assert.equal(c.code, code, `${which}, ${what}: closed with ${c.code} ${c.reason}`);
    assert.ok(s.frames.every((f) => !f.masked), `${which}, ${what}: the engine's frames are unmasked`);
  } finally {
    s.destroy();
  }
}

const text = (payload, o = {}) => frame({ opcode: OP.text, payload, ...o });
const CHANNELS = ['register', 'channel'];

describe('WebSocket frame-level abuse: both channels', { timeout: 300000 }, () => {
  let eng;
  let page;
  before(async () => {
    eng = await startFakeEngine();
    page = await pagePaths(eng);
  });
  after(stopAll);

  it('an unmasked client frame: 1002', async () => {
    for (const which of CHANNELS) {
      await expectClose(eng, page, which, text('{"type":"ping"}', { mask: false }), 1002, 'unmasked text');
      await expectClose(eng, page, which, frame({ opcode: OP.ping, mask: false }), 1002, 'unmasked ping');
    }
    await stillServing(eng, page);
  });

  it('reserved bits without an extension (RSV1 too: no permessage-deflate): 1002', async () => {
    for (const which of CHANNELS) {
      for (let rsv = 1; rsv <= 7; rsv++) {
        await expectClose(eng, page, which, text('{"type":"ping"}', { rsv }), 1002, `text with RSV ${rsv.toString(2)}`);
      }
      await expectClose(eng, page, which, frame({ opcode: OP.ping, rsv: 4 }), 1002, 'ping with RSV1');
      await expectClose(eng, page, which, Buffer.concat([text('{"type":', { fin: false }), frame({ opcode: OP.cont, payload: '"ping"}', rsv: 2 })]),
        1002, 'continuation with RSV2');
    }
    await stillServing(eng, page);
  });

  it('unknown opcodes 3-7 and 0xB-0xF: 1002', async () => {
    for (const which of CHANNELS) {
      for (const opcode of [3, 4, 5, 6, 7, 0xb, 0xc, 0xd, 0xe, 0xf]) {
        await expectClose(eng, page, which, frame({ opcode, payload: 'x' }), 1002, `opcode ${opcode}`);
      }
    }
    await stillServing(eng, page);
  });

  it('control frames over 125 bytes, or fragmented: 1002', async () => {
    for (const which of CHANNELS) {
      await expectClose(eng, page, which, frame({ opcode: OP.ping, payload: Buffer.alloc(126, 0x61) }), 1002, 'a 126-byte ping');
      await expectClose(eng, page, which, frame({ opcode: OP.pong, payload: Buffer.alloc(70000, 0x61) }), 1002, 'a 70,000-byte pong');
      await expectClose(eng, page, which, frame({ opcode: OP.close, payload: Buffer.concat([closePayload(1000), Buffer.alloc(124, 0x61)]) }), 1002, 'a 126-byte close');
      await expectClose(eng, page, which, frame({ opcode: OP.ping, payload: 'a', fin: false }), 1002, 'a fragmented ping');
      await expectClose(eng, page, which, frame({ opcode: OP.close, payload: closePayload(1000), fin: false }), 1002, 'a fragmented close');
      // a ping between the fragments of a message is fine; one that is itself fragmented is not
      await expectClose(eng, page, which, Buffer.concat([text('{"type":', { fin: false }), frame({ opcode: OP.ping, fin: false })]),
        1002, 'a fragmented ping inside a message');
    }
    await stillServing(eng, page);
  });

  it('invalid UTF-8 in a text message: 1007, in one frame or split across fragments', async () => {
    for (const which of CHANNELS) {
      for (const [what, bytes] of Object.entries(BAD_UTF8)) {
        await expectClose(eng, page, which, text(bytes), 1007, what);
      }
      // "€" (E2 82 AC) cut across two fragments is valid: the engine reads the message
      // (the register channel then answers it, the tool channel too: a ping with a pad)
      // and a sequence cut across fragments whose second half is wrong is not
      await expectClose(eng, page, which, Buffer.concat([text(Buffer.from([0x7b, 0xe2, 0x82]), { fin: false }), frame({ opcode: OP.cont, payload: Buffer.from([0x28, 0x7d]) })]),
        1007, 'a sequence broken across fragments');
      // a message that ends in the middle of a sequence, its last fragment empty
      await expectClose(eng, page, which, Buffer.concat([text(Buffer.from([0x61, 0xe2, 0x82]), { fin: false }), frame({ opcode: OP.cont })]),
        1007, 'a message ending inside a sequence');
      // an invalid byte in the third of three fragments
      await expectClose(eng, page, which, Buffer.concat([text('{"a":', { fin: false }), frame({ opcode: OP.cont, payload: '"b', fin: false }),
        frame({ opcode: OP.cont, payload: Buffer.from([0xfe, 0x22, 0x7d]) })]), 1007, 'an invalid byte in the last fragment');
    }
    await stillServing(eng, page);
  });

  it('a text message split across fragments with a ping between them is read as one message', async () => {
    const s = await rawUpgrade(eng, page.channel, { origin: page.origin });
    const json = Buffer.from('{"type":"ping","pad":"€€"}');
    const cut = json.indexOf(0xe2) + 1;  // inside the first "€"
    await s.send(Buffer.concat([text(json.subarray(0, cut), { fin: false }), frame({ opcode: OP.ping, payload: 'p' }),
      frame({ opcode: OP.cont, payload: json.subarray(cut) })]));
    await s.until(() => s.texts().length > 0, 5000, 'the pong message');
    assert.deepEqual(JSON.parse(s.texts()[0]), { type: 'pong' });
    const pong = s.frames.find((f) => f.opcode === OP.pong);
    assert.equal(pong?.payload.toString(), 'p', 'the ping was answered with its payload');
    s.destroy();
  });

  it('bad close codes (0-999, 1004-1006, 1015, 1016-2999, 5000 and up) and a 1-byte close payload: 1002', async () => {
    for (const which of CHANNELS) {
      for (const code of BAD_CLOSE_CODES) {
        await expectClose(eng, page, which, frame({ opcode: OP.close, payload: closePayload(code) }), 1002, `close code ${code}`);
      }
      await expectClose(eng, page, which, frame({ opcode: OP.close, payload: Buffer.from([0x03]) }), 1002, 'a 1-byte close payload');
      await expectClose(eng, page, which, frame({ opcode: OP.close, payload: Buffer.concat([closePayload(1000), Buffer.from([0xff])]) }),
        1002, 'a close reason that is not UTF-8');
    }
    await stillServing(eng, page);
  });

  it('valid close codes are answered with a close and the connection ends', async () => {
    for (const which of CHANNELS) {
      for (const code of [1000, 1001, 1008, 3000, 4000, 4999]) {
        await expectClose(eng, page, which, frame({ opcode: OP.close, payload: closePayload(code, 'bye') }), code, `close code ${code}`);
      }
      await expectClose(eng, page, which, frame({ opcode: OP.close }), 1000, 'an empty close');
    }
  });

  it('a continuation without a start, or a new message inside a fragmented one: 1002', async () => {
    for (const which of CHANNELS) {
      await expectClose(eng, page, which, frame({ opcode: OP.cont, payload: '{"type":"ping"}' }), 1002, 'a lone continuation');
      await expectClose(eng, page, which, frame({ opcode: OP.cont, payload: 'x', fin: false }), 1002, 'a lone non-final continuation');
      await expectClose(eng, page, which, Buffer.concat([text('{"type":', { fin: false }), text('"ping"}')]), 1002, 'a text frame inside a fragmented message');
    }
    await stillServing(eng, page);
  });

  it('a binary message: 1003 (the protocol is JSON text)', async () => {
    for (const which of CHANNELS) {
      await expectClose(eng, page, which, frame({ opcode: OP.binary, payload: '{"type":"ping"}' }), 1003, 'binary');
    }
    await stillServing(eng, page);
  });

  it('a declaration the session would keep is at most 64 KB: a larger one gets an error, the channel stays', async () => {
    const r = await wsOpen(wsUrl(eng, page.channel), { origin: page.origin });
    assert.ok(r.ws, `${r.status}`);
    const sock = recordSocket(r.ws);
    const roundTrip = async (msg) => {
      const from = sock.messages.length;
      sock.send(msg);
      return sock.waitFor(() => true, 5000, { from });
    };
    const big = 'd'.repeat(64 * 1024);
    const tooLarge = { type: 'error', message: 'Declaration too large: at most 64 KB' };
    assert.deepEqual(await roundTrip({ type: 'registerTool', name: 'big', description: big }), tooLarge);
    assert.deepEqual(await roundTrip({ type: 'registerTool', tool: { name: 'big', inputSchema: { type: 'object', description: big } } }), tooLarge);
    assert.deepEqual(await roundTrip({ type: 'registerResource', uri: `page://${big}` }), tooLarge);
    assert.deepEqual(await roundTrip({ type: 'registerPrompt', name: 'p', description: big }), tooLarge);
    assert.deepEqual(await roundTrip({ type: 'registerTool', name: 'fits', description: 'd'.repeat(60 * 1024) }),
      { type: 'ack', registration: 'registerTool', name: 'fits' });
    // a large message that declares nothing (a tool's answer) is not a declaration
    assert.deepEqual(await roundTrip({ type: 'ping', pad: big }), { type: 'pong' });
    assert.equal(sock.closeInfo, null);
    sock.close();
  });

  it('huge 64-bit lengths are refused from the header (1009, or 1002): nothing is allocated', async () => {
    const huge = [2n ** 63n - 1n, 2n ** 63n, 2n ** 64n - 1n, 2n ** 62n, BigInt(MAX_MESSAGE) * 1024n];
    const rss0 = rssKb(eng.proc.pid);
    for (let round = 0; round < 4; round++) {
      for (const which of CHANNELS) {
        for (const length of huge) {
          const s = await rawUpgrade(eng, page[which], { origin: page.origin });
          await s.send(frame({ opcode: OP.text, payload: '{"type":"ping"', length }));
          const c = await s.waitClosed(8000);
          assert.ok([1009, 1002].includes(c.code), `${which}, length ${length}: ${c.code}`);
          if (length < 2n ** 63n) assert.equal(c.code, 1009, `${which}, length ${length}`);
          s.destroy();
        }
      }
    }
    const grew = rssKb(eng.proc.pid) - rss0;
    assert.ok(grew < 12 * 1024, `the engine's RSS grew by ${grew} kB over 40 huge lengths`);
    await stillServing(eng, page);
  });

  it(`messages over ${MAX_MESSAGE} bytes: 1009 from the header, or once the fragments add up`, async () => {
    for (const which of CHANNELS) {
      await expectClose(eng, page, which, frame({ opcode: OP.text, payload: '{"type":"ping",', length: MAX_MESSAGE + 1 }), 1009, 'cap + 1 declared');
    }
    // fragments adding up to the cap exactly, then 2 bytes more. The crossing frame is the last thing sent:
    // what a peer sends after it is never read, and the engine's close would then be a reset.
    const s = await rawUpgrade(eng, page.channel, { origin: page.origin });
    const start = Buffer.from('{"type":"ping","pad":"');
    const mib = Buffer.alloc(1024 * 1024, 0x61);
    await s.send(text(start, { fin: false }));
    for (let i = 0; i < 15; i++) await s.send(frame({ opcode: OP.cont, payload: mib, fin: false }));
    await s.send(frame({ opcode: OP.cont, payload: Buffer.alloc(MAX_MESSAGE - start.length - 15 * mib.length, 0x61), fin: false }));
    assert.equal(s.closeFrame(), null, 'exactly the cap so far');
    await s.send(frame({ opcode: OP.cont, payload: '"}' }));
    const c = await s.waitClosed(15000);
    assert.equal(c.code, 1009, `fragments over the cap: ${c.code} ${c.reason}`);
    s.destroy();
    // just under the cap is read, and answered
    const ok = await rawUpgrade(eng, page.channel, { origin: page.origin });
    const head = '{"type":"ping","pad":"';
    const body = Buffer.concat([Buffer.from(head), Buffer.alloc(MAX_MESSAGE - head.length - 2, 0x61), Buffer.from('"}')]);
    assert.equal(body.length, MAX_MESSAGE);
    await ok.send(text(body));
    await ok.until(() => ok.texts().length > 0 || ok.closeFrame(), 30000, 'an answer to a message of exactly the cap');
    assert.deepEqual(JSON.parse(ok.texts()[0]), { type: 'pong' }, ok.describe());
    ok.destroy();
    await stillServing(eng, page);
  });

  it('a ping flood that reads the pongs: every ping answered, memory flat', async () => {
    for (const which of CHANNELS) {
      const s = await rawUpgrade(eng, page[which], { origin: page.origin });
      const rss0 = rssKb(eng.proc.pid);
      const n = 5000;
      const pings = [];
      for (let i = 0; i < n; i++) pings.push(frame({ opcode: OP.ping, payload: Buffer.alloc(125, 0x70) }));
      await s.send(Buffer.concat(pings));
      await s.until(() => s.frames.filter((f) => f.opcode === OP.pong).length >= n, 30000, `${n} pongs`);
      assert.ok(s.frames.filter((f) => f.opcode === OP.pong).every((f) => f.payload.length === 125));
      assert.equal(s.closeFrame(), null, 'a ping flood that reads its pongs is not closed');
      const grew = rssKb(eng.proc.pid) - rss0;
      assert.ok(grew < 12 * 1024, `${which}: RSS grew by ${grew} kB over ${n} pings`);
      s.destroy();
    }
    await stillServing(eng, page);
  });
});

/**
 * Writes `message` in batches of `batch` on a socket that never reads, until the engine stops taking bytes (no
 * drain within stallMs), `done()` is true, or `max` were sent. Resolves how many were sent.
 */
async function floodUntilStuck(s, message, { batch, max, stallMs, done = () => false }) {
  let sent = 0;
  const bytes = Buffer.concat(Array(batch).fill(message));
  while (sent < max && !s.closed && !s.error && !done()) {
    sent += batch;
    if (!s.socket.write(bytes)) {
      let drained = false;
      s.socket.once('drain', () => (drained = true));
      await poll(() => drained || s.closed || s.error || done(), { timeoutMs: stallMs, intervalMs: 20 });
      if (!drained) break;
    }
  }
  return sent;
}

/**
 * Resolves once the engine has dropped a connection we don't read from: we never see its FIN, so we keep
 * writing a few bytes, and the kernel answers them with a reset once the engine's socket is gone.
 */
async function dropped(s, ms, what) {
  const end = Date.now() + ms;
  while (!s.closed && !s.error) {
    if (Date.now() > end) assert.fail(`${what}: the engine still holds the connection after ${ms} ms`);
    s.socket.write(frame({ opcode: OP.ping }));
    await sleep(250);
  }
}

/** Samples the engine's RSS until stop(); stop() resolves how far above the start it peaked, in kB. */
function rssPeak(eng) {
  const rss0 = rssKb(eng.proc.pid);
  let peak = rss0;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssKb(eng.proc.pid) ?? 0);
  }, 20);
  return () => {
    clearInterval(timer);
    return Math.max(peak, rssKb(eng.proc.pid) ?? 0) - rss0;
  };
}

describe('WebSocket floods from a peer that never reads', { timeout: 240000 }, () => {
  after(stopAll);
  const idleMs = 2000;  // idleTimeoutMs: Beast's idle timeout, and the closing handshake's

  it('control pings whose pongs are never read: the engine stops reading, stays bounded, and drops the socket after the idle timeout', async () => {
    const eng = await startFakeEngine({ timings: { idleTimeoutMs: idleMs } });
    const page = await pagePaths(eng);
    const peak = rssPeak(eng);
    for (const which of CHANNELS) {
      const s = await rawUpgrade(eng, page[which], { origin: page.origin });
      s.socket.pause();  // never read: the engine's pongs pile up in the kernel, then its writes block
      const t0 = Date.now();
      // Up to ~36 MB of pings fit in the kernel's buffers (ours, and the engine's grown while it read fast).
      const sent = await floodUntilStuck(s, frame({ opcode: OP.ping, payload: Buffer.alloc(125, 0x70) }),
        { batch: 1000, max: 1000000, stallMs: 5000 });
      assert.ok(sent < 1000000, `${which}: the engine kept reading ${sent} pings whose pongs nobody read`);
      // Blocked on a pong, the engine reads nothing more: after the idle timeout it drops the connection.
      await dropped(s, idleMs * 5 + 20000, which);
      const ms = Date.now() - t0;
      assert.ok(ms >= idleMs / 2, `${which}: dropped after only ${ms} ms`);
      s.destroy();
    }
    const grew = peak();
    assert.ok(grew < (sanitized(eng) ? 1024 : 24) * 1024, `the engine's RSS peaked ${grew} kB above where it started`);
    await stillServing(eng, page);
  });

  it('messages the engine answers with 60 KB each, never read: the outgoing queue is bounded in bytes, then the socket dropped', async () => {
    const eng = await startFakeEngine({ timings: { idleTimeoutMs: idleMs } });
    const page = await pagePaths(eng);
    const peak = rssPeak(eng);
    const s = await rawUpgrade(eng, page.channel, { origin: page.origin });
    s.socket.pause();
    // Each is acked with its uri: 60 KB out for 60 KB in. 1,024 of them would be 60 MB held for one page.
    const msg = text(JSON.stringify({ type: 'registerResource', uri: `page://${'u'.repeat(60000)}` }));
    const overflow = () => eng.stderrLines.find((l) => /event=webmcp\.overflow/.test(l));
    const sent = await floodUntilStuck(s, msg, { batch: 50, max: 3000, stallMs: 60000, done: overflow });
    await dropped(s, idleMs * 5 + 20000, `${sent} messages sent`);
    assert.ok(overflow(), `the outgoing queue overflowed (${sent} messages sent)`);
    const bytes = Number(/bytes=(\d+)/.exec(overflow())[1]);
    assert.ok(bytes <= 8 * 1024 * 1024, overflow());
    const grew = peak();
    assert.ok(grew < (sanitized(eng) ? 1024 : 40) * 1024, `the engine's RSS peaked ${grew} kB above where it started`);
    s.destroy();
    await stillServing(eng, page);
  });

  it('JSON pings and messages of unknown types whose answers are never read: the outgoing queue overflows, the engine stops reading, then drops the socket', async () => {
    const eng = await startFakeEngine({ timings: { idleTimeoutMs: idleMs } });
    const page = await pagePaths(eng);
    const s = await rawUpgrade(eng, page.channel, { origin: page.origin });
    s.socket.pause();
    // Four pings (each answered with a pong) and one unknown type (answered with an error naming it, 1 KB):
    // the kernel's buffers hold a few thousand answers before the engine's writes block; flood until it overflows.
    const overflowed = () => eng.stderrLines.some((l) => /event=webmcp\.overflow/.test(l));
    const group = Buffer.concat([...Array(4).fill(text('{"type":"ping"}')), text(JSON.stringify({ type: 'x'.repeat(1000) }))]);
    const sent = await floodUntilStuck(s, group, { batch: 200, max: 1000000, stallMs: 60000, done: overflowed });
    assert.ok(overflowed(), `the outgoing queue overflowed (${sent * 5} messages sent)`);
    await dropped(s, idleMs * 5 + 20000, `${sent * 5} messages sent`);
    s.destroy();
    await stillServing(eng, page);
  });
});

describe('WebSocket silence: pinged at half the idle timeout, dropped at its end', { timeout: 120000 }, () => {
  after(stopAll);
  const idleMs = 1000;

  it('a peer that answers the pings outlives the idle timeout; one that then stays silent is dropped', async () => {
    const eng = await startFakeEngine({ timings: { idleTimeoutMs: idleMs } });
    const page = await pagePaths(eng);
    for (const which of CHANNELS) {
      const s = await rawUpgrade(eng, page[which], { origin: page.origin });
      const t0 = Date.now();
      const pings = () => s.frames.filter((f) => f.opcode === OP.ping);
      await s.until(() => pings().length >= 1, idleMs * 5, `${which}: the first ping`);
      const first = Date.now() - t0;
      assert.ok(first >= idleMs / 2 - 100, `${which}: pinged after only ${first} ms`);
      // A pong is a frame heard: the next ping comes half an idle timeout after it, on a live connection.
      await s.send(frame({ opcode: OP.pong, payload: pings()[0].payload }));
      await s.until(() => pings().length >= 2, idleMs * 5, `${which}: the second ping`);
      assert.ok(Date.now() - t0 >= idleMs, `${which}: the second ping came before an idle timeout had passed`);
      assert.ok(!s.closed && !s.ended, `${which}: dropped although it answered`);
      // A text message counts too (on the register socket, whose only message is the registration, a pong frame).
      await s.send(which === 'channel' ? text('{"type":"pong"}') : frame({ opcode: OP.pong }));
      await s.until(() => pings().length >= 3, idleMs * 5, `${which}: the third ping`);
      assert.ok(!s.closed && !s.ended, `${which}: dropped although it sent a message`);
      // Silence after a ping: dropped (no close frame is owed to a peer that stopped answering).
      const quiet = Date.now();
      await s.until(() => s.closed || s.ended, idleMs * 5, `${which}: the drop of a silent peer`);
      assert.ok(Date.now() - quiet >= idleMs / 4, `${which}: dropped ${Date.now() - quiet} ms after the ping`);
      assert.equal(pings().length, 3, `${which}: one ping per half idle timeout`);
      s.destroy();
    }
    await stillServing(eng, page);
  });
});
