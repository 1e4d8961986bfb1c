// Raw WebSocket frames for the frame-level abuse tests (issue 7): a valid upgrade over a plain net.Socket, then
// any bytes at all, including frames no WebSocket library would send. Not re-exported by helpers.mjs: import it
// directly.
//
//   const s = await rawUpgrade(eng, channelPath, { origin });     // throws unless 101
//   s.send(frame({ opcode: 0x1, payload: 'hi', rsv: 0b100 }));      // masked unless mask: false
//   const c = await s.waitClosed();                                // {code, reason, frames, ended}

import crypto from 'node:crypto';
import net from 'node:net';
import { poll } from './checks.mjs';
import { portOf } from './internal.mjs';

export const OP = { cont: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa };
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/**
 * One client frame. payload: Buffer or string; rsv: the three reserved bits as a number 0-7 (RSV1 = 4);
 * length: the declared payload length (a BigInt or number) when it must differ from the payload's.
 */
export function frame({ fin = true, rsv = 0, opcode, payload = Buffer.alloc(0), mask = true, length }) {
  const body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload, 'utf8');
  const len = BigInt(length ?? body.length);
  let head;
  if (len < 126n) {
    head = Buffer.from([0, Number(len)]);
  } else if (len < 65536n) {
    head = Buffer.alloc(4);
    head.writeUInt16BE(Number(len), 2);
    head[1] = 126;
  } else {
    head = Buffer.alloc(10);
    head.writeBigUInt64BE(len, 2);
    head[1] = 127;
  }
  head[0] = (fin ? 0x80 : 0) | ((rsv & 7) << 4) | (opcode & 0x0f);
  if (!mask) return Buffer.concat([head, body]);
  head[1] |= 0x80;
  const key = crypto.randomBytes(4);
  const masked = Buffer.from(body);
  for (let i = 0; i < masked.length; i++) masked[i] ^= key[i & 3];
  return Buffer.concat([head, key, masked]);
}

/** A close frame's payload: the code (2 bytes), then the reason. */
export function closePayload(code, reason = '') {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(code);
  return Buffer.concat([b, Buffer.from(reason, 'utf8')]);
}

/** The head of the frame at `at` in `buf`: {len, off} (the payload's length and first byte), or null when cut short. */
function frameHead(buf, at) {
  if (buf.length - at < 2) return null;
  let len = buf[at + 1] & 0x7f;
  let off = at + 2;
  if (len === 126) {
    if (buf.length - off < 2) return null;
    len = buf.readUInt16BE(off);
    off += 2;
  } else if (len === 127) {
    if (buf.length - off < 8) return null;
    len = Number(buf.readBigUInt64BE(off));
    off += 8;
  }
  if (buf[at + 1] & 0x80) off += 4;  // a masked server frame is a bug the tests will see in `masked`
  return { len, off };
}

/** How many bytes the frame at the start of `buf` takes whole, or 0 when even its head is not all there. */
function frameSize(buf) {
  const h = frameHead(buf, 0);
  return h ? h.off + h.len : 0;
}

/** Server frames (never masked) parsed from `buf`: {frames, rest}. */
function parseFrames(buf) {
  const frames = [];
  let at = 0;
  for (;;) {
    const h = frameHead(buf, at);
    if (!h || buf.length - h.off < h.len) break;
    const b0 = buf[at];
    const b1 = buf[at + 1];
    frames.push({ fin: !!(b0 & 0x80), rsv: (b0 >> 4) & 7, opcode: b0 & 0x0f, masked: !!(b1 & 0x80), payload: buf.subarray(h.off, h.off + h.len) });
    at = h.off + h.len;
  }
  return { frames, rest: buf.subarray(at) };
}

/**
 * Upgrade `path` on the engine over a raw socket. Resolves a RawSocket when the engine answers 101 (with a
 * correct Sec-WebSocket-Accept), else {status, head} (the refusal's status line and headers, the socket closed).
 */
export function rawUpgradeOrRefusal(target, path, { origin, headers = {}, timeoutMs = 5000 } = {}) {
  const port = portOf(target);
  const key = crypto.randomBytes(16).toString('base64');
  const lines = [`GET ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Upgrade: websocket', 'Connection: Upgrade',
    `Sec-WebSocket-Key: ${key}`, 'Sec-WebSocket-Version: 13'];
  if (origin) lines.push(`Origin: ${origin}`);
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to the upgrade of ${path} within ${timeoutMs} ms`));
    }, timeoutMs);
    const onData = (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      clearTimeout(timer);
      socket.off('data', onData);
      const head = buf.subarray(0, end).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
      if (status !== 101) {
        socket.destroy();
        resolve({ status, head });
        return;
      }
      const accept = /\r\nsec-websocket-accept: *([^\r\n]*)/i.exec(head)?.[1];
      const want = crypto.createHash('sha1').update(key + GUID).digest('base64');
      if (accept !== want) {
        socket.destroy();
        reject(new Error(`bad Sec-WebSocket-Accept in\n${head}`));
        return;
      }
      resolve(new RawSocket(socket, head, buf.subarray(end + 4)));
    };
    socket.on('data', onData);
    socket.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  });
}

