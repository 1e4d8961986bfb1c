// Tools: callTool, its events, middleware, and argument validation (schema.ts) as the AI sees it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLeuria } from '../dist/leuria.js';
import { scripted, quiet, events } from './scripted-provider.mjs';

/** Runs one tool call through a scripted provider; returns the outcome and the run's events. */
async function callOnce({ tools, name = tools[0]?.name, args, middleware, id = 'c1' }) {
  const provider = scripted({ id: 'p', capabilities: ['chat', 'tools'], steps: [{ tool: name, args, id }, { text: 'done' }] });
  const ai = createLeuria(quiet({ providers: [provider], middleware }));
  const all = await events(ai.chat({ prompt: 'go', tools }));
  ai.destroy();
  return { outcome: provider.log.outcomes[0], events: all, request: provider.log.chats[0] };
}

/** The error message the AI gets for `value` against `schema`, or null when it is accepted. */
async function invalid(schema, value) {
  const { outcome } = await callOnce({ tools: [{ name: 't', inputSchema: schema, execute: () => 'ok' }], args: value });
  return outcome.ok ? null : outcome.error;
}

test('callTool runs the tool and the cascade emits tool-call then tool-result', async () => {
  const seen = [];
  const tools = [{ name: 'search', description: 'Search', execute: (args, ctx) => (seen.push({ args, ctx }), [{ name: 'Mug' }]) }];
  const { outcome, events: all, request } = await callOnce({ tools, args: { query: 'mug' } });
  assert.deepEqual(outcome, { ok: true, result: [{ name: 'Mug' }] });
  assert.deepEqual(all.map((e) => e.type), ['start', 'tool-call', 'tool-result', 'text', 'finish']);
  assert.deepEqual(all[1], { type: 'tool-call', id: 'c1', name: 'search', args: { query: 'mug' } });
  assert.deepEqual(all[2], { type: 'tool-result', id: 'c1', name: 'search', result: [{ name: 'Mug' }] });
  assert.equal(seen[0].ctx.provider, 'p');
  assert.equal(seen[0].ctx.callId, 'c1');
  assert.ok(seen[0].ctx.signal instanceof AbortSignal);
  assert.equal(request.tools[0].name, 'search');
});

test('an unknown tool is an error for the AI, with both events', async () => {
  const { outcome, events: all } = await callOnce({ tools: [{ name: 'a', execute: () => 1 }], name: 'nope', args: {} });
  assert.deepEqual(outcome, { ok: false, error: 'Unknown tool: nope' });
  assert.deepEqual(all[2], { type: 'tool-result', id: 'c1', name: 'nope', error: 'Unknown tool: nope' });
});

test('a tool that throws gives { ok: false, error: message }', async () => {
  const { outcome } = await callOnce({ tools: [{ name: 'a', execute: async () => { throw new Error('Out of stock.'); } }], args: {} });
  assert.deepEqual(outcome, { ok: false, error: 'Out of stock.' });
});

test('arguments are validated against inputSchema before execute, naming the path', async () => {
  let ran = false;
  const tools = [{
    name: 'search',
    inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    execute: () => (ran = true),
  }];
  const { outcome } = await callOnce({ tools, args: { query: 42 } });
  assert.equal(outcome.ok, false);
  assert.match(outcome.error, /query: expected string/);
  assert.equal(ran, false);
  const missing = await callOnce({ tools, args: {} });
  assert.match(missing.outcome.error, /query: required/);
});

test('arguments as a JSON string are parsed, no arguments mean {}, bad JSON is an error', async () => {
  const echo = [{ name: 'echo', execute: (args) => args }];
  assert.deepEqual((await callOnce({ tools: echo, args: '{"a":1}' })).outcome, { ok: true, result: { a: 1 } });
  assert.deepEqual((await callOnce({ tools: echo, args: undefined })).outcome, { ok: true, result: {} });
  assert.deepEqual((await callOnce({ tools: echo, args: '' })).outcome, { ok: true, result: {} });
  const bad = await callOnce({ tools: echo, args: '{oops' });
  assert.deepEqual(bad.outcome, { ok: false, error: 'The arguments were not valid JSON.' });
  assert.deepEqual(bad.events.map((e) => e.type), ['start', 'tool-call', 'tool-result', 'text', 'finish']);
});

