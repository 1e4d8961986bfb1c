// bridge() sessions against a fake engine in this process (sessions, event streams, the tool
// channel), driven the way the core drives a provider: conversations that outlive a disconnect,
// a turn stopped before it started and sent again, turns another AI answered, and tool calls
// whose handler fails, and sessions given up while their prepare was in flight. The real engine, in a real browser, is in tests/e2e/sdk-bridge*.test.mjs.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadBridge } from './build-bridge.mjs';

let B;
before(async () => {
  B = await loadBridge();
});

const URL0 = 'http://127.0.0.1:19570';
const KEY = `leuria:token:${URL0}`;
const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

/**
 * A fake engine: fetch and WebSocket for bridge(). `turn(session, prompt)` plays a turn after its
 * turn_start (default: answers "echo: <prompt>"); `promptDelayMs` holds turn_start back after an
 * accepted /prompt (an AI slow to take the turn); `holdPrepare()` returns a promise that holds
 * back prepare's answer once the engine has created the session (as a real engine does, it ignores
 * the page aborting the request). Every answer is in `log` ({method, path, status, keepalive,
 * auth}), every WebSocket the page opened in `sockets`.
 */
function fakeEngine({ turn = async (s, prompt) => `echo: ${prompt}`, promptDelayMs = 0, holdPrepare = null } = {}) {
  const sessions = [];
  const log = [];
  const sockets = [];
  const json = (status, body) => new Response(body === undefined ? '' : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  // A stream the page has stopped reading throws on enqueue and close: it just misses the event.
  const quietly = (f) => { try { f(); } catch { /* the page cancelled this stream */ } };
  const emit = (s, name, data = null) => {
    const text = `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const c of s.streams) quietly(() => c.enqueue(new TextEncoder().encode(text)));
  };
  const end = (s, status, event) => {
    if (['completed', 'cancelled', 'failed'].includes(s.status)) return;
    s.status = status;
    emit(s, event);
    for (const c of s.streams.splice(0)) quietly(() => c.close());
    s.channel?.close();
  };
  async function runTurn(s, prompt) {
    s.prompts.push(prompt);
    if (promptDelayMs) await tick(promptDelayMs);
    emit(s, 'turn_start');
    let text = '';
    if (!s.cancelTurn) {
      text = await turn(s, prompt);
      if (s.status !== 'running') return;
      emit(s, 'chunk', text);
    }
    s.cancelTurn = false;
    s.status = 'idle';
    emit(s, 'turn_completed', { text, durationMs: 1 });
  }
  async function fetch(url, init = {}) {
    const path = new URL(url).pathname;
    const body = init.body ? JSON.parse(init.body) : {};
    const answer = route(init.method ?? 'GET', path, body);
    if (path === '/session/prepare' && holdPrepare) await holdPrepare();
    log.push({ method: init.method ?? 'GET', path, status: answer.status, keepalive: init.keepalive === true, auth: init.headers?.Authorization });
    return answer;
  }
  function route(method, path, body) {
    if (path === '/session/prepare') {
      const s = { id: `s${sessions.length + 1}`, status: 'pending_approval', body, streams: [], prompts: [], cancelTurn: false, channel: null };
      sessions.push(s);
      return json(201, { sessionId: s.id, status: s.status, registrationToken: `REG-${s.id}`, webmcpUrl: URL0 });
    }
    const m = /^\/session\/([^/]+)(?:\/(.+))?$/.exec(path);
    const s = m && sessions.find((x) => x.id === m[1]);
    if (!s) return json(404, { error: 'Unknown session' });
    const action = m[2];
    const live = !['completed', 'cancelled', 'failed'].includes(s.status);
    if (method === 'GET' && !action) return json(200, { id: s.id, status: s.status });
    if (action === 'stream') {
      return new Response(new ReadableStream({ start: (c) => { s.streams.push(c); if (s.status === 'idle') emit(s, 'ready'); } }), { status: 200 });
    }
    const ok = () => json(200, { sessionId: s.id, status: s.status });
    if (action === 'approve') {
      s.status = 'running';
      if (s.body.prompt) void runTurn(s, s.body.prompt);
      else setTimeout(() => ((s.status = 'idle'), emit(s, 'ready')), 1);
      return ok();
    }
    if (action === 'prompt') {
      if (s.status !== 'idle') return json(400, { error: live ? 'A turn is already running' : 'Agent session has ended. Start a new session.' });
      s.status = 'running';
      void runTurn(s, body.prompt);
      return ok();
    }
    if (action === 'cancel-turn') {
      if (s.status === 'running') s.cancelTurn = true;
      return ok();
    }
    if (action === 'close') return live ? (end(s, 'completed', 'completed'), ok()) : json(400, { error: 'Session has ended' });
    if (action === 'cancel') return live ? (end(s, 'cancelled', 'cancelled'), ok()) : json(400, { error: 'Session has ended' });
    return json(404, { error: 'Not found' });
  }
  class FakeWebSocket {
    constructor(url) {
      this.url = url;
      sockets.push(this);
      this.readyState = 0;
      this.sent = [];
      setTimeout(() => ((this.readyState = 1), this.onopen?.()), 0);
    }
    send(text) {
      const msg = JSON.parse(text);
      this.sent.push(msg);
      const reply = (m) => setTimeout(() => this.onmessage?.({ data: JSON.stringify(m) }), 0);
      if (msg.type === 'register') return reply({ type: 'registerSuccess', channel: `/webmcp/channel/${msg.token.slice(4)}`, token: 'CT' });
      if (msg.type === 'registerTool') {
        const s = sessions.find((x) => this.url.includes(`/webmcp/channel/${x.id}?`));
        if (s) s.channel = this;
        return reply({ type: 'ack', registration: 'registerTool', name: msg.name });
      }
    }
    close() {
      if (this.readyState === 3) return;
      this.readyState = 3;
      setTimeout(() => this.onclose?.({}), 0);
    }
    /** The engine relays the AI's call; resolves with the page's toolResponse(s) once it answered. */
    async call(id, tool, args) {
      this.onmessage?.({ data: JSON.stringify({ type: 'callTool', id, tool, arguments: args }) });
      for (let i = 0; i < 100 && !this.sent.some((m) => m.type === 'toolResponse' && m.id === id); i++) await tick(5);
      await tick(20); // a second answer would have come by now
      return this.sent.filter((m) => m.type === 'toolResponse' && m.id === id);
    }
  }
  const live = () => sessions.filter((s) => !['completed', 'cancelled', 'failed'].includes(s.status));
  const count = (pattern) => log.filter((l) => pattern.test(`${l.method} ${l.path}`)).length;
  return { fetch, WebSocket: FakeWebSocket, sessions, log, sockets, live, count };
}

/** A connected bridge() on the fake engine. */
function connectedBridge(engine) {
  const store = B.memoryStorage();
  store.setItem(KEY, 'T0K');
  const p = B.bridge({ url: URL0, storage: store, fetch: engine.fetch, WebSocket: engine.WebSocket });
  p.attach({ update() {}, redetect() {} });
  return { p, store };
}

/** A turn as the core asks for it. */
function request(messages, { tools = [], callTool, signal } = {}) {
  const events = [];
  return {
    messages: messages.map((m) => (typeof m === 'string' ? { role: 'user', content: m } : m)),
    tools,
    callTool: callTool ?? (async () => ({ ok: false, error: 'no tools' })),
    maxTurns: 10,
    signal: signal ?? new AbortController().signal,
    emit: (e) => events.push(e),
    events,
  };
}

const user = (content) => ({ role: 'user', content });
const assistant = (content, provider = 'bridge') => ({ role: 'assistant', content, metadata: { provider } });

describe('bridge() conversations', () => {
  it('keep working after disconnect() and a new connection: a new engine session, with the history', async () => {
    const engine = fakeEngine();
    const { p, store } = connectedBridge(engine);
    const conv = p.openConversation({ system: 'Be brief.', tools: [] });
    const history = [user('Hello')];
    const r1 = await conv.send(request(history));
    assert.equal(r1.text, 'echo: Hello');
    history.push(assistant(r1.text));

    await p.disconnect();
    await tick(10);
    assert.equal(engine.sessions[0].status, 'completed', 'the engine session was closed');
    assert.equal(engine.live().length, 0);
    store.setItem(KEY, 'T0K2'); // connected again

    history.push(user('Still there?'));
    const r2 = await conv.send(request(history));
    assert.equal(engine.sessions.length, 2, 'a new engine session');
    assert.equal(engine.sessions[1].body.systemPrompt, 'Be brief.');
    assert.equal(engine.sessions[1].prompts[0], 'Here is our conversation so far:\n\nUser: Hello\n\nAssistant: echo: Hello\n\nNow the user says:\nStill there?');
    assert.match(r2.text, /Still there\?$/);
    await conv.close();
    assert.equal(engine.live().length, 0);
  });

  it('a turn stopped before it started, then sent again: the same session, no refused prompt, nothing leaked', async () => {
    const engine = fakeEngine({ promptDelayMs: 60 });
    const { p } = connectedBridge(engine);
    const conv = p.openConversation({ tools: [] });
    const history = [user('One')];
    history.push(assistant((await conv.send(request(history))).text));

    history.push(user('Two'));
    const stop = new AbortController();
    const stopped = conv.send(request(history, { signal: stop.signal }));
    await tick(5); // /prompt accepted, turn_start not here yet
    stop.abort(new DOMException('stopped', 'AbortError'));
    await assert.rejects(stopped, (e) => e.name === 'AbortError');

    // Sent again at once (the core keeps the visitor's message): it waits for the stopped turn to end.
    history.push(user('Two again'));
    const r = await conv.send(request(history));
    assert.match(r.text, /Two again$/);
    assert.equal(engine.count(/^POST \/session\/prepare$/), 1, 'one engine session');
    assert.deepEqual(engine.log.filter((l) => l.status === 400), [], 'no prompt refused');
    assert.equal(engine.count(/^POST \/session\/s1\/cancel-turn$/), 1);
    await conv.close();
    assert.equal(engine.live().length, 0);
  });

  it('a prompt the engine refuses (400) closes that session before starting a new one', async () => {
    const engine = fakeEngine();
    const { p } = connectedBridge(engine);
    const conv = p.openConversation({ tools: [] });
    const history = [user('One')];
    history.push(assistant((await conv.send(request(history))).text));
    engine.sessions[0].status = 'running'; // busy with something this page lost track of

    history.push(user('Two'));
    const r = await conv.send(request(history));
    assert.match(r.text, /Now the user says:\nTwo$/);
    assert.equal(engine.count(/^POST \/session\/s1\/close$/), 1, 'the refused session was closed');
    assert.equal(engine.sessions[0].status, 'completed');
    assert.deepEqual(engine.live().map((s) => s.id), ['s2']);
    await conv.close();
  });

  it('turns another AI answered go into the next prompt as context; then just the new message', async () => {
    const engine = fakeEngine();
    const { p } = connectedBridge(engine);
    const conv = p.openConversation({ tools: [] });
    const history = [user('One')];
    history.push(assistant((await conv.send(request(history))).text));
    // Bridge wasn't ready for a turn: the site's server answered it.
    history.push(user('Two'), assistant('Two from the server', 'server'));

    history.push(user('Three'));
    history.push(assistant((await conv.send(request(history))).text));
    history.push(user('Four'));
    await conv.send(request(history));
    assert.equal(engine.sessions.length, 1);
    assert.deepEqual(engine.sessions[0].prompts, [
      'One',
      'Here is what was said since your last answer:\n\nUser: Two\n\nAssistant: Two from the server\n\nNow the user says:\nThree',
      'Four',
    ]);
    await conv.close();
  });
});

describe('bridge() page tools', () => {
  let unhandled;
  const onUnhandled = (e) => unhandled.push(e);
  before(() => process.on('unhandledRejection', onUnhandled));
  after(() => process.off('unhandledRejection', onUnhandled));

  it('every callTool gets exactly one toolResponse, even when running the tool throws or rejects', async () => {
    unhandled = [];
    const responses = {};
    const engine = fakeEngine({
      turn: async (s) => {
        responses.ok = await s.channel.call('c1', 'search', { q: 'mug' });
        responses.rejects = await s.channel.call('c2', 'search', { q: 'reject' });
        responses.throws = await s.channel.call('c3', 'search', { q: 'throw' });
        responses.cycle = await s.channel.call('c4', 'search', { q: 'cycle' });
        responses.unknown = await s.channel.call('c5', 'nope', {});
        return 'done';
      },
    });
    const { p } = connectedBridge(engine);
    const tools = [{ name: 'search', description: 'Search.', execute() {} }];
    const callTool = (name, args) => {
      if (args.q === 'throw') throw new Error('boom');
      if (args.q === 'reject') return Promise.reject(new Error('went away'));
      if (args.q === 'cycle') {
        const result = {};
        result.self = result;
        return Promise.resolve({ ok: true, result });
      }
      return Promise.resolve({ ok: true, result: ['Celadon mug'] });
    };
    const r = await p.chat(request(['Find a mug'], { tools, callTool }));
    assert.equal(r.text, 'done');
    const one = (list) => (assert.equal(list.length, 1, JSON.stringify(list)), list[0]);
    assert.deepEqual(one(responses.ok), { type: 'toolResponse', id: 'c1', result: ['Celadon mug'] });
    assert.match(one(responses.rejects).error, /went away/);
    assert.match(one(responses.throws).error, /boom/);
    assert.match(one(responses.cycle).error, /JSON/);
    assert.match(one(responses.unknown).error, /Unknown tool/);
    await tick(20);
    assert.deepEqual(unhandled, []);
  });
});

describe('bridge() sessions given up while prepare is in flight', () => {
  const tools = [{ name: 'search', description: 'Search.', execute() {} }];
  /** A gate for holdPrepare: prepare answers once open() is called. */
  function gate() {
    let open;
    const opened = new Promise((resolve) => (open = resolve));
    return { hold: () => opened, open };
  }
  /** What `promise` settled with within `ms` (its value, its error), or 'still waiting'. */
  const within = (promise, ms = 200) => Promise.race([promise.then((v) => v ?? 'resolved', (e) => e), tick(ms).then(() => 'still waiting')]);
  const calls = (engine) => engine.log.map((l) => `${l.method} ${l.path}`);

  it('a run cancelled while prepare is in flight fails at once; once prepare answers, the engine gets /cancel for that id, and no stream, tool channel or approve', async () => {
    const g = gate();
    const engine = fakeEngine({ holdPrepare: g.hold });
    const { p } = connectedBridge(engine);
    const stop = new AbortController();
    const chat = p.chat(request(['Hi'], { tools, signal: stop.signal }));
    await tick(5);
    assert.equal(engine.sessions.length, 1, 'the engine has created the session');
    stop.abort(new DOMException('stopped', 'AbortError'));
    const outcome = await within(chat);
    assert.equal(outcome.name, 'AbortError', 'the run fails at once, without waiting for the engine');
    assert.deepEqual(calls(engine), [], 'prepare has not answered yet');

    g.open();
    await tick(20);
    assert.deepEqual(calls(engine), ['POST /session/prepare', 'POST /session/s1/cancel']);
    assert.equal(engine.sessions[0].status, 'cancelled');
    assert.equal(engine.log[1].auth, 'Bearer T0K');
    assert.equal(engine.log[1].keepalive, true, 'it may go out as the page unloads');
    assert.deepEqual(engine.sockets, [], 'no tool channel');
    assert.deepEqual(engine.live(), []);

    // A run after it goes as usual.
    const r = await p.chat(request(['Again'], { tools }));
    assert.equal(r.text, 'echo: Again');
    await tick(10);
    assert.deepEqual(calls(engine).slice(2), ['POST /session/prepare', 'GET /session/s2/stream', 'POST /session/s2/approve', 'POST /session/s2/close']);
    assert.deepEqual(engine.live(), []);
  });

  it('a run cancelled before prepare went out sends nothing', async () => {
    const engine = fakeEngine();
    const { p } = connectedBridge(engine);
    const stop = new AbortController();
    stop.abort(new DOMException('stopped', 'AbortError'));
    await assert.rejects(p.chat(request(['Hi'], { signal: stop.signal })), (e) => e.name === 'AbortError');
    await tick(10);
    assert.deepEqual(engine.log, []);
    assert.deepEqual(engine.sessions, []);
  });

  it('close() of a conversation while its warm-up prepare is in flight: /close once the id is known, no approve, no stream or channel left open', async () => {
    const g = gate();
    const engine = fakeEngine({ holdPrepare: g.hold });
    const { p } = connectedBridge(engine);
    const conv = p.openConversation({ tools });
    const sending = conv.send(request([user('Hi')], { tools }));
    await tick(5);
    assert.equal(engine.sessions.length, 1);
    assert.equal(await within(conv.close()), 'resolved', 'close() does not wait for the engine');
    const outcome = await within(sending);
    assert.equal(outcome.code, 'failed', 'the turn in progress fails at once');

    g.open();
    await tick(20);
    assert.deepEqual(calls(engine), ['POST /session/prepare', 'POST /session/s1/close']);
    assert.equal(engine.sessions[0].status, 'completed');
    assert.deepEqual(engine.sessions[0].streams, []);
    assert.deepEqual(engine.sockets, []);
    assert.deepEqual(engine.live(), []);
  });

  it('disconnect() while a conversation\'s prepare is in flight: /close with the token prepare carried (already forgotten), and the conversation goes on later in a new session', async () => {
    const g = gate();
    const engine = fakeEngine({ holdPrepare: g.hold });
    const { p, store } = connectedBridge(engine);
    const conv = p.openConversation({ tools: [] });
    const sending = conv.send(request([user('Hi')]));
    await tick(5);
    await p.disconnect();
    assert.equal((await within(sending)).code, 'failed');
    assert.equal(store.getItem(KEY), null, 'the token is forgotten');

    g.open();
    await tick(20);
    assert.deepEqual(calls(engine), ['POST /session/prepare', 'POST /session/s1/close']);
    assert.equal(engine.log[1].auth, 'Bearer T0K');
    assert.deepEqual(engine.live(), []);

    store.setItem(KEY, 'T0K2'); // connected again
    const r = await conv.send(request([user('Hi again')]));
    assert.equal(r.text, 'echo: Hi again');
    assert.deepEqual(engine.live().map((s) => s.id), ['s2']);
    await conv.close();
    assert.deepEqual(engine.live(), []);
  });

  it('page unload (destroy with keepalive) while a one-off prepare is in flight: /close with keepalive once the id is known, nothing else', async () => {
    const g = gate();
    const engine = fakeEngine({ holdPrepare: g.hold });
    const { p } = connectedBridge(engine);
    const chat = p.chat(request(['Hi'], { tools }));
    await tick(5);
    p.destroy({ keepalive: true });
    assert.equal((await within(chat)).code, 'failed', 'the run fails at once');

    g.open();
    await tick(20);
    assert.deepEqual(calls(engine), ['POST /session/prepare', 'POST /session/s1/close']);
    assert.equal(engine.log[1].keepalive, true);
    assert.deepEqual(engine.sockets, []);
    assert.deepEqual(engine.live(), []);
  });
});
