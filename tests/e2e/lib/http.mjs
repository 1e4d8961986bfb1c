// HTTP clients for the leuria end-to-end tests: `request` and its web/local/own/admin shorthands,
// raw-socket requests (rawHttp, rawSend) and the strict server-sent-events reader (openStream).
//
// HTTP goes through node:http `request` (not fetch) so that tests can set any header, Host and Origin included.

import http from 'node:http';
import net from 'node:net';
import { ADMIN_TOKEN, sleep, tryJson } from './engine.mjs';
import { portOf } from './internal.mjs';

/**
 * Raw HTTP request with full control over headers.
 *   request(engineOrPort, { method='GET', path='/', headers={}, body, host, noHost, timeoutMs=8000 })
 * `headers.Host` (or `host`) overrides the default Host `127.0.0.1:<port>`; `noHost: true` sends none.
 * `body`: string/Buffer sent as is; any other value is JSON-encoded with Content-Type application/json.
 * Resolves {status, headers (lower-case keys), rawHeaders, body (string), json (parsed or undefined), ms}.
 */
export function request(target, { method = 'GET', path: p = '/', headers = {}, body, host, noHost = false, timeoutMs = 8000 } = {}) {
  const port = portOf(target);
  const h = {};
  let hasHost = false;
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || v === null) continue;
    if (k.toLowerCase() === 'host') hasHost = true;
    h[k] = v;
  }
  if (!hasHost && !noHost) h.Host = host || `127.0.0.1:${port}`;
  let payload;
  if (body !== undefined) {
    if (typeof body === 'string' || Buffer.isBuffer(body)) payload = body;
    else {
      payload = JSON.stringify(body);
      if (!Object.keys(h).some((k) => k.toLowerCase() === 'content-type')) h['Content-Type'] = 'application/json';
    }
  }
  if (payload !== undefined) h['Content-Length'] = Buffer.byteLength(payload);
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: p, headers: h, agent: false, setHost: false },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode, headers: res.headers, rawHeaders: res.rawHeaders, body: text, json: tryJson(text), ms: Date.now() - t0 });
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new Error(`request ${method} ${p} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** A request from a web page: sets Origin, and Authorization when `token` is given. */
export function web(target, origin, p, { method, body, token, headers = {}, timeoutMs } = {}) {
  const h = { Origin: origin, ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  return request(target, { method: method || (body !== undefined ? 'POST' : 'GET'), path: p, headers: h, body, timeoutMs });
}

/** A request from a local process (no Origin). */
export function local(target, p, { method, body, token, headers = {}, timeoutMs } = {}) {
  const h = { ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  return request(target, { method: method || (body !== undefined ? 'POST' : 'GET'), path: p, headers: h, body, timeoutMs });
}

/** A request from the engine's own page (Origin http://127.0.0.1:<port>). */
export function own(engine, p, opts = {}) {
  return web(engine, `http://127.0.0.1:${engine.port}`, p, opts);
}

/** Admin API call (app mode). */
export function admin(engine, p, { method, body, token = ADMIN_TOKEN, headers = {}, timeoutMs } = {}) {
  const h = { ...headers };
  if (token) h.Authorization = `Bearer ${token}`;
  return request(engine, { method: method || (body !== undefined ? 'POST' : 'GET'), path: p, headers: h, body, timeoutMs });
}

// ---------------------------------------------------------------- raw sockets

/**
 * The chunks of a chunked body, read from its first size line (`raw`: a Buffer, or a string of latin1
 * bytes; the result's parts are of the same type). Returns {body, whole, after}: `body` joins the chunks
 * that have come so far, `whole` is true once the last chunk (size 0) came, and `after` is what follows
 * that chunk's size line ('\r\n' for a body that ends there, no trailers). A chunk whose data is still
 * arriving is left out. Throws on a size line that is not hex and on a chunk whose data is not followed by CRLF.
 */
export function readChunks(raw) {
  const isText = typeof raw === 'string';
  const cut = (from, to) => (isText ? raw.slice(from, to) : raw.subarray(from, to));
  const text = (from, to) => (isText ? raw.slice(from, to) : raw.subarray(from, to).toString('latin1'));
  const parts = [];
  const joined = () => (isText ? parts.join('') : Buffer.concat(parts));
  let off = 0;
  for (;;) {
    const e = raw.indexOf('\r\n', off);
    if (e < 0) return { body: joined(), whole: false, after: '' };
    const line = text(off, e);
    if (!/^[0-9a-f]+$/i.test(line)) throw new Error(`a chunk's size line, not ${JSON.stringify(text(off, off + 40))}`);
    const size = parseInt(line, 16);
    if (size === 0) return { body: joined(), whole: true, after: text(e + 2) };
    const end = e + 2 + size;
    if (raw.length < end) return { body: joined(), whole: false, after: '' };
    parts.push(cut(e + 2, end));
    if (raw.length < end + 2) return { body: joined(), whole: false, after: '' };
    if (text(end, end + 2) !== '\r\n') throw new Error('a chunk not ended by CRLF');
    off = end + 2;
  }
}

