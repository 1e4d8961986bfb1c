// bridge()'s pure parts: the SSE parser, token storage, the connect link and nonce, prompts, words.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { loadBridge } from './build-bridge.mjs';

let B;
before(async () => {
  B = await loadBridge();
});

function parseAll(pieces) {
  const events = [];
  const p = new B.SseParser((e) => events.push(e));
  for (const piece of pieces) p.push(piece);
  return events;
}

/** Every way to split `text` in two, plus one character at a time. */
function splits(text) {
  const out = [[text], [...text]];
  for (let i = 1; i < text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

describe('SseParser', () => {
  const STREAM = 'event: webmcp_ready\ndata: {"registrationToken":"abc"}\n\n: keep-alive\n\nevent: chunk\ndata: "Hel"\n\nevent: chunk\ndata: "lo\\n"\n\nevent: turn_completed\ndata: {"text":"Hello\\n"}\n\n';
  const EXPECTED = [
    { event: 'webmcp_ready', data: '{"registrationToken":"abc"}' },
    { event: 'chunk', data: '"Hel"' },
    { event: 'chunk', data: '"lo\\n"' },
    { event: 'turn_completed', data: '{"text":"Hello\\n"}' },
  ];

  it('parses the engine stream, split anywhere', () => {
    for (const pieces of splits(STREAM)) assert.deepEqual(parseAll(pieces), EXPECTED, JSON.stringify(pieces));
  });

  it('takes CRLF and CR line ends, split anywhere (a CR at the end of a piece, its LF in the next)', () => {
    for (const eol of ['\r\n', '\r']) {
      const text = STREAM.replace(/\n/g, eol);
      for (const pieces of splits(text)) assert.deepEqual(parseAll(pieces), EXPECTED, `${JSON.stringify(eol)} ${JSON.stringify(pieces)}`);
    }
  });

  it('a CRLF split as CR | LF is one line end, and CR CR is two', () => {
    assert.deepEqual(parseAll(['data: a\r', '\n\r', '\n']), [{ event: 'message', data: 'a' }]);
    assert.deepEqual(parseAll(['data: a\r\r']), [{ event: 'message', data: 'a' }]);
  });

  it('joins data lines, strips one space, ignores comments, ids and unknown fields, drops an unfinished event', () => {
    const events = parseAll(['\ufeffevent: e\ndata:one\ndata:  two\nid: 7\nretry: 10\nfoo: bar\n: hi\n\ndata: tail']);
    assert.deepEqual(events, [{ event: 'e', data: 'one\n two' }]);
  });

  it('an event without data is not dispatched, and its name does not leak into the next', () => {
    assert.deepEqual(parseAll(['event: ready\n\ndata: x\n\n']), [{ event: 'message', data: 'x' }]);
  });

  it('readEventStream decodes UTF-8 split across network chunks', async () => {
    const bytes = new TextEncoder().encode('event: chunk\ndata: "café ☕"\n\n');
    const body = new ReadableStream({
      start(c) {
        for (const b of bytes) c.enqueue(new Uint8Array([b]));
        c.close();
      },
    });
    const events = [];
    await B.readEventStream(body, (e) => events.push(e));
    assert.deepEqual(events, [{ event: 'chunk', data: '"café ☕"' }]);
  });
});

describe('TokenStore', () => {
  const URL = 'http://127.0.0.1:19570';

  it('keeps the token under leuria:token:<engine URL> in the given storage', () => {
    const s = B.memoryStorage();
    const t = new B.TokenStore(s, URL);
    assert.equal(t.get(), null);
    t.set('tok');
    assert.equal(s.getItem('leuria:token:http://127.0.0.1:19570'), 'tok');
    assert.equal(t.get(), 'tok');
    t.forget();
    assert.equal(s.getItem('leuria:token:http://127.0.0.1:19570'), null);
    assert.equal(B.tokenKey(URL), 'leuria:token:http://127.0.0.1:19570');
  });

  it('falls back to memory when storage throws', () => {
    const throwing = { getItem() { throw new Error('SecurityError'); }, setItem() { throw new Error('quota'); }, removeItem() { throw new Error('x'); } };
    const t = new B.TokenStore(throwing, URL);
    assert.equal(t.get(), null);
    t.set('tok');
    assert.equal(t.get(), 'tok');
    t.forget();
    assert.equal(t.get(), null);
  });

  it('"local" without localStorage (Node) uses memory; "memory" never touches localStorage', () => {
    const t = new B.TokenStore('local', URL);
    t.set('a');
    assert.equal(t.get(), 'a');
    const saved = globalThis.localStorage;
    const touched = [];
    globalThis.localStorage = { getItem: (k) => touched.push(k), setItem: (k) => touched.push(k), removeItem: (k) => touched.push(k) };
    try {
      const m = new B.TokenStore('memory', URL);
      m.set('b');
      assert.equal(m.get(), 'b');
      assert.deepEqual(touched, []);
    } finally {
      if (saved === undefined) delete globalThis.localStorage;
      else globalThis.localStorage = saved;
    }
  });
});

describe('pairing link and nonce', () => {
  it('a nonce is 32 random bytes in base64url (43 characters), fresh each time', () => {
    const a = B.makeNonce();
    const b = B.makeNonce();
    assert.match(a, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(a, b);
  });

  it('the link carries the origin, the app, the nonce and the needs', () => {
    const needs = B.cleanNeeds({ tools: true, images: true, effort: 'light', context: 8000, model: 'gpt', extra: 1 });
    assert.deepEqual(needs, { tools: true, images: true, effort: 'light', context: 8000 });
    const link = B.connectLink('https://shop.example', 'Mug shop & co', 'N0nce', needs);
    assert.equal(link, 'leuria://connect?origin=https%3A%2F%2Fshop.example&app=Mug%20shop%20%26%20co&nonce=N0nce&tools=1&images=1&effort=light&context=8000');
    const u = new URL(link);
    assert.equal(u.searchParams.get('app'), 'Mug shop & co');
    assert.equal(B.connectLink('http://a.test', undefined, 'n', undefined), 'leuria://connect?origin=http%3A%2F%2Fa.test&nonce=n');
    assert.equal(B.cleanNeeds({ effort: 'huge', tools: false }), undefined);
  });
});

describe('prompts', () => {
  it('one user message is the prompt as is', () => {
    assert.deepEqual(B.promptFor([{ role: 'user', content: 'Hi' }]), { prompt: 'Hi', attachments: [] });
  });

  it('earlier messages become a transcript; images of the last message become attachments', () => {
    const messages = [
      { role: 'user', content: [{ type: 'text', text: 'Look' }, { type: 'image', mimeType: 'image/png', data: 'AAA' }] },
      { role: 'assistant', content: 'A mug.' },
      { role: 'user', content: [{ type: 'text', text: 'And this?' }, { type: 'image', mimeType: 'image/jpeg', data: 'BBB' }] },
    ];
    const p = B.promptFor(messages);
    assert.deepEqual(p.attachments, [{ type: 'image', mimeType: 'image/jpeg', data: 'BBB' }]);
    assert.match(p.prompt, /User: Look\[an image\]\n\nAssistant: A mug\.\n\nNow the user says:\nAnd this\?$/);
    const next = B.nextPromptFor(messages);
    assert.equal(next.prompt, 'And this?');
    assert.equal(next.attachments.length, 1);
  });

  it('a schema adds an instruction to answer in JSON only', () => {
    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };
    const p = B.promptFor([{ role: 'user', content: 'Name a mug' }], schema);
    assert.ok(p.prompt.startsWith('Name a mug\n\n'));
    assert.ok(p.prompt.includes(JSON.stringify(schema)));
    assert.match(p.prompt, /only a JSON value/);
  });
});

describe('words', () => {
  it('plain words: no status codes, event names or engine jargon', () => {
    for (const [key, text] of Object.entries(B.words)) {
      assert.ok(!/\b\d{3}\b|not_paired|no_embedder|turn_completed|webmcp|nonce|token|HTTP|JSON|engine|session/i.test(text), `${key}: ${text}`);
      assert.ok(/^[A-Z]/.test(text), `${key} is a sentence: ${text}`);
    }
  });

  it('too many sessions is recognised from the engine answer; details keep the raw text', () => {
    assert.equal(B.isTooManySessions(400, { error: 'Too many sessions: this site already has 4 live sessions. Close one first.' }), true);
    assert.equal(B.isTooManySessions(400, { error: 'prompt must be a non-empty string' }), false);
    assert.equal(B.engineDetail(503, { error: 'No local embedding model', code: 'no_embedder' }), '503 No local embedding model');
  });
});
