// A hand-made ProviderChatRequest for calling a provider directly, without the cascade: it
// records the events the provider emits and the tool calls it makes. Its callTool runs the tool
// and announces it (tool-call, tool-result) as the cascade's does (src/tools.ts), minus the
// validation and middleware, which are tested with the cascade. `providerEvents` keeps what the
// provider itself emitted.

/**
 * makeRequest({ prompt | messages, system, tools, schema, maxTurns, signal })
 *   → { request, events, providerEvents, calls, texts() }
 */
export function makeRequest({ prompt = 'Hello', messages, system, tools = [], schema, maxTurns = 10, signal } = {}) {
  const events = [];
  const providerEvents = [];
  const calls = [];
  const request = {
    messages: messages ?? [{ role: 'user', content: prompt }],
    system,
    tools,
    schema,
    maxTurns,
    signal: signal ?? new AbortController().signal,
    emit: (event) => {
      providerEvents.push(event);
      events.push(event);
    },
    async callTool(name, args, callId) {
      calls.push({ name, args, callId });
      events.push({ type: 'tool-call', id: callId, name, args });
      const tool = tools.find((t) => t.name === name);
      let outcome;
      if (!tool) outcome = { ok: false, error: `There is no tool named ${name}.` };
      else {
        try {
          outcome = { ok: true, result: await tool.execute(args, { provider: 'test', callId, signal: request.signal }) };
        } catch (e) {
          outcome = { ok: false, error: e.message };
        }
      }
      events.push(outcome.ok ? { type: 'tool-result', id: callId, name, result: outcome.result } : { type: 'tool-result', id: callId, name, error: outcome.error });
      return outcome;
    },
  };
  return {
    request,
    events,
    providerEvents,
    calls,
    /** The streamed text, joined. */
    texts: () => events.filter((e) => e.type === 'text').map((e) => e.text).join(''),
  };
}