test('a call without an id gets one', async () => {
  const { events: all } = await callOnce({ tools: [{ name: 'a', execute: () => 1 }], args: {}, id: '' });
  assert.ok(all[1].id);
  assert.equal(all[1].id, all[2].id);
});

test('middleware runs outermost first, around validation and execute', async () => {
  const order = [];
  const middleware = [
    async (call, next) => { order.push(`outer:${call.name}`); const r = await next(); order.push('outer-after'); return r; },
    async (call, next) => { order.push(`inner:${call.ctx.provider}`); return next(); },
  ];
  const tools = [{ name: 't', execute: () => (order.push('execute'), 'ok') }];
  const { outcome } = await callOnce({ tools, args: {}, middleware });
  assert.deepEqual(outcome, { ok: true, result: 'ok' });
  assert.deepEqual(order, ['outer:t', 'inner:p', 'execute', 'outer-after']);
});

test('a single middleware function works too, and can change the result', async () => {
  const middleware = async (call, next) => ({ wrapped: await next() });
  const { outcome } = await callOnce({ tools: [{ name: 't', execute: () => 1 }], args: {}, middleware });
  assert.deepEqual(outcome, { ok: true, result: { wrapped: 1 } });
});

test('next(args) replaces the arguments, and the replacement is validated', async () => {
  const tools = [{ name: 't', inputSchema: { type: 'object', properties: { n: { type: 'integer' } } }, execute: (args) => args.n }];
  const fix = async (call, next) => next({ n: call.args.n + 1 });
  assert.deepEqual((await callOnce({ tools, args: { n: 1 }, middleware: fix })).outcome, { ok: true, result: 2 });
  const breakIt = async (call, next) => next({ n: 'two' });
  const broken = await callOnce({ tools, args: { n: 1 }, middleware: breakIt });
  assert.match(broken.outcome.error, /n: expected integer/);
});

test('a middleware that throws refuses the call', async () => {
  let ran = false;
  const middleware = async () => { throw new Error('The visitor said no.'); };
  const { outcome } = await callOnce({ tools: [{ name: 't', execute: () => (ran = true) }], args: {}, middleware });
  assert.deepEqual(outcome, { ok: false, error: 'The visitor said no.' });
  assert.equal(ran, false);
});

test('middleware does not run for an unknown tool', async () => {
  let calls = 0;
  const { outcome } = await callOnce({ tools: [{ name: 'a', execute: () => 1 }], name: 'b', args: {}, middleware: async (c, next) => (calls++, next()) });
  assert.equal(outcome.ok, false);
  assert.equal(calls, 0);
});

test('tool names must be unique in a request', async () => {
  const provider = scripted({ id: 'p', capabilities: ['chat', 'tools'] });
  const ai = createLeuria(quiet({ providers: [provider] }));
  const tools = [{ name: 'x', execute: () => 1 }, { name: 'x', execute: () => 2 }];
  await assert.rejects(ai.chat({ prompt: 'x', tools }).text(), /Two tools are named "x"/);
  await assert.rejects(ai.chat({ prompt: 'x', tools: [{ name: 'y' }] }).text(), /needs an execute/);
  assert.throws(() => ai.conversation({ tools }), /unique/);
  assert.throws(() => createLeuria(quiet({ providers: [], middleware: ['nope'] })), /middleware/);
  ai.destroy();
});

test('a tool call after the run was cancelled fails without running the tool', async () => {
  let ran = false;
  let request;
  const provider = scripted({ id: 'p', capabilities: ['chat', 'tools'], chat: (r) => ((request = r), new Promise(() => {})) });
  const ai = createLeuria(quiet({ providers: [provider] }));
  const run = ai.chat({ prompt: 'x', tools: [{ name: 't', execute: () => (ran = true) }] });
  await new Promise((r) => setTimeout(r, 2));
  run.cancel();
  const outcome = await request.callTool('t', {}, 'late');
  assert.equal(outcome.ok, false);
  assert.equal(ran, false);
  ai.destroy();
});

