// bridge()'s parts (with the errors), for their unit tests: import { loadBridge } from './build-bridge.mjs'.
import { bundleForTests } from './bundle-for-tests.mjs';

export const loadBridge = () => bundleForTests('bridge', `
export { bridge } from './src/providers/bridge/index.ts';
export { SseParser, readEventStream } from './src/providers/bridge/sse.ts';
export { TokenStore, memoryStorage, tokenKey } from './src/providers/bridge/storage.ts';
export { makeNonce, connectLink, cleanNeeds, ClaimLoop } from './src/providers/bridge/pairing.ts';
export { promptFor, nextPromptFor, schemaInstruction } from './src/providers/bridge/prompt.ts';
export { SessionStream } from './src/providers/bridge/stream.ts';
export { Engine } from './src/providers/bridge/engine.ts';
export { words, engineDetail, isTooManySessions } from './src/providers/bridge/words.ts';
export { ProviderError, abortError } from './src/errors.ts';
`);
