// wrk, pinned, with bench/lib/wrk-report.lua for exact figures. One wrk thread: the client then
// occupies exactly the one CPU it is pinned to (a latency run shares CPU 0 with the server on purpose,
// a throughput run has CPU 1 to itself).

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runPinned } from './proc.mjs';

const REPORT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'wrk-report.lua');

/**
 * runWrk({url, connections, durationS, cpu, timeoutS=10, headers={}})
 * Resolves {requests, bytes (received), durationS, rps, errors (sum), errorsBy, latency: {p50_us, p99_us, min_us, max_us,
 * mean_us, dist: [[pct, us]]}}. Non-2xx/3xx answers count as errors (wrk's "status").
 */
export async function runWrk({ url, connections, durationS, cpu, timeoutS = 10, headers = {} }) {
  const args = ['-t1', `-c${connections}`, `-d${durationS}s`, `--timeout`, `${timeoutS}s`, '-s', REPORT];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  args.push(url);
  const r = await runPinned('wrk', args, { cpu, timeoutMs: (durationS + timeoutS + 30) * 1000 });
  const line = r.stdout.split('\n').find((l) => l.startsWith('WRKJSON '));
  if (r.code !== 0 || !line) throw new Error(`wrk ${args.join(' ')} failed (${r.code}):\n${r.stdout}\n${r.stderr}`);
  const j = JSON.parse(line.slice(8));
  const dist = j.latency.dist;
  const at = (p) => dist.find(([q]) => q === p)?.[1] ?? null;
  const durS = j.duration_us / 1e6;
  return {
    requests: j.requests,
    bytes: j.bytes,
    durationS: durS,
    rps: j.requests / durS,
    errors: Object.values(j.errors).reduce((a, b) => a + b, 0),
    errorsBy: j.errors,
    latency: { p50_us: at(50), p99_us: at(99), min_us: j.latency.min, max_us: j.latency.max, mean_us: j.latency.mean, dist },
  };
}
