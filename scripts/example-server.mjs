#!/usr/bin/env node
// Serves @leuria/client's example shop: clients/js/example/ at /, the SDK bundle (clients/js/dist/)
// at /sdk/. With an upstream, /api/ai/chat/completions forwards to an OpenAI-compatible server,
// the way a site's own endpoint would (the key stays here, never in the page), so server() can be
// tried too.
//
//   node scripts/example-server.mjs [--port 5173] [--host 127.0.0.1] [--upstream http://127.0.0.1:11434/v1]
//
// Environment: LEURIA_EXAMPLE_UPSTREAM (instead of --upstream), LEURIA_EXAMPLE_API_KEY (sent to the
// upstream as a Bearer token), LEURIA_EXAMPLE_MODEL (the model, when the page names none).
// Build the SDK first: node clients/js/build.mjs
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EXAMPLE = path.join(ROOT, 'clients/js/example');
const DIST = path.join(ROOT, 'clients/js/dist');
const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.json': 'application/json', '.map': 'application/json', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.ico': 'image/x-icon',
};
const MAX_BODY = 8 * 1024 * 1024;

function parseArgs(argv) {
  const opts = { port: 5173, host: '127.0.0.1', upstream: process.env.LEURIA_EXAMPLE_UPSTREAM || '' };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split('=', 2);
    const value = () => inline ?? argv[++i];
    if (flag === '--port') opts.port = Number(value());
    else if (flag === '--host') opts.host = value();
    else if (flag === '--upstream') opts.upstream = value();
    else if (flag === '--help' || flag === '-h') {
      console.log('Usage: node scripts/example-server.mjs [--port 5173] [--host 127.0.0.1] [--upstream <OpenAI-compatible base URL>]');
      process.exit(0);
    } else {
      console.error(`Unknown option ${argv[i]} (try --help)`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) {
    console.error('--port needs a number from 0 to 65535');
    process.exit(2);
  }
  return opts;
}

/** The upstream's chat completions URL, from a base URL (…/v1) or the full URL. */
export function completionsUrl(upstream) {
  const trimmed = upstream.replace(/\/+$/, '');
  return trimmed.endsWith('/chat/completions') ? trimmed : `${trimmed}/chat/completions`;
}

async function sendFile(res, base, relative) {
  // Resolved and checked: a request can't climb out of the folder it is served from.
  const file = path.resolve(base, `.${relative}`);
  if (file !== base && !file.startsWith(base + path.sep)) return notFound(res);
  let target = file;
  try {
    if ((await fs.stat(target)).isDirectory()) target = path.join(target, 'index.html');
    const body = await fs.readFile(target);
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(target)] || 'application/octet-stream', 'Cache-Control': 'no-cache' });
    res.end(body);
  } catch {
    notFound(res);
  }
}

function notFound(res) {
  res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end('Not found');
}

function sendJson(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > MAX_BODY) throw new Error('too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The site's AI endpoint: the page's request, forwarded with the key and model added here. */
async function proxyChat(req, res, upstream) {
  if (req.method !== 'POST') return sendJson(res, 405, { error: { message: 'Use POST.' } });
  if (!upstream) {
    return sendJson(res, 503, { error: { message: 'This example has no AI server configured (start it with --upstream <url>).' } });
  }
  let body;
  try {
    body = JSON.parse((await readBody(req)).toString('utf8'));
  } catch {
    return sendJson(res, 400, { error: { message: 'The request body must be JSON.' } });
  }
  if (!body.model && process.env.LEURIA_EXAMPLE_MODEL) body.model = process.env.LEURIA_EXAMPLE_MODEL;
  const headers = { 'Content-Type': 'application/json', Accept: req.headers.accept || 'text/event-stream' };
  if (process.env.LEURIA_EXAMPLE_API_KEY) headers.Authorization = `Bearer ${process.env.LEURIA_EXAMPLE_API_KEY}`;
  const controller = new AbortController();
  // The visitor cancelled (or left): stop the upstream's answer too.
  res.on('close', () => controller.abort());
  let up;
  try {
    up = await fetch(completionsUrl(upstream), { method: 'POST', headers, body: JSON.stringify(body), signal: controller.signal });
  } catch (error) {
    if (!res.headersSent && !controller.signal.aborted) sendJson(res, 502, { error: { message: `The AI server is unreachable (${error.message}).` } });
    return;
  }
  res.writeHead(up.status, { 'Content-Type': up.headers.get('content-type') || 'application/json', 'Cache-Control': 'no-cache' });
  if (!up.body) return res.end();
  try {
    for await (const chunk of up.body) res.write(chunk);
  } catch {
    // The upstream or the page went away mid-answer: the page sees a cut stream.
  }
  res.end();
}

export async function startExampleServer({ port = 5173, host = '127.0.0.1', upstream = '' } = {}) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://localhost');
    let pathname;
    try {
      pathname = decodeURIComponent(url.pathname);
    } catch {
      return notFound(res);
    }
    if (pathname === '/api/ai/chat/completions') {
      proxyChat(req, res, upstream).catch(() => {
        if (!res.headersSent) sendJson(res, 500, { error: { message: 'The example server failed.' } });
        else res.end();
      });
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendJson(res, 405, { error: { message: 'Use GET.' } });
    if (pathname.startsWith('/sdk/')) return void sendFile(res, DIST, pathname.slice(4));
    return void sendFile(res, EXAMPLE, pathname);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address();
  const shown = host.includes(':') ? `[${host}]` : host;
  return { server, url: `http://${shown}:${address.port}/`, close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }) };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const opts = parseArgs(process.argv.slice(2));
  try {
    await fs.access(path.join(DIST, 'leuria.js'));
  } catch {
    console.warn('The SDK bundle is missing: build it with node clients/js/build.mjs');
  }
  try {
    const { url } = await startExampleServer(opts);
    console.log(`Kiln & Co. example: ${url}`);
    console.log(opts.upstream ? `Site AI: /api/ai/chat/completions → ${completionsUrl(opts.upstream)}` : 'Site AI: none (start with --upstream <url> to try server())');
  } catch (error) {
    console.error(error.code === 'EADDRINUSE' ? `Port ${opts.port} is busy: try --port 0` : `Couldn't start: ${error.message}`);
    process.exit(1);
  }
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
}
