// Paths of the bench, settled before anything else is imported: tests/e2e/lib/engine.mjs reads
// LEURIA_BIN once when it is loaded, so bench/run.mjs imports this module first.

import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BUILD = path.join(ROOT, 'build-bench');
export const FLOORS = path.join(BUILD, 'floors');
export const CLIENTS = path.join(BUILD, 'clients');  // bench/clients/*.c, built by bench/run
export const FAKES = path.join(BUILD, 'fakes');  // bench/fakes/*.c, built by bench/run
export const RESULTS = path.join(ROOT, 'bench/results');

// The release engine of build-bench/, unless the caller names another binary.
process.env.LEURIA_BIN ||= path.join(BUILD, 'leuria');
export const LEURIA_BIN = process.env.LEURIA_BIN;