function parseRawResponse(buf, closed) {
  const sep = buf.indexOf('\r\n\r\n');
  if (sep < 0) return null;
  const head = buf.subarray(0, sep).toString('latin1');
  const [statusLine, ...hl] = head.split('\r\n');
  const m = /^HTTP\/\d\.\d (\d{3})/.exec(statusLine);
  if (!m) throw new Error(`bad status line: ${JSON.stringify(statusLine)}`);
  const headers = {};
  for (const l of hl) {
    const i = l.indexOf(':');
    if (i < 0) continue;
    const k = l.slice(0, i).trim().toLowerCase();
    const v = l.slice(i + 1).trim();
    headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
  }
  let rest = buf.subarray(sep + 4);
  let body;
  if (headers['content-length'] !== undefined) {
    const n = Number(headers['content-length']);
    if (rest.length < n) return null;
    body = rest.subarray(0, n);
  } else if (/chunked/i.test(headers['transfer-encoding'] || '')) {
    const chunks = readChunks(rest);
    if (!chunks.whole) return null;
    body = chunks.body;
  } else if (Number(m[1]) === 204 || Number(m[1]) === 304) {
    body = Buffer.alloc(0);
  } else {
    if (!closed) return null;
    body = rest;
  }
  const text = body.toString('utf8');
  return { status: Number(m[1]), statusLine, headers, body: text, json: tryJson(text) };
}

/**
 * Send arbitrary bytes on a fresh TCP connection and read one HTTP response.
 * Resolves {status, statusLine, headers, body, json, raw, ms} as soon as a complete response has arrived,
 * or rejects on timeout / if the connection closes without a response.
 */
export function rawHttp(target, data, { timeoutMs = 5000 } = {}) {
  const port = portOf(target);
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    let settled = false;
    const finish = (err, res) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve({ ...res, raw: buf.toString('latin1'), ms: Date.now() - t0 });
    };
    const tryParse = (closed) => {
      try {
        const r = parseRawResponse(buf, closed);
        if (r) finish(null, r);
        else if (closed) finish(new Error(`connection closed without a complete response; got ${JSON.stringify(buf.toString('latin1').slice(0, 500))}`));
      } catch (e) {
        finish(e);
      }
    };
    const timer = setTimeout(() => finish(new Error(`raw request timed out after ${timeoutMs} ms; got ${JSON.stringify(buf.toString('latin1').slice(0, 500))}`)), timeoutMs);
    sock.on('connect', () => sock.write(data));
    sock.on('data', (c) => {
      buf = Buffer.concat([buf, c]);
      tryParse(false);
    });
    sock.on('end', () => tryParse(true));
    sock.on('close', () => tryParse(true));
    sock.on('error', (e) => {
      // a server may reset after answering early (413/431): keep what we have
      if (buf.length) tryParse(true);
      else finish(e);
    });
  });
}

/**
 * Send arbitrary bytes and collect everything the server sends until it closes the connection,
 * `untilMatch` (a RegExp on the latin1 text received so far) matches, or `timeoutMs` passes.
 * Resolves {text, closed, timedOut, error}.
 */
export function rawSend(target, data, { timeoutMs = 3000, untilMatch } = {}) {
  const port = portOf(target);
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (extra) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ text: buf.toString('latin1'), closed: false, timedOut: false, ...extra });
    };
    const timer = setTimeout(() => finish({ timedOut: true }), timeoutMs);
    sock.on('connect', () => {
      for (const part of Array.isArray(data) ? data : [data]) sock.write(part);
    });
    sock.on('data', (c) => {
      buf = Buffer.concat([buf, c]);
      if (untilMatch && untilMatch.test(buf.toString('latin1'))) finish({});
    });
    sock.on('close', () => finish({ closed: true }));
    sock.on('error', (e) => finish({ closed: true, error: e.code || String(e) }));
  });
}

// ---------------------------------------------------------------- server-sent events

