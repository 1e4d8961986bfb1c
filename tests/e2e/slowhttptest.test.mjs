// slowhttptest (Debian's, issue 7 "Hostile bytes"): slow headers (slowloris, -H), slow bodies
// (R-U-Dead-Yet, -B) and slow reads (-X) against the engine, a few hundred connections each, with a
// lowered connection cap and short deadlines, while a real client keeps being served. slowhttptest's
// own probe ("service available", from its CSV) must stay up every second, every request of our
// client must be answered, and the engine must never hold more connections than its cap.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEngine, stopAll } from './helpers.mjs';
import { engineUsage, percentiles, sampleUsage, serveClient, timedHealth } from './lib/load.mjs';

const CAP = 64;
const TIMINGS = { maxConnections: CAP, headerTimeoutMs: 2000, bodyTimeoutMs: 2000, idleTimeoutMs: 2000 };
// 300 connections at 60 a second: five seconds of arrivals, each held until the engine closes it.
const COMMON = ['-c', '300', '-r', '60', '-i', '1', '-l', '10', '-p', '3'];
const MODES = [
  { flag: '-H', name: 'slow headers (slowloris)', args: [] },
  { flag: '-B', name: 'slow bodies (R-U-Dead-Yet)', args: [] },
  // Ten pipelined requests a connection, read 32 bytes a second through a window of at most 64.
  { flag: '-X', name: 'slow reads', args: ['-k', '10', '-n', '1', '-w', '1', '-y', '64', '-z', '32'] },
];

/** slowhttptest's CSV: [{seconds, closed, pending, connected, available}] (available: 0 when the probe failed). */
function parseCsv(text) {
  const [head, ...rows] = text.trim().split('\n');
  assert.equal(head.trim(), 'Seconds,Closed,Pending,Connected,Service Available', `CSV header: ${head}`);
  return rows.map((r) => {
    const [seconds, closed, pending, connected, available] = r.split(',').map(Number);
    return { seconds, closed, pending, connected, available };
  });
}

/** Run slowhttptest to its end. Resolves {code, output (without colour codes), rows}. */
function slowhttptest(args, prefix) {
  const proc = spawn('slowhttptest', [...args, '-g', '-o', prefix], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout.on('data', (d) => (output += d));
  proc.stderr.on('data', (d) => (output += d));
  const timer = setTimeout(() => proc.kill('SIGKILL'), 60000);
  return new Promise((resolve, reject) => {
    proc.on('error', reject);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      output = output.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
      let rows = [];
      try {
        rows = parseCsv(fs.readFileSync(`${prefix}.csv`, 'utf8'));
      } catch (e) {
        return reject(new Error(`no CSV from slowhttptest (exit ${code}): ${e.message}\n${output}`));
      }
      resolve({ code, output, rows });
    });
  });
}

describe('slowhttptest', { timeout: 180000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leuria-slowhttptest-'));
  after(async () => {
    await stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('slowhttptest is installed', () => {
    const r = spawnSync('slowhttptest', ['-h']);
    assert.ok(!r.error, 'slowhttptest is not installed (apt-get install slowhttptest; scripts/test installs it)');
  });

  for (const mode of MODES) {
    it(`${mode.name} (${mode.flag}): a real client is served, the probe stays up, the cap holds`, async (t) => {
      const eng = await startEngine({ timings: TIMINGS });
      const base = engineUsage(eng);
      const sampler = sampleUsage(eng, 100);
      const run = slowhttptest([mode.flag, ...COMMON, ...mode.args, '-u', `${eng.base}/health`], path.join(dir, mode.flag.slice(1)));
      const served = await serveClient({ health: timedHealth(eng, { timeoutMs: 5000 }) }, { until: run, healthEveryMs: 100 });
      const { code, output, rows } = await run;
      const { samples, ...peak } = sampler.stop();
      const last = rows.at(-1);
      const lat = percentiles(served.health);
      t.diagnostic(`slowhttptest: ${output.match(/Exit status:.*$/m)?.[0]}; last second ${JSON.stringify(last)}`);
      t.diagnostic(`client: ${JSON.stringify(lat)} ms; engine descriptors ${base.fds} before, ${peak.fds} at most`);

      assert.equal(code, 0, output);
      assert.ok(rows.length >= 4, `slowhttptest ran for ${rows.length} s:\n${output}`);
      assert.ok(Math.max(...rows.map((r) => r.connected)) >= CAP, `slowhttptest reached the cap: ${JSON.stringify(rows)}`);
      const down = rows.filter((r) => r.available === 0);
      assert.deepEqual(down, [], `slowhttptest's probe found the service unavailable: ${JSON.stringify(rows)}`);
      assert.match(output, /service available:\s+YES/);
      assert.deepEqual(served.errors, [], 'every request of the real client answered');
      assert.ok(lat.n >= 20, `the client was served ${lat.n} times`);
      assert.ok(lat.p99 < 2000, `client p99 ${lat.p99} ms`);
      // Never more connections than the cap (plus one just accepted, about to be closed or to take a slot).
      assert.ok(peak.fds <= base.fds + CAP + 4, `engine descriptors: ${base.fds} before, ${peak.fds} at most (cap ${CAP})`);
      assert.ok(eng.stderrLines.some((l) => l.includes('event=listener.at_cap')), 'the cap was reached');
      if (mode.flag !== '-X') assert.ok(last.closed >= 300 - CAP, `the engine closed the slow connections: ${JSON.stringify(last)}`);
      await eng.stop();
    });
  }
});
