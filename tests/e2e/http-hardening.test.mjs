// Hostile bytes, from the attacker's side over raw sockets: smuggling shapes answered 400 with the
// connection closed (a request pipelined behind them is never read), the header limits (16 KB and
// 100 fields, 431), the header, idle and body deadlines, the connection cap, and a slowloris run
// during which a real client keeps being served.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startEngine, stopAll, rawSend, rawHttp, local, sleep, tryJson, assertError } from './helpers.mjs';

after(stopAll);

const MALFORMED = { error: 'Malformed HTTP request' };
const TOO_LARGE = { error: 'Request headers too large' };

function countAnswers(text) {
  return (text.match(/HTTP\/1\.[01] \d{3} /g) || []).length;
}

function firstAnswer(text) {
  const sep = text.indexOf('\r\n\r\n');
  if (sep < 0) return null;
  const [statusLine, ...lines] = text.slice(0, sep).split('\r\n');
  const headers = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const body = text.slice(sep + 4, sep + 4 + Number(headers['content-length'] || 0));
  return { status: Number(statusLine.split(' ')[1]), headers, body, json: tryJson(body) };
}

/** Sends `bytes` then a good request on the same connection: one refusal, then the connection closes. */
async function assertRefused(eng, bytes, { status = 400, body = MALFORMED, what = bytes } = {}) {
  const good = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n\r\n`;
  const r = await rawSend(eng, bytes + good, { timeoutMs: 4000 });
  const ctx = `${JSON.stringify(what).slice(0, 200)} got ${JSON.stringify(r.text.slice(0, 300))}`;
  assert.ok(r.closed && !r.timedOut, `the connection must close; ${ctx}`);
  assert.equal(countAnswers(r.text), 1, `one answer: the request behind it is never read; ${ctx}`);
  const a = firstAnswer(r.text);
  assert.equal(a.status, status, ctx);
  assert.equal(a.headers.connection, 'close', ctx);
  assert.deepEqual(a.json, body, ctx);
}

/** A raw connection that records what it receives and when it closes. */
function connect(eng) {
  const sock = net.connect(eng.port, '127.0.0.1');
  const c = { sock, text: '', closed: false, closedAt: 0 };
  c.ready = new Promise((resolve) => sock.once('connect', resolve).once('close', resolve));
  c.ended = new Promise((resolve) =>
    sock.on('close', () => {
      c.closed = true;
      c.closedAt = Date.now();
      resolve();
    }),
  );
  sock.on('data', (d) => (c.text += d.toString('latin1')));
  sock.on('error', () => {});
  return c;
}

const within = (promise, ms) => Promise.race([promise.then(() => true), sleep(ms).then(() => false)]);

describe('smuggling shapes: 400, Connection: close, nothing read after them', { timeout: 60000 }, () => {
  let eng;
  const req = (head, body = '') => `POST /connect/claim HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nOrigin: https://example.com\r\n${head}\r\n${body}`;

  it('starts', async () => {
    eng = await startEngine();
  });

  it('Content-Length together with Transfer-Encoding, in any order and case', async () => {
    for (const head of [
      'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n',
      'Transfer-Encoding: chunked\r\nContent-Length: 5\r\n',
      'transfer-encoding: CHUNKED\r\ncontent-length: 5\r\n',
      'Transfer-Encoding: chunked, identity\r\nContent-Length: 5\r\n',
      'Content-Length: 5\r\nTransfer-Encoding: chunked, identity\r\n',
      'Transfer-Encoding: xchunked\r\nContent-Length: 5\r\n',
      'Transfer-Encoding: identity\r\nContent-Length: 5\r\n',
    ]) await assertRefused(eng, req(head, '0\r\n\r\n'), { what: head });
  });

  it('a Transfer-Encoding other than exactly chunked, twice, or in HTTP/1.0', async () => {
    for (const head of ['Transfer-Encoding: chunked, identity\r\n', 'Transfer-Encoding: xchunked\r\n',
      'Transfer-Encoding: identity\r\n', 'Transfer-Encoding: gzip\r\n', 'Transfer-Encoding: gzip, chunked\r\n',
      'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', 'Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n'])
      await assertRefused(eng, req(head, '2\r\n{}\r\n0\r\n\r\n'), { what: head });
    await assertRefused(eng, `POST /connect/claim HTTP/1.0\r\nHost: 127.0.0.1:${eng.port}\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`);
  });

  it('a chunked body\'s trailer fields add nothing to the request: a Content-Type or a Connection sent as a trailer', async () => {
    // Trailers come after the head was checked; a proxy in front may pass what it would strip as a field.
    const trailers = 'Content-Type: application/json\r\nConnection: close\r\nAuthorization: Bearer x\r\n';
    const good = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nConnection: close\r\n\r\n`;
    const r = await rawSend(eng, req('Transfer-Encoding: chunked\r\n', `2\r\n{}\r\n0\r\n${trailers}\r\n`) + good, { timeoutMs: 4000 });
    const ctx = JSON.stringify(r.text.slice(0, 400));
    assert.equal(countAnswers(r.text), 2, `the trailer's Connection: close is not the request's; ${ctx}`);
    const a = firstAnswer(r.text);
    assert.equal(a.status, 415, ctx);  // the trailer's Content-Type is not the request's either
    assert.deepEqual(a.json, { error: 'Content-Type must be application/json' }, ctx);
    assert.match(r.text.slice(r.text.lastIndexOf('HTTP/1.1 ')), /^HTTP\/1\.1 200 /, ctx);
  });

  it('a chunked body\'s size lines and trailers are bounded: endless ones are 400, not a buffer that grows', async () => {
    // Beast bounds a head but not these; the connection's read buffer does (a head's 16 KB and a read's room).
    await assertRefused(eng, req('Transfer-Encoding: chunked\r\n', `2\r\n{}\r\n0\r\n${'X-T: b\r\n'.repeat(150000)}\r\n`),
      { what: 'a megabyte of trailer fields' });
    await assertRefused(eng, req('Transfer-Encoding: chunked\r\n', `2;${'x'.repeat(1 << 20)}\r\n{}\r\n0\r\n\r\n`),
      { what: 'a megabyte of chunk extension' });
  });

  it('two Content-Length headers (equal or not) and malformed lengths', async () => {
    for (const head of ['Content-Length: 2\r\nContent-Length: 2\r\n', 'Content-Length: 2\r\nContent-Length: 3\r\n',
      'Content-Length: 2, 2\r\n', 'Content-Length: +2\r\n', 'Content-Length: -2\r\n', 'Content-Length: 2 2\r\n',
      'Content-Length: 0x2\r\n', 'Content-Length: 2e0\r\n', 'Content-Length: \r\n',
      'Content-Length: 9223372036854775808\r\n', 'Content-Length: 18446744073709551615\r\n',
      'Content-Length: 99999999999999999999999\r\n'])
      await assertRefused(eng, req(head, '{}'), { what: head });
  });

  it('bare CR, bare LF (alone or mixed with CRLF), folded lines, a space before the colon', async () => {
    const H = `Host: 127.0.0.1:${eng.port}`;
    for (const bytes of [
      `GET /health HTTP/1.1\r\n${H}\r\nX-A: a\rb\r\n\r\n`,
      `GET /health HTTP/1.1\r\n${H}\rX-A: b\r\n\r\n`,
      `GET /health HTTP/1.1\n${H}\n\n`,
      `GET /health HTTP/1.1\r\n${H}\nX-A: b\r\n\r\n`,
      `GET /health HTTP/1.1\r\n${H}\r\nX-A: b\n\r\n`,
      `GET /health HTTP/1.1\r\n${H}\r\nX-A: a\r\n b\r\n\r\n`,
      `GET /health HTTP/1.1\r\n${H}\r\nX-A: a\r\n\tb\r\n\r\n`,
      `GET /health HTTP/1.1\r\n ${H}\r\n\r\n`,
      `GET /health HTTP/1.1\r\nHost : 127.0.0.1:${eng.port}\r\n\r\n`,
      `GET /health HTTP/1.1\r\n${H}\r\nX-A\t: b\r\n\r\n`,
      `GET /health HTTP/1.1\r\n${H}\r\nX-A: a\0b\r\n\r\n`,
    ]) await assertRefused(eng, bytes);
  });

  it('a request line with two spaces, or an unknown version', async () => {
    const H = `Host: 127.0.0.1:${eng.port}`;
    for (const line of ['GET  /health HTTP/1.1', 'GET /health  HTTP/1.1', ' GET /health HTTP/1.1',
      'GET /health HTTP/1.1 ', 'GET /health HTTP/2.0', 'GET /he alth HTTP/1.1'])
      await assertRefused(eng, `${line}\r\n${H}\r\n\r\n`, { what: line });
  });

  it('an absolute-form target naming another host stays a 403 from the gate', async () => {
    const r = await rawHttp(eng, `GET http://evil.example/health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nConnection: close\r\n\r\n`);
    assertError(r, 403, { error: 'host not allowed' });
  });

  it('plain framing still works: chunked, Content-Length, pipelining', async () => {
    const r = await rawHttp(eng, req('Transfer-Encoding: chunked\r\nContent-Type: application/json\r\nConnection: close\r\n', '2\r\n{}\r\n0\r\n\r\n'));
    assertError(r, 400, { error: 'A nonce is required' });
    const r2 = await rawHttp(eng, req('Content-Length: 2\r\nContent-Type: application/json\r\nConnection: close\r\n', '{}'));
    assertError(r2, 400, { error: 'A nonce is required' });
    const one = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n\r\n`;
    const r3 = await rawSend(eng, one + one, { untilMatch: /("ok":true[\s\S]*){2}/ });
    assert.equal(countAnswers(r3.text), 2, r3.text);
    await eng.stop();
  });
});

describe('header limits: 16 KB and 100 fields, else 431 and close', { timeout: 30000 }, () => {
  it('100 fields are served, 101 are refused; 16 KB of bytes too', async () => {
    const eng = await startEngine();
    const fields = (n) => Array.from({ length: n }, (_, i) => `X-F${i}: v\r\n`).join('');
    const host = `Host: 127.0.0.1:${eng.port}\r\n`;
    const ok = await rawHttp(eng, `GET /health HTTP/1.1\r\n${host}${fields(98)}Connection: close\r\n\r\n`);
    assert.equal(ok.status, 200, `100 fields: ${ok.statusLine}`);
    await assertRefused(eng, `GET /health HTTP/1.1\r\n${host}${fields(100)}\r\n`, { status: 431, body: TOO_LARGE, what: '101 fields' });
    await assertRefused(eng, `GET /health HTTP/1.1\r\n${host}X-Pad: ${'a'.repeat(17000)}\r\n\r\n`, { status: 431, body: TOO_LARGE, what: '17 KB' });
    // Over 16 KB without ever ending the head: refused as soon as the limit is crossed.
    const c = connect(eng);
    await c.ready;
    c.sock.write(`GET /health HTTP/1.1\r\n${host}X-Pad: ${'a'.repeat(17000)}`);
    assert.ok(await within(c.ended, 3000), 'closed once past 16 KB');
    assert.equal(firstAnswer(c.text)?.status, 431, c.text.slice(0, 200));
    await eng.stop();
  });
});

describe('deadlines close slow connections', { timeout: 30000 }, () => {
  const timings = { headerTimeoutMs: 500, idleTimeoutMs: 500, bodyTimeoutMs: 500 };

  it('half a request line, then nothing: closed at the header deadline, unanswered', async () => {
    const eng = await startEngine({ timings });
    const c = connect(eng);
    await c.ready;
    const t0 = Date.now();
    c.sock.write('GET /hea');
    assert.ok(await within(c.ended, 5000), 'closed');
    assert.ok(c.closedAt - t0 >= 300, `not before the deadline: ${c.closedAt - t0} ms`);
    assert.equal(c.text, '');
    await eng.stop();
  });

  it('a head dribbled a byte at a time is closed at the same deadline (activity does not extend it)', async () => {
    const eng = await startEngine({ timings });
    const c = connect(eng);
    await c.ready;
    c.sock.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nX-Slow: `);
    const t0 = Date.now();
    while (!c.closed && Date.now() - t0 < 5000) {
      c.sock.write('a');
      await sleep(50);
    }
    assert.ok(c.closed, 'closed while still dribbling');
    assert.equal(c.text, '');
    await eng.stop();
  });

  it('a connection that sends nothing at all is closed too', async () => {
    const eng = await startEngine({ timings });
    const c = connect(eng);
    await c.ready;
    assert.ok(await within(c.ended, 5000), 'closed');
    await eng.stop();
  });

  it('an idle keep-alive connection is closed after the idle deadline; a prompt next request is served', async () => {
    const eng = await startEngine({ timings });
    const c = connect(eng);
    await c.ready;
    const one = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n\r\n`;
    c.sock.write(one);
    await sleep(200);
    c.sock.write(one);
    await sleep(200);
    assert.equal(countAnswers(c.text), 2, c.text);
    assert.ok(!c.closed, 'kept alive between prompt requests');
    const t0 = Date.now();
    assert.ok(await within(c.ended, 5000), 'closed when idle');
    assert.ok(c.closedAt - t0 >= 100, `closed ${c.closedAt - t0} ms after the last answer`);
    assert.equal(countAnswers(c.text), 2);
    await eng.stop();
  });

  it('a slow body is closed at the body deadline, unanswered', async () => {
    const eng = await startEngine({ timings });
    const c = connect(eng);
    await c.ready;
    c.sock.write(`POST /connect/claim HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nOrigin: https://example.com\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"nonce":`);
    const t0 = Date.now();
    while (!c.closed && Date.now() - t0 < 5000) {
      c.sock.write(' ');
      await sleep(50);
    }
    assert.ok(c.closed, 'closed while the body dribbles');
    assert.equal(c.text, '');
    const r = await local(eng, '/health');
    assert.equal(r.status, 200);
    await eng.stop();
  });
});

