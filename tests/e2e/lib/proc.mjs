// /proc checks for the hardening tests: what an engine leaves behind after a session ends.
//   childrenOf(pid)        its direct children (every thread's /proc/<pid>/task/*/children)
//   descendantsOf(pid)     children, grandchildren, ... (a scan of /proc/*/stat ppids)
//   zombiesOf(pid)         its children in state Z (a zombie is the parent's to reap)
//   fdCount(pid)           how many descriptors it holds
//   procLeftovers(pid, …)  all of the above against a baseline, polled until clean (assertNoLeftovers)
//   assertServes(eng, …)   and the engine still serves: a well-behaved session completes a turn

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { poll } from './checks.mjs';
import { procStat, startSessionTurn } from './sessions.mjs';

/** Direct children of `pid`, from every thread's children list (sorted; [] when it is gone). */
export function childrenOf(pid) {
  const out = new Set();
  let tasks = [];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  for (const t of tasks) {
    try {
      for (const c of fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').split(/\s+/).filter(Boolean)) out.add(Number(c));
    } catch {}
  }
  return [...out].sort((a, b) => a - b);
}

/** Every live process below `pid` (by ppid), depth first. */
export function descendantsOf(pid) {
  const byParent = new Map();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const st = procStat(name);
    if (!st) continue;
    if (!byParent.has(st.ppid)) byParent.set(st.ppid, []);
    byParent.get(st.ppid).push(Number(name));
  }
  const out = [];
  const walk = (p) => {
    for (const c of byParent.get(p) || []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/** Children of `pid` that are zombies (exited, never reaped). */
export function zombiesOf(pid) {
  return childrenOf(pid).filter((c) => procStat(c)?.state === 'Z');
}

/** The number of open descriptors of `pid`. */
export function fdCount(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

/** Descriptor targets of `pid` ({fd: "socket:[…]" | "pipe:[…]" | path}), for failure messages. */
export function fdTargets(pid) {
  const link = (fd) => {
    try {
      return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      return '(closed)';
    }
  };
  return Object.fromEntries(fs.readdirSync(`/proc/${pid}/fd`).map((fd) => [fd, link(fd)]));
}

/**
 * Whether `pid` no longer runs: gone, or a zombie that is not `enginePid`'s to reap (re-parented to
 * PID 1 or a subreaper, which in some containers never reaps).
 */
export function stoppedFor(pid, enginePid) {
  const st = procStat(pid);
  return !st || (st.state === 'Z' && st.ppid !== enginePid);
}

/**
 * What `enginePid` leaves behind beyond `baseline` ({fds} from fdCount, taken while idle): children
 * other than `allowChildren`, zombies, extra descriptors, and `pids` (an agent's descendants) still
 * running. Returns null when clean, else a description.
 */
export function procLeftovers(enginePid, { baseline, pids = [], allowChildren = [] } = {}) {
  const problems = [];
  const children = childrenOf(enginePid).filter((c) => !allowChildren.includes(c));
  const zombies = zombiesOf(enginePid);
  if (zombies.length) problems.push(`zombies of the engine: ${zombies}`);
  const running = children.filter((c) => !zombies.includes(c));
  if (running.length) problems.push(`children of the engine: ${running.map((c) => `${c} ${JSON.stringify(procStat(c))}`)}`);
  const left = pids.filter((p) => !stoppedFor(p, enginePid));
  if (left.length) problems.push(`still running: ${left.map((p) => `${p} ${JSON.stringify(procStat(p))}`)}`);
  if (baseline && fdCount(enginePid) > baseline.fds) {
    problems.push(`descriptors: ${fdCount(enginePid)} > ${baseline.fds} at the start: ${JSON.stringify(fdTargets(enginePid))}`);
  }
  return problems.length ? problems.join('; ') : null;
}

/** Polls procLeftovers until clean (a short poll: exits, drains and closes take a moment). */
export async function assertNoLeftovers(enginePid, opts = {}, timeoutMs = 8000) {
  let last = null;
  const clean = await poll(() => {
    last = procLeftovers(enginePid, opts);
    return last === null;
  }, { timeoutMs, intervalMs: 100 });
  assert.ok(clean, `the engine left something behind: ${last}`);
}

/**
 * A well-behaved session on `eng` (its default AI, which must answer `prompt` with `text`) completes a
 * turn and is closed.
 */
export async function assertServes(eng, { prompt = 'are you there?', text = 'fine', timeoutMs = 15000 } = {}) {
  const { api, id, stream } = await startSessionTurn(eng, { prompt });
  const tc = await stream.waitFor('turn_completed', timeoutMs);
  assert.equal(tc.data.text, text);
  assert.equal((await api.close(id)).status, 200);
  await stream.waitForEnd();
}