test('the tool sees the run signal abort when the run is cancelled', async () => {
  let toolSignal;
  const provider = scripted({ id: 'p', capabilities: ['chat', 'tools'], steps: [{ tool: 'slow', args: {} }] });
  const ai = createLeuria(quiet({ providers: [provider] }));
  const tools = [{ name: 'slow', execute: (args, ctx) => ((toolSignal = ctx.signal), new Promise(() => {})) }];
  const run = ai.chat({ prompt: 'x', tools });
  await new Promise((r) => setTimeout(r, 5));
  run.cancel();
  assert.equal(toolSignal.aborted, true);
  ai.destroy();
});

test('a tool that ignores the abort cannot hold the call: it resolves with an error for the AI', async () => {
  let returned;
  const provider = scripted({
    id: 'p',
    capabilities: ['chat', 'tools'],
    chat: async (request) => {
      returned = request.callTool('stuck', {}, 'c1');
      return new Promise(() => {});
    },
  });
  const ai = createLeuria(quiet({ providers: [provider] }));
  const run = ai.chat({ prompt: 'x', tools: [{ name: 'stuck', execute: () => new Promise(() => {}) }] });
  await new Promise((r) => setTimeout(r, 5));
  run.cancel();
  const outcome = await Promise.race([returned, new Promise((r) => setTimeout(() => r('held'), 500))]);
  assert.deepEqual(outcome, { ok: false, error: 'The request was cancelled.' });
  await assert.rejects(run.text(), { name: 'AbortError' });
  ai.destroy();
});

test('a middleware that ignores the abort cannot hold the call either', async () => {
  let returned;
  const provider = scripted({ id: 'p', capabilities: ['chat', 'tools'], chat: (request) => ((returned = request.callTool('t', {}, 'c1')), new Promise(() => {})) });
  const ai = createLeuria(quiet({ providers: [provider], middleware: () => new Promise(() => {}) }));
  const run = ai.chat({ prompt: 'x', tools: [{ name: 't', execute: () => 1 }] });
  await new Promise((r) => setTimeout(r, 5));
  run.cancel('Stopped by the visitor.');
  assert.deepEqual(await returned, { ok: false, error: 'Stopped by the visitor.' });
  ai.destroy();
});

test('a Zod schema as inputSchema is refused with a clear TypeError', async () => {
  const ai = createLeuria(quiet({ providers: [scripted({ id: 'p', capabilities: ['chat', 'tools'] })] }));
  const message = 'inputSchema must be a JSON Schema object; convert a Zod schema with z.toJSONSchema() or zod-to-json-schema.';
  for (const inputSchema of [{ safeParse: () => ({}) }, { _def: {} }, { _zod: {} }, 'object']) {
    const tools = [{ name: 't', inputSchema, execute: () => 1 }];
    await assert.rejects(ai.chat({ prompt: 'x', tools }).text(), (error) => error instanceof TypeError && error.message === message);
    assert.throws(() => ai.conversation({ tools }), TypeError);
  }
  ai.destroy();
});

// ---------------------------------------------------------------- the validator, through tool calls

test('schema: types, integer, null and nullable', async () => {
  assert.equal(await invalid({ type: 'object', properties: { s: { type: 'string' } } }, { s: 'x' }), null);
  assert.match(await invalid({ type: 'object', properties: { n: { type: 'integer' } } }, { n: 1.5 }), /n: expected integer/);
  assert.equal(await invalid({ type: 'object', properties: { n: { type: 'number' } } }, { n: 1.5 }), null);
  assert.equal(await invalid({ type: 'object', properties: { v: { type: ['string', 'null'] } } }, { v: null }), null);
  assert.equal(await invalid({ type: 'object', properties: { v: { type: 'string', nullable: true } } }, { v: null }), null);
  assert.match(await invalid({ type: 'object', properties: { v: { type: 'string' } } }, { v: null }), /v: expected string/);
  assert.match(await invalid({ type: 'object', properties: { b: { type: 'boolean' } } }, { b: 'yes' }), /b: expected boolean/);
  assert.match(await invalid({ type: 'object' }, [1]), /value: expected object/);
});

