// Raw HTTP/1.1 from the bench's own process, for what wrk does not do: probing that a server is up,
// timing spawn-to-first-200 (scenario 10), and holding many open streams (scenario 8). Raw sockets,
// not node:http, so the probe costs as little as possible and sends exactly the Host the engine's
// gate accepts (127.0.0.1:<port>).

import net from 'node:net';

/** Whether a TCP connect to 127.0.0.1:<port> succeeds now. */
export function connectOnce(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

/** One GET on a fresh connection; resolves the status code, or 0 when refused/reset/closed early. */
export function getStatus(port, path = '/health') {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.setNoDelay(true);
    let buf = '';
    const done = (status) => {
      s.destroy();
      resolve(status);
    };
    s.on('connect', () => s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`));
    s.setEncoding('latin1');
    s.on('data', (d) => {
      buf += d;
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(buf);
      if (m) done(Number(m[1]));
    });
    s.on('error', () => done(0));
    s.on('close', () => done(0));
  });
}

/**
 * Poll GET <path> until it answers 200 (retrying at once on a refused connect: a sleep would be
 * measured) or `timeoutMs` passes. Resolves {ok, attempts}.
 */
export async function untilOk(port, { path = '/health', timeoutMs = 10000, isDead = () => false } = {}) {
  const end = performance.now() + timeoutMs;
  let attempts = 0;
  while (performance.now() < end && !isDead()) {
    attempts++;
    if ((await getStatus(port, path)) === 200) return { ok: true, attempts };
  }
  return { ok: false, attempts };
}

/**
 * Open one GET stream per entry of `list` ({path, headers?}), at most `concurrency` being opened at
 * once, and keep them all open; each counts once its response head (status 200) has arrived, and
 * whatever it sends later is read and dropped. Returns {socks, open(), close()}.
 */
export async function holdStreams(port, list, { concurrency = 32, timeoutMs = 10000 } = {}) {
  const openOne = ({ path, headers = {} }) => new Promise((resolve, reject) => {
    const head = [`GET ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, 'Accept: text/event-stream',
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
    const s = net.connect({ host: '127.0.0.1', port });
    s.setEncoding('latin1');
    let buf = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`stream ${path}: no response head within ${timeoutMs} ms`));
    }, timeoutMs);
    s.on('connect', () => s.write(head));
    const onData = (d) => {
      buf += d;
      if (!buf.includes('\r\n\r\n')) return;
      clearTimeout(timer);
      s.off('data', onData);
      s.on('data', () => {});
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(buf)?.[1]);
      if (status !== 200) {
        s.destroy();
        reject(new Error(`stream ${path}: ${buf.split('\r\n')[0]}`));
      } else resolve(s);
    };
    s.on('data', onData);
    s.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
  const socks = [];
  let next = 0;
  const worker = async () => {
    while (next < list.length) socks.push(await openOne(list[next++]));
  };
  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, list.length) }, worker));
  } catch (e) {
    socks.forEach((s) => s.destroy());
    throw e;
  }
  return {
    socks,
    open: () => socks.filter((s) => !s.destroyed && s.readyState === 'open').length,
    close: () => socks.forEach((s) => s.destroy()),
  };
}
