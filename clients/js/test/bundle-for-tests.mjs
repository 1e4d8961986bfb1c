// Bundles parts of the SDK's TypeScript for unit tests that need more than the public bundle
// (dist/leuria.js) exports: `entry` is a few `export … from './src/….ts'` lines. The bundle goes
// to test/.build/<name>.js, written aside and renamed (test files run in parallel, and none may
// import a half-written file), once per process per name.
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '..');
const built = new Map();

export function bundleForTests(name, entry) {
  if (!built.has(name)) {
    const out = path.join(here, `.build/${name}.js`);
    built.set(name, build({
      stdin: { contents: entry, resolveDir: root, loader: 'ts', sourcefile: `${name}-entry.ts` },
      outfile: out,
      write: false,
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      target: 'es2022',
      sourcemap: 'inline',
      logLevel: 'warning',
    }).then((result) => {
      const tmp = `${out}.${process.pid}.tmp`;
      fs.mkdirSync(path.dirname(out), { recursive: true });
      fs.writeFileSync(tmp, result.outputFiles[0].contents);
      fs.renameSync(tmp, out);
      return import(pathToFileURL(out).href);
    }));
  }
  return built.get(name);
}
