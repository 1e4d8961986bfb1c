// Bundles server() and browserAI() (with the errors) into test/.build/providers.js, so their unit
// tests run on their own, whatever state the rest of the SDK is in.
//   node clients/js/test/build-providers.mjs           (or: import { loadProviders } from './build-providers.mjs')
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..');
export const OUT = path.join(here, '.build/providers.js');

const ENTRY = `
export { server } from './src/providers/server.ts';
export { browserAI } from './src/providers/browser.ts';
export { readEvents, ToolCallAssembler, errorText } from './src/providers/openai-stream.ts';
export { NoProviderError, ProviderError, abortError } from './src/errors.ts';
`;

let built;

/** Builds once per process, then imports the bundle. */
export function loadProviders() {
  built ??= build({
    stdin: { contents: ENTRY, resolveDir: root, loader: 'ts', sourcefile: 'providers-entry.ts' },
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
  await loadProviders();
  console.log(`built ${path.relative(process.cwd(), OUT)}`);
}
