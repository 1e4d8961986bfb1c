// Shared helpers for the leuria end-to-end tests (LEURIA_BIN, default build/leuria, over real sockets).
// A thin entry point: the helpers live in tests/e2e/lib/ and are all re-exported here.
//   engine.mjs    constants, env, LEURIA_HOME files, startEngine / stopAll / runCli
//   http.mjs      request + web/local/own/admin, rawHttp / rawSend, the SSE reader openStream
//   checks.mjs    response assertions, poll, closedPort / busyPort
//   pairing.mjs   nonce, freshOrigin, claims, pairCli / pairApp, grants.json helpers
//   sessions.mjs  fake ACP agent config and engine, sessionApi, process checks
//   page.mjs      WebSockets, PageChannel / pageSession, MCP clients
//   embed.mjs     embeddings: hermetic providers.json, the Ollama / LM Studio fakes, /embed calls and checks
//   sdk-page.mjs  the SDK in headless Chromium: a site serving clients/js/dist, the approval click (import it directly)

export * from './lib/engine.mjs';
export * from './lib/http.mjs';
export * from './lib/checks.mjs';
export * from './lib/pairing.mjs';
export * from './lib/sessions.mjs';
export * from './lib/page.mjs';
export * from './lib/embed.mjs';
