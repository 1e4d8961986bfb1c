// What the machine was doing around a run, so a table says whether its figures can be trusted: load
// averages before and after, and how busy the CPUs were during one second when the bench itself ran
// nothing (from /proc/stat). Busy above 10% in that second marks the run "loaded": its figures are
// provisional and are to be measured again on a quiet machine.

import fs from 'node:fs';
import os from 'node:os';
import { sleep } from '../../tests/e2e/lib/engine.mjs';

function cpuJiffies() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + (f[4] || 0);  // idle + iowait
  return { idle, total: f.reduce((a, b) => a + b, 0) };
}

/** Busy percentage of all CPUs over `ms` while the bench sleeps. */
export async function busyPercent(ms = 1000) {
  const a = cpuJiffies();
  await sleep(ms);
  const b = cpuJiffies();
  const total = b.total - a.total;
  return total ? (100 * (total - (b.idle - a.idle))) / total : 0;
}

export async function machineBefore() {
  const busy = await busyPercent();
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    kernel: os.release(),
    loadBefore: os.loadavg(),
    idleProbeBusyPct: busy,
    loaded: busy > 10,
  };
}

export function machineAfter(m) {
  return { ...m, loadAfter: os.loadavg() };
}
