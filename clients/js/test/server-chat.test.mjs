// server(): against the scripted OpenAI-compatible server (tests/fakes/openai-server.mjs), called
// directly with a hand-made request: streamed text, streamed tool calls run in the page,
// structured output, images, headers and options.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startOpenAiServer } from '../../../tests/fakes/openai-server.mjs';
import { loadProviders } from './build-providers.mjs';
import { makeRequest } from './provider-request.mjs';

const { server } = await loadProviders();

const SEARCH = {
  name: 'search_products',
  description: 'Find mugs by name',
  inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  execute: ({ query }) => [{ name: `${query} mug`, price: 18 }],
};

describe('server() chat', () => {
  let srv;
  let script = [];
  let base = 0;
  const chats = () => srv.requests.filter((r) => r.path === '/v1/chat/completions');
  before(async () => {
    // The scripted server numbers chat requests for its whole life; base makes each test's script start at 0.
    srv = await startOpenAiServer({ respond: (body, i) => script[i - base] });
  });
  after(() => srv.close());
  const use = (steps) => {
    script = steps;
    base += chats().length;
    srv.requests.length = 0;
  };

  it('describes itself, and is ready without any request', async () => {
    const p = server({ url: `${srv.url}/chat/completions` });
    assert.equal(p.id, 'server');
    assert.equal(p.label, "This site's AI");
    assert.equal(p.locality, 'site');
    assert.deepEqual([...p.offers], ['chat']);
    const report = await p.detect();
    assert.equal(report.status, 'ready');
    assert.deepEqual(report.capabilities, ['chat', 'tools']);
    assert.equal(srv.requests.length, 0, 'detect must not reach the server');
    const all = await server({ url: '/x', jsonSchema: true, images: true, id: 'mine', label: 'Mine' }).detect();
    assert.deepEqual(all.capabilities, ['chat', 'tools', 'images', 'structured']);
    assert.deepEqual((await server({ url: '/x', tools: false }).detect()).capabilities, ['chat']);
    assert.throws(() => server({}), TypeError);
  });

  it('streams text, with the system prompt first and the model when given', async () => {
    use([{ text: 'Our mugs are stoneware.', reasoning: 'They asked about mugs.' }]);
    const p = server({ url: `${srv.url}/chat/completions`, model: 'site-model' });
    const { request, events, texts } = makeRequest({ prompt: 'What are the mugs made of?', system: 'You sell mugs.' });
    const result = await p.chat(request);
    assert.equal(result.text, 'Our mugs are stoneware.');
    assert.equal(result.reason, 'stop');
    assert.equal(texts(), 'Our mugs are stoneware.');
    assert.ok(events.filter((e) => e.type === 'text').length > 1, 'the text arrives in several pieces');
    assert.equal(events.filter((e) => e.type === 'reasoning').map((e) => e.text).join(''), 'They asked about mugs.');
    const body = chats()[0].body;
    assert.equal(body.stream, true);
    assert.equal(body.model, 'site-model');
    assert.deepEqual(body.messages, [
      { role: 'system', content: 'You sell mugs.' },
      { role: 'user', content: 'What are the mugs made of?' },
    ]);
    assert.equal(body.tools, undefined);
    assert.equal(body.response_format, undefined);
    assert.equal(chats()[0].headers['content-type'], 'application/json');
  });

  it('runs streamed tool calls in the page, then sends the results back', async () => {
    use([
      { toolCalls: [{ name: 'search_products', arguments: { query: 'blue' }, id: 'call_a' }, { name: 'search_products', arguments: { query: 'red' }, id: 'call_b' }] },
      { text: 'We have a blue mug and a red mug.' },
    ]);
    const p = server({ url: `${srv.url}/chat/completions` });
    const { request, events, calls, providerEvents } = makeRequest({ prompt: 'Any blue or red mugs?', tools: [SEARCH] });
    const result = await p.chat(request);
    assert.equal(result.text, 'We have a blue mug and a red mug.');
    assert.deepEqual(calls.map((c) => [c.name, c.args, c.callId]), [
      ['search_products', { query: 'blue' }, 'call_a'],
      ['search_products', { query: 'red' }, 'call_b'],
    ]);
    const kinds = events.filter((e) => e.type.startsWith('tool')).map((e) => `${e.type}:${e.id}`);
    assert.deepEqual(kinds, ['tool-call:call_a', 'tool-result:call_a', 'tool-call:call_b', 'tool-result:call_b']);
    assert.deepEqual(events.find((e) => e.type === 'tool-result').result, [{ name: 'blue mug', price: 18 }]);
    assert.ok(providerEvents.every((e) => e.type === 'text' || e.type === 'reasoning'), 'tool events are callTool\'s to send');

    const [first, second] = chats().map((r) => r.body);
    assert.deepEqual(first.tools, [{ type: 'function', function: { name: 'search_products', description: 'Find mugs by name', parameters: SEARCH.inputSchema } }]);
    assert.equal(first.tool_choice, undefined);
    const tail = second.messages.slice(-3);
    assert.equal(tail[0].role, 'assistant');
    assert.deepEqual(tail[0].tool_calls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]), [
      ['call_a', 'search_products', { query: 'blue' }],
      ['call_b', 'search_products', { query: 'red' }],
    ]);
    assert.deepEqual(tail[1], { role: 'tool', tool_call_id: 'call_a', content: JSON.stringify([{ name: 'blue mug', price: 18 }]) });
    assert.equal(tail[2].tool_call_id, 'call_b');
  });

  it('tells the AI when a tool fails, and keeps going', async () => {
    use([{ toolCalls: [{ name: 'missing_tool', arguments: {} }] }, { text: 'Sorry, I could not search.' }]);
    const { request, events } = makeRequest({ tools: [SEARCH] });
    const result = await server({ url: `${srv.url}/chat/completions` }).chat(request);
    assert.equal(result.text, 'Sorry, I could not search.');
    assert.equal(events.find((e) => e.type === 'tool-result').error, 'There is no tool named missing_tool.');
    const toolMessage = chats()[1].body.messages.at(-1);
    assert.deepEqual(JSON.parse(toolMessage.content), { error: 'There is no tool named missing_tool.' });
  });

  it('passes arguments that are not JSON as written, for callTool to refuse', async () => {
    const fetchBad = async () => new Response(
      'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"search_products","arguments":"{oops"}}]},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n',
      { status: 200 },
    );
    const { request, calls } = makeRequest({ tools: [SEARCH], maxTurns: 1 });
    await server({ url: '/x', fetch: fetchBad }).chat(request);
    assert.equal(calls.length, 0, 'the last step runs no tools');
    let n = 0;
    const twice = async () => (n++ === 0 ? fetchBad() : new Response('data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n', { status: 200 }));
    const second = makeRequest({ tools: [SEARCH] });
    await server({ url: '/x', fetch: twice }).chat(second.request);
    assert.deepEqual(second.calls.map((c) => c.args), ['{oops']);
  });

  it('stops after maxTurns steps, the last one with tool_choice none', async () => {
    const loop = { toolCalls: [{ name: 'search_products', arguments: { query: 'x' } }] };
    use([loop, loop, loop]);
    const { request, calls } = makeRequest({ tools: [SEARCH], maxTurns: 2 });
    const result = await server({ url: `${srv.url}/chat/completions` }).chat(request);
    assert.equal(result.reason, 'tool-limit');
    assert.equal(chats().length, 2);
    assert.equal(calls.length, 1, 'the last step\'s calls are not run');
    assert.equal(chats()[0].body.tool_choice, undefined);
    assert.equal(chats()[1].body.tool_choice, 'none');
    assert.ok(chats()[1].body.tools, 'tools stay declared on the last step');
  });

  it('separates the words of successive steps', async () => {
    use([{ text: 'Let me look.', toolCalls: [{ name: 'search_products', arguments: { query: 'x' } }] }, { text: 'Found one.' }]);
    const { request, texts } = makeRequest({ tools: [SEARCH] });
    const result = await server({ url: `${srv.url}/chat/completions` }).chat(request);
    assert.equal(result.text, 'Let me look.\n\nFound one.');
    assert.equal(texts(), result.text);
  });

  it('does not send tools to a server without tools', async () => {
    use([{ text: 'ok' }]);
    const { request } = makeRequest({ tools: [SEARCH] });
    await server({ url: `${srv.url}/chat/completions`, tools: false }).chat(request);
    assert.equal(chats()[0].body.tools, undefined);
  });

  it('asks for json_schema natively with jsonSchema: true, not strict (strict rejects optional properties)', async () => {
    const schema = { title: 'Mug pick', type: 'object', properties: { name: { type: 'string' }, why: { type: 'string' } }, required: ['name'] };
    use([{ text: '{"name":"Ember"}' }]);
    const { request } = makeRequest({ prompt: 'Pick a mug', schema, system: 'Be brief.' });
    const result = await server({ url: `${srv.url}/chat/completions`, jsonSchema: true }).chat(request);
    assert.equal(result.text, '{"name":"Ember"}');
    const body = chats()[0].body;
    assert.deepEqual(body.response_format, { type: 'json_schema', json_schema: { name: 'Mug_pick', schema } });
    assert.equal(body.messages[0].content, 'Be brief.');
  });

  it('adds strict: true with jsonSchema: "strict"', async () => {
    const schema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false };
    use([{ text: '{"name":"Ember"}' }]);
    const { request } = makeRequest({ prompt: 'Pick a mug', schema });
    const provider = server({ url: `${srv.url}/chat/completions`, jsonSchema: 'strict' });
    assert.ok((await provider.detect()).capabilities.includes('structured'));
    await provider.chat(request);
    assert.deepEqual(chats()[0].body.response_format, { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } });
    assert.equal(chats()[0].body.messages[0].role, 'user', 'no schema in words when it goes natively');
  });

  it('asks for the schema in words without jsonSchema', async () => {
    const schema = { type: 'object', properties: { name: { type: 'string' } } };
    use([{ text: 'Sure.', toolCalls: [{ name: 'search_products', arguments: { query: 'x' } }] }, { text: '{"name":"Ember"}' }]);
    const { request } = makeRequest({ prompt: 'Pick a mug', schema, tools: [SEARCH] });
    const result = await server({ url: `${srv.url}/chat/completions` }).chat(request);
    assert.equal(result.text, '{"name":"Ember"}', "a schema's answer is the last step alone");
    const body = chats()[0].body;
    assert.equal(body.response_format, undefined);
    assert.equal(body.messages[0].role, 'system');
    assert.match(body.messages[0].content, /JSON Schema/);
    assert.ok(body.messages[0].content.includes(JSON.stringify(schema)));
  });

  it('sends images as data: URLs only when images: true', async () => {
    const messages = [
      { role: 'user', content: 'Earlier question' },
      { role: 'assistant', content: 'Earlier answer', metadata: { provider: 'server' } },
      { role: 'user', content: [{ type: 'text', text: 'Which mug is this?' }, { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' }] },
    ];
    use([{ text: 'a' }, { text: 'b' }]);
    await server({ url: `${srv.url}/chat/completions`, images: true }).chat(makeRequest({ messages }).request);
    await server({ url: `${srv.url}/chat/completions` }).chat(makeRequest({ messages }).request);
    const [withImages, without] = chats().map((r) => r.body.messages);
    assert.deepEqual(withImages[1], { role: 'assistant', content: 'Earlier answer' }, 'metadata stays in the page');
    assert.deepEqual(withImages[2].content, [
      { type: 'text', text: 'Which mug is this?' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
    ]);
    assert.equal(without[2].content, 'Which mug is this?');
  });

  it('adds headers from an object, or from a function called per request', async () => {
    use([{ text: 'a' }, { text: 'b' }, { text: 'c' }]);
    await server({ url: `${srv.url}/chat/completions`, headers: { 'X-Shop': 'kiln' } }).chat(makeRequest().request);
    let n = 0;
    const p = server({ url: `${srv.url}/chat/completions`, headers: async () => ({ 'X-Request': String(++n) }) });
    await p.chat(makeRequest().request);
    await p.chat(makeRequest().request);
    assert.equal(chats()[0].headers['x-shop'], 'kiln');
    assert.equal(chats()[1].headers['x-request'], '1');
    assert.equal(chats()[2].headers['x-request'], '2');
  });

  it('uses the fetch it is given', async () => {
    use([{ text: 'through my fetch' }]);
    const seen = [];
    const myFetch = (url, init) => {
      seen.push(url);
      return fetch(`${srv.url}/chat/completions`, init);
    };
    const result = await server({ url: '/api/ai/chat/completions', fetch: myFetch }).chat(makeRequest().request);
    assert.equal(result.text, 'through my fetch');
    assert.deepEqual(seen, ['/api/ai/chat/completions']);
  });
});