describe('connection cap', { timeout: 30000 }, () => {
  const CAP = 20;

  it('every slot busy with a request: a new connection is closed at once, then served as soon as slots free', async () => {
    const eng = await startEngine({ timings: { maxConnections: CAP, claimWaitMs: 4000 } });
    // Claims long-poll (up to claimWaitMs): their request is being answered, so they keep their slot.
    // (A body still arriving does not: see 'slow bodies at the cap'.)
    const busy = [];
    for (let i = 0; i < CAP; i++) {
      const c = connect(eng);
      await c.ready;
      const body = JSON.stringify({ nonce: `cap-nonce-${i}-0123456789abcdef` });
      c.sock.write(`POST /connect/claim HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nOrigin: https://cap${i}.example\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      busy.push(c);
    }
    await sleep(200);
    const extra = await rawSend(eng, `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n\r\n`, { timeoutMs: 3000 });
    assert.ok(extra.closed && !extra.timedOut, 'closed at once');
    assert.equal(extra.text, '', 'without an answer');
    assert.ok(busy.every((c) => !c.closed), 'the busy connections keep their slots');
    // Once answered, a kept-alive connection waits for its next request: its slot can be taken.
    const t0 = Date.now();
    while (busy.some((c) => countAnswers(c.text) === 0) && Date.now() - t0 < 10000) await sleep(100);
    assert.ok(busy.every((c) => countAnswers(c.text) === 1), 'the claims were answered');
    const r = await local(eng, '/health', { timeoutMs: 5000 });
    assert.equal(r.status, 200);
    assert.equal(eng.stderrLines.filter((l) => l.includes('event=listener.at_cap')).length, 1, eng.stderrLines.join('\n'));
    busy.forEach((c) => c.sock.destroy());
    await eng.stop();
  });

  it('every slot held by a connection waiting for a request: the one waiting longest makes room', async () => {
    const eng = await startEngine({ timings: { maxConnections: CAP } });
    const idle = [];
    for (let i = 0; i < CAP - 1; i++) {
      const c = connect(eng);
      await c.ready;
      if (i % 2) c.sock.write('GET /hea');  // half a head, or nothing at all
      idle.push(c);
      await sleep(5);
    }
    // A kept-alive client that was served last: the newest to wait.
    const kept = connect(eng);
    await kept.ready;
    const one = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\n\r\n`;
    kept.sock.write(one);
    await sleep(200);
    assert.equal(countAnswers(kept.text), 1);

    const r = await local(eng, '/health', { timeoutMs: 5000 });
    assert.equal(r.status, 200, 'a new client is served at the cap');
    assert.ok(await within(idle[0].ended, 2000), 'the connection that waited longest was closed');
    assert.ok(idle.slice(1).every((c) => !c.closed), 'only that one');
    kept.sock.write(one);
    await sleep(300);
    assert.equal(countAnswers(kept.text), 2, 'the kept-alive client is still served');
    [...idle, kept].forEach((c) => c.sock.destroy());
    await eng.stop();
  });
});

describe('slow bodies at the cap', { timeout: 30000 }, () => {
  it('a body still arriving holds its slot only until a new connection needs it: the oldest is closed, unanswered', async () => {
    const CAP = 20;
    const eng = await startEngine({ timings: { maxConnections: CAP } });
    const slow = [];
    for (let i = 0; i < CAP; i++) {
      const c = connect(eng);
      await c.ready;
      c.sock.write(`POST /connect/claim HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nContent-Length: 100\r\n\r\n{`);
      slow.push(c);
      await sleep(5);
    }
    await sleep(200);
    const r = await local(eng, '/health', { timeoutMs: 5000 });
    assert.equal(r.status, 200, 'a new client is served at the cap');
    assert.ok(await within(slow[0].ended, 2000), 'the body waiting longest was closed');
    assert.equal(slow[0].text, '', 'without an answer');
    assert.ok(slow.slice(1).every((c) => !c.closed), 'only that one');
    slow.forEach((c) => c.sock.destroy());
    await eng.stop();
  });
});

describe('slowloris', { timeout: 60000 }, () => {
  it('many connections dribbling a header byte a second leave a real client served', async () => {
    const CAP = 20;
    const eng = await startEngine({ timings: { maxConnections: CAP, headerTimeoutMs: 1500 } });
    let running = true;
    let closes = 0;
    const socks = new Set();
    // Like slowloris: keep ATTACKERS connections open, each sending one more header byte a second,
    // and open a new one (after a short pause) whenever one is closed.
    const attacker = async () => {
      while (running) {
        const c = connect(eng);
        socks.add(c.sock);
        await c.ready;
        c.sock.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${eng.port}\r\nX-a: `);
        while (running && !c.closed) {
          await within(c.ended, 1000);
          if (!c.closed) c.sock.write('b');
        }
        socks.delete(c.sock);
        c.sock.destroy();
        closes++;
        await sleep(100);
      }
    };
    const ATTACKERS = 2 * CAP;
    const attackers = Array.from({ length: ATTACKERS }, attacker);
    await sleep(500);
    const probes = [];
    const end = Date.now() + 6000;
    while (Date.now() < end) {
      const r = await local(eng, '/health', { timeoutMs: 5000 });  // rejects after 5 s: the test fails
      probes.push(r.status);
      await sleep(300);
    }
    running = false;
    socks.forEach((s) => s.destroy());
    await Promise.all(attackers);
    assert.ok(probes.length >= 5, `probes: ${probes.length}`);
    assert.ok(probes.every((s) => s === 200), `probes: ${probes}`);
    assert.ok(closes >= ATTACKERS, `the attackers' connections were closed (${closes})`);
    const capLines = eng.stderrLines.filter((l) => l.includes('event=listener.at_cap'));
    assert.equal(capLines.length, 1, `one log line for the burst:\n${capLines.join('\n')}`);
    assert.equal((await local(eng, '/health')).status, 200);
    await eng.stop();
  });
});
