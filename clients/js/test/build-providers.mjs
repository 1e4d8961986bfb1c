// server() and browserAI() (with the errors), for their unit tests: import { loadProviders } from './build-providers.mjs'.
import { bundleForTests } from './bundle-for-tests.mjs';

export const loadProviders = () => bundleForTests('providers', `
export { server } from './src/providers/server.ts';
export { browserAI } from './src/providers/browser.ts';
export { readEvents, ToolCallAssembler, errorText } from './src/providers/openai-stream.ts';
export { NoProviderError, ProviderError, abortError } from './src/errors.ts';
`);