test('schema: enum and const', async () => {
  const schema = { type: 'object', properties: { color: { enum: ['red', 'blue'] }, kind: { const: 'mug' } } };
  assert.equal(await invalid(schema, { color: 'red', kind: 'mug' }), null);
  assert.match(await invalid(schema, { color: 'green' }), /color: expected one of "red", "blue"/);
  assert.match(await invalid(schema, { kind: 'cup' }), /kind: expected "mug"/);
});

test('schema: numbers and strings bounds, pattern', async () => {
  const schema = {
    type: 'object',
    properties: {
      n: { type: 'number', minimum: 1, maximum: 5 },
      x: { type: 'number', exclusiveMinimum: 0 },
      s: { type: 'string', minLength: 2, maxLength: 3, pattern: '^[a-z]+$' },
    },
  };
  assert.equal(await invalid(schema, { n: 5, x: 0.1, s: 'ab' }), null);
  assert.match(await invalid(schema, { n: 0 }), /n: expected at least 1/);
  assert.match(await invalid(schema, { n: 6 }), /n: expected at most 5/);
  assert.match(await invalid(schema, { x: 0 }), /x: expected more than 0/);
  assert.match(await invalid(schema, { s: 'a' }), /s: expected at least 2 characters/);
  assert.match(await invalid(schema, { s: 'abcd' }), /s: expected at most 3 characters/);
  assert.match(await invalid(schema, { s: 'AB' }), /s: expected to match \^\[a-z\]\+\$/);
  assert.equal(await invalid({ type: 'object', properties: { e: { type: 'string', maxLength: 1 } } }, { e: '😀' }), null, 'characters, not UTF-16 units');
});

test('schema: arrays, items, minItems, maxItems and nested paths', async () => {
  const schema = {
    type: 'object',
    properties: {
      items: { type: 'array', minItems: 1, maxItems: 2, items: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
    },
  };
  assert.equal(await invalid(schema, { items: [{ name: 'a' }] }), null);
  assert.match(await invalid(schema, { items: [] }), /items: expected at least 1 item$/);
  assert.match(await invalid(schema, { items: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] }), /items: expected at most 2 items/);
  assert.match(await invalid(schema, { items: [{ name: 'a' }, { name: 3 }] }), /items\[1\]\.name: expected string/);
  assert.match(await invalid(schema, { items: [{}] }), /items\[0\]\.name: required/);
});

test('schema: additionalProperties false or a schema', async () => {
  const closed = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false };
  assert.equal(await invalid(closed, { a: 'x' }), null);
  assert.match(await invalid(closed, { a: 'x', b: 1 }), /b: not allowed/);
  const typed = { type: 'object', additionalProperties: { type: 'number' } };
  assert.equal(await invalid(typed, { x: 1, y: 2 }), null);
  assert.match(await invalid(typed, { x: 'one' }), /x: expected number/);
});

test('schema: anyOf, oneOf, allOf', async () => {
  const anyOf = { type: 'object', properties: { v: { anyOf: [{ type: 'string' }, { type: 'number' }] } } };
  assert.equal(await invalid(anyOf, { v: 1 }), null);
  assert.match(await invalid(anyOf, { v: true }), /v: matches none of the allowed forms \(expected string \/ expected number\)/);
  const oneOf = { type: 'object', properties: { v: { oneOf: [{ type: 'integer' }, { type: 'number' }] } } };
  assert.equal(await invalid(oneOf, { v: 1.5 }), null);
  assert.match(await invalid(oneOf, { v: 1 }), /v: matches more than one/);
  const allOf = { type: 'object', allOf: [{ required: ['a'] }, { required: ['b'] }] };
  assert.equal(await invalid(allOf, { a: 1, b: 2 }), null);
  assert.match(await invalid(allOf, { a: 1 }), /b: required/);
});

test('schema: local $ref, and several errors reported together', async () => {
  const schema = {
    type: 'object',
    $defs: { money: { type: 'number', minimum: 0 } },
    properties: { price: { $ref: '#/$defs/money' }, name: { type: 'string' } },
    required: ['price', 'name'],
  };
  assert.equal(await invalid(schema, { price: 2, name: 'x' }), null);
  const error = await invalid(schema, { price: -1 });
  assert.match(error, /^Invalid arguments: /);
  assert.match(error, /name: required/);
  assert.match(error, /price: expected at least 0/);
});