/** rawUpgradeOrRefusal that throws unless the upgrade succeeded. */
export async function rawUpgrade(target, path, opts) {
  const r = await rawUpgradeOrRefusal(target, path, opts);
  if (!(r instanceof RawSocket)) throw new Error(`upgrade of ${path} refused: ${r.status}\n${r.head}`);
  return r;
}

/**
 * A WebSocket after the upgrade, at the byte level: every server frame is in `frames`. Like a browser, it
 * answers the engine's close frame with one of its own (an empty one), so a closing handshake completes.
 */
export class RawSocket {
  constructor(socket, head, rest) {
    this.closeSent = false;
    this.socket = socket;
    this.head = head;
    this.frames = [];
    this.ended = false;  // the engine closed its side of the TCP connection
    this.closed = false;  // the TCP connection is gone
    this.error = null;
    // Bytes not yet parsed, as received: a large frame arrives in many chunks, and joining them all on each
    // one is quadratic (12 MB in 64 KB chunks is over a gigabyte of copying), so they are joined only once
    // `pendingLength` reaches `needed`, the size of the frame they begin.
    this.pending = [];
    this.pendingLength = 0;
    this.needed = 2;
    socket.on('data', (d) => this.take(d));
    socket.on('end', () => {
      this.ended = true;
      socket.end();
    });
    socket.on('close', () => {
      this.closed = true;
    });
    socket.on('error', (e) => {
      this.error = e;
    });
    if (rest.length) this.take(rest);
  }

  /** The bytes received but not yet parsed into a frame (a frame cut short, when the connection has ended). */
  get buf() {
    if (this.pending.length !== 1) this.pending = [Buffer.concat(this.pending)];
    return this.pending[0];
  }

  take(d) {
    this.pending.push(d);
    this.pendingLength += d.length;
    if (this.pendingLength < this.needed) return;
    const { frames, rest } = parseFrames(Buffer.concat(this.pending));
    this.pending = [rest];
    this.pendingLength = rest.length;
    this.needed = frameSize(rest) || rest.length + 1;
    this.frames.push(...frames);
    if (!this.closeSent && frames.some((f) => f.opcode === OP.close) && !this.socket.destroyed) {
      this.closeSent = true;
      this.socket.write(frame({ opcode: OP.close }), () => {});
    }
  }

  /** Write bytes (a frame, several, or any Buffer); resolves once handed to the kernel (or the socket died). */
  send(bytes) {
    return new Promise((resolve) => {
      if (this.socket.destroyed) return resolve(false);
      this.socket.write(bytes, (err) => resolve(!err));
    });
  }

  /** Text messages received (single frames; the engine does not fragment). */
  texts() {
    return this.frames.filter((f) => f.opcode === OP.text).map((f) => f.payload.toString('utf8'));
  }

  /** Resolves when pred() is true; rejects after ms with `what`. */
  async until(pred, ms, what) {
    if (await poll(pred, { timeoutMs: ms, intervalMs: 10 })) return;
    throw new Error(`${what} not seen within ${ms} ms; frames: ${this.describe()}; ended=${this.ended} closed=${this.closed} error=${this.error?.code}`);
  }

  /** The first close frame from the engine: {code, reason}, or null. */
  closeFrame() {
    const f = this.frames.find((x) => x.opcode === OP.close);
    if (!f) return null;
    return { code: f.payload.length >= 2 ? f.payload.readUInt16BE(0) : null, reason: f.payload.subarray(2).toString('utf8') };
  }

  /**
   * Waits for the engine's close frame and for the TCP connection to end (the engine's FIN, or the socket gone).
   * Resolves {code, reason}.
   */
  async waitClosed(ms = 5000) {
    await this.until(() => this.closeFrame() && (this.ended || this.closed), ms, 'a close frame and the end of the connection');
    return this.closeFrame();
  }

  describe() {
    return JSON.stringify(this.frames.slice(0, 20).map((f) => ({ op: f.opcode, len: f.payload.length,
      text: f.opcode === OP.close ? `${f.payload.length >= 2 ? f.payload.readUInt16BE(0) : '-'} ${f.payload.subarray(2)}` : f.payload.subarray(0, 60).toString() })));
  }

  destroy() {
    this.socket.destroy();
  }
}