/**
 * Open a server-sent-events stream and parse it strictly as the engine writes it:
 * each event is exactly `event: <name>\ndata: <one-line JSON>\n\n`; comment lines (`:`…`\n\n`) are allowed.
 * Anything else (CR, several data lines, unparsable JSON, other fields) is recorded in `formatErrors`.
 *
 * Returns an SseStream:
 *   response        promise of {status, headers} (resolves when the headers arrive)
 *   events          [{event, data, dataText}] in order (comments not included)
 *   raw             every byte received, as text
 *   formatErrors    strings
 *   ended           promise resolved when the server ends the response (or the socket closes)
 *   isEnded()       whether it ended
 *   waitFor(pred | name, timeoutMs=5000)  first event (from index 0) matching; rejects on timeout or end
 *   waitForEnd(timeoutMs=5000)
 *   names()         event names so far
 *   close()         drop the connection
 *   pause(), resume()  stop and restart reading (a stalled reader: the kernel's buffers fill)
 */
export function openStream(target, p, { headers = {}, timeoutMs = 60000 } = {}) {
  const port = portOf(target);
  const h = { Host: `127.0.0.1:${port}`, Accept: 'text/event-stream', ...headers };
  const s = {
    events: [], raw: '', formatErrors: [], status: 0, headers: null, body: '',
    _ended: false, _waiters: new Set(),
  };
  let pending = '';
  let endResolve;
  s.ended = new Promise((r) => (endResolve = r));
  const notify = () => {
    for (const w of s._waiters) w();
  };
  const finish = () => {
    if (s._ended) return;
    s._ended = true;
    if (pending.length) s.formatErrors.push(`stream ended inside an event: ${JSON.stringify(pending)}`);
    clearTimeout(timer);
    endResolve();
    notify();
  };
  const parseBlocks = () => {
    let i;
    while ((i = pending.indexOf('\n\n')) >= 0) {
      const block = pending.slice(0, i);
      pending = pending.slice(i + 2);
      if (block.startsWith(':')) {
        if (block.includes('\n')) s.formatErrors.push(`comment block spans lines: ${JSON.stringify(block)}`);
        continue;
      }
      const m = /^event: ([^\n]+)\ndata: ([^\n]*)$/.exec(block);
      if (!m) {
        s.formatErrors.push(`not "event: <name>\\ndata: <json>": ${JSON.stringify(block)}`);
        continue;
      }
      let data;
      try {
        data = JSON.parse(m[2]);
      } catch {
        s.formatErrors.push(`data is not JSON: ${JSON.stringify(m[2])}`);
      }
      s.events.push({ event: m[1], data, dataText: m[2] });
    }
    notify();
  };
  let responseResolve;
  let responseReject;
  s.response = new Promise((res, rej) => {
    responseResolve = res;
    responseReject = rej;
  });
  s.response.catch(() => {});
  const req = http.request({ host: '127.0.0.1', port, method: 'GET', path: p, headers: h, agent: false, setHost: false }, (res) => {
    s.status = res.statusCode;
    s.headers = res.headers;
    s._res = res;
    responseResolve({ status: res.statusCode, headers: res.headers });
    res.setEncoding('utf8');
    res.on('data', (c) => {
      s.raw += c;
      if (res.statusCode === 200) {
        if (c.includes('\r')) s.formatErrors.push(`CR in the stream: ${JSON.stringify(c.slice(0, 200))}`);
        pending += c;
        parseBlocks();
      } else s.body += c;
    });
    res.on('end', finish);
    res.on('close', finish);
    res.on('error', finish);
  });
  req.on('error', (e) => {
    responseReject(e);
    finish();
  });
  req.end();
  const timer = setTimeout(() => req.destroy(), timeoutMs);
  timer.unref?.();
  s.req = req;
  s.isEnded = () => s._ended;
  s.names = () => s.events.map((e) => e.event);
  s.close = () => {
    req.destroy();
    finish();
  };
  s.pause = () => s._res?.pause();
  s.resume = () => s._res?.resume();
  s.waitFor = (pred, ms = 5000, { from = 0 } = {}) => {
    const test = typeof pred === 'string' ? (e) => e.event === pred : pred;
    return new Promise((resolve, reject) => {
      const check = () => {
        for (let k = from; k < s.events.length; k++) {
          if (test(s.events[k])) {
            done();
            resolve(s.events[k]);
            return;
          }
        }
        if (s._ended) {
          done();
          reject(new Error(`stream ended before the awaited event (${pred}); events: ${JSON.stringify(s.events).slice(0, 3000)}`));
        }
      };
      const t = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${ms} ms waiting for an event (${pred}); events: ${JSON.stringify(s.events).slice(0, 3000)}`));
      }, ms);
      const done = () => {
        clearTimeout(t);
        s._waiters.delete(check);
      };
      s._waiters.add(check);
      check();
    });
  };
  s.waitForEnd = (ms = 5000) =>
    Promise.race([
      s.ended,
      sleep(ms).then(() => {
        throw new Error(`stream did not end within ${ms} ms; events: ${JSON.stringify(s.names())}`);
      }),
    ]);
  return s;
}
