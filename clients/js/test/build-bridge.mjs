// Bundles bridge()'s parts (with the errors) into test/.build/bridge.js, so their unit tests run on
// their own, whatever state the rest of the SDK is in.
//   node clients/js/test/build-bridge.mjs           (or: import { loadBridge } from './build-bridge.mjs')
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..');
export const OUT = path.join(here, '.build/bridge.js');

const ENTRY = `
export { bridge } from './src/providers/bridge/index.ts';
export { SseParser, readEventStream } from './src/providers/bridge/sse.ts';
export { TokenStore, memoryStorage, tokenKey } from './src/providers/bridge/storage.ts';
export { makeNonce, connectLink, cleanNeeds, ClaimLoop } from './src/providers/bridge/pairing.ts';
export { promptFor, nextPromptFor, schemaInstruction } from './src/providers/bridge/prompt.ts';
export { SessionStream } from './src/providers/bridge/stream.ts';
export { Engine } from './src/providers/bridge/engine.ts';
export { words, engineDetail, isTooManySessions } from './src/providers/bridge/words.ts';
export { ProviderError, abortError } from './src/errors.ts';
`;

let built;

/** Builds once per process, then imports the bundle. */
export function loadBridge() {
  built ??= build({
    stdin: { contents: ENTRY, resolveDir: root, loader: 'ts', sourcefile: 'bridge-entry.ts' },
    outfile: OUT,
    write: false,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    sourcemap: 'inline',
    logLevel: 'warning',
  }).then((result) => {
    // Written aside and renamed: test files run in parallel, and none may import a half-written file.
    const tmp = `${OUT}.${process.pid}.tmp`;
    fs.mkdirSync(path.dirname(OUT), { recursive: true });
    fs.writeFileSync(tmp, result.outputFiles[0].contents);
    fs.renameSync(tmp, OUT);
    return import(pathToFileURL(OUT).href);
  });
  return built;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await loadBridge();
  console.log(`built ${path.relative(process.cwd(), OUT)}`);
}
