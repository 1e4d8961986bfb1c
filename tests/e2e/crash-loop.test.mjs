// Crashes: an engine killed with SIGKILL at random moments, in the middle of pairings and
// revocations, never loses a change it acknowledged and never leaves a torn grants.json or a pile
// of temp files.
//
// Each round starts the engine on the same LEURIA_HOME (app mode with --dev-pairing, or CLI mode
// with its approval page), runs pairings (link or claim, the visitor's Yes, the page collecting its
// token) and revocations (admin API or `leuria sites revoke`) two at a time, and kills the engine
// after a random delay, sometimes a few microseconds after a write request was sent. The next
// round's start checks the home against what was acknowledged.
//
// LEURIA_CRASH_ITERATIONS sets the number of rounds (default 200, 100 with the ASan build);
// LEURIA_CRASH_SEED replays a run (the seed is printed).

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import {
  startEngine, stopAll, runCli, makeHome, writeHomeFiles, hermetic, admin, own, web, claim, nonce, sha256hex,
  claimUntilDecided, TOKEN_RE, APPROVE_RE,
} from './helpers.mjs';
import { SANITIZED, crashSeed, seededRandom, killHard, tempFiles, readStrictJson } from './lib/crash.mjs';

const ITERATIONS = Number(process.env.LEURIA_CRASH_ITERATIONS) || (SANITIZED ? 100 : 200);
const SEED = crashSeed();
const ORIGINS = Array.from({ length: 10 }, (_, i) => `https://crash-${i}.example`);
const WORKERS = 2;

// What the test was told, per origin: granted (hash known once the token was collected) or not,
// and the change in flight when the engine died (it may or may not have happened).
class Model {
  constructor() {
    this.sites = new Map(ORIGINS.map((o) => [o, { granted: false, hash: null, token: null, inflight: null, busy: false }]));
  }
  site(o) {
    return this.sites.get(o);
  }
  // Compares the file with what was acknowledged, then takes the file as the truth for changes
  // that were in flight.
  check(file, where) {
    const entries = new Map((file?.grants || []).map((g) => [g.origin, g]));
    for (const origin of entries.keys()) assert.ok(this.sites.has(origin), `${where}: unknown origin ${origin} in grants.json`);
    for (const [origin, s] of this.sites) {
      const g = entries.get(origin);
      const ctx = `${where}: ${origin} (acknowledged ${s.granted ? `granted${s.hash ? ' with a known token' : ''}` : 'not granted'}, in flight: ${s.inflight})`;
      const asAcked = s.granted ? !!g && (!s.hash || g.tokenHash === s.hash) : !g;
      if (s.inflight === 'grant') assert.ok(asAcked || !!g, `${ctx}: lost`);
      else if (s.inflight === 'revoke') assert.ok(asAcked || !g, `${ctx}: lost`);
      else assert.ok(asAcked, `${ctx}: an acknowledged change was lost; file entry: ${JSON.stringify(g)}`);
      if (g && g.tokenHash !== s.hash) Object.assign(s, { granted: true, hash: null, token: null });
      if (!g) Object.assign(s, { granted: false, hash: null, token: null });
      s.inflight = null;
    }
  }
}

describe('crash loop: SIGKILL during pairings and revocations', { timeout: SANITIZED ? 900000 : 300000 }, () => {
  after(stopAll);

  it(`keeps every acknowledged change over ${ITERATIONS} kills (seed ${SEED})`, async () => {
    console.log(`crash-loop: seed=${SEED} iterations=${ITERATIONS} (replay with LEURIA_CRASH_SEED=${SEED})`);
    const rnd = seededRandom(SEED);
    const pick = (list) => list[Math.floor(rnd() * list.length)];
    const home = await makeHome();
    await writeHomeFiles(home, { 'providers.json': { providers: await hermetic([]) } });
    const model = new Model();
    const stats = { acked: 0, inflightAtKill: 0, tempAtKill: 0, cliMode: 0, ms: Date.now() };

    try {
      for (let round = 0; round < ITERATIONS; round++) {
        const where = `round ${round} (seed ${SEED})`;
        const cliMode = rnd() < 0.25;
        if (cliMode) stats.cliMode++;
        const eng = await startEngine({ home, devPairing: !cliMode, readyTimeoutMs: 30000 });

        // At start: the file is whole, the killed writer's temp file is gone, and what was
        // acknowledged is there.
        assert.deepEqual(tempFiles(home), [], `${where}: temp files left after the start`);
        model.check(readStrictJson(home, 'grants.json'), `${where}, at start`);
        await checkTokens(eng, model, where);

        let killed = false;
        const kill = () => {
          if (killed) return;
          killed = true;
          eng.proc.kill('SIGKILL');
        };
        const killAfter = rnd() < 0.5 ? rnd() * 40 : rnd() * 250;
        const timer = setTimeout(kill, killAfter);
        // Sometimes the kill lands a few microseconds after a write request left.
        const maybeKillSoon = () => {
          if (rnd() < 0.12) setTimeout(kill, rnd() * 3);
        };
        const ops = { eng, cliMode, home, model, rnd, pick, maybeKillSoon, isKilled: () => killed, stats, where };
        try {
          await Promise.all(Array.from({ length: WORKERS }, () => worker(ops)));
        } finally {
          clearTimeout(timer);
          kill();
          await killHard(eng);
        }

        if (tempFiles(home).length) stats.tempAtKill++;
        stats.inflightAtKill += [...model.sites.values()].filter((x) => x.inflight).length;
        readStrictJson(home, 'grants.json');  // never torn, even before the next start
        readStrictJson(home, 'config.json');
      }
      const eng = await startEngine({ home, devPairing: true, readyTimeoutMs: 30000 });
      model.check(readStrictJson(home, 'grants.json'), 'after the last round');
      await checkTokens(eng, model, 'after the last round');
      assert.deepEqual(tempFiles(home), []);
      await eng.stop();
    } finally {
      stats.ms = Date.now() - stats.ms;
      console.log(`crash-loop: ${JSON.stringify(stats)}`);
      await fsp.rm(home, { recursive: true, force: true });
    }
    assert.ok(stats.acked >= ITERATIONS / 2, `too few acknowledged changes to mean anything: ${JSON.stringify(stats)}`);
  });
});

// A collected token works after the restart, and a revoked one doesn't.
async function checkTokens(eng, model, where) {
  for (const [origin, s] of model.sites) {
    if (!s.token) continue;
    const h = await web(eng, origin, '/health', { token: s.token });
    assert.equal(h.json?.paired === true, s.granted, `${where}: ${origin}'s token after the restart: ${h.status} ${h.body}`);
    if (!s.granted) s.token = null;  // checked once
  }
}

// Runs changes until the engine is killed. A failure while the engine is alive fails the test;
// after the kill, the change in flight stays "maybe".
async function worker(ops) {
  const { model, rnd, pick, cliMode, isKilled } = ops;
  while (!isKilled()) {
    const free = ORIGINS.filter((o) => !model.site(o).busy && !model.site(o).inflight);
    if (!free.length) return;
    const granted = free.filter((o) => model.site(o).granted);
    const origin = granted.length && rnd() < 0.45 ? pick(granted) : pick(free);
    const s = model.site(origin);
    const byCli = cliMode || rnd() < 0.3;
    s.busy = true;
    try {
      if (s.granted && rnd() < 0.7) await (byCli ? revokeByCli(ops, origin) : revokeByAdmin(ops, origin));
      else await pair(ops, origin);
    } catch (e) {
      // A refused connection or a cut answer is the kill; a wrong answer never is.
      if (!isKilled() || e instanceof assert.AssertionError) {
        await new Promise((r) => setTimeout(r, 300));
        throw new Error(`${ops.where}: ${origin} (${s.step}): ${e.stack || e}\nengine: ${JSON.stringify(ops.eng.exitInfo)}\n${ops.eng.stderrLines.slice(-15).join('\n')}`);
      }
    } finally {
      s.busy = false;
    }
  }
}

async function pair(ops, origin) {
  const { eng, cliMode, model, maybeKillSoon, stats } = ops;
  const s = model.site(origin);
  const body = { nonce: nonce() };
  s.inflight = 'grant';
  s.step = 'link';
  let claimed;
  if (cliMode) {
    // Two workers claim at once: each waits for the approval line naming its own origin.
    const from = eng.lines.length;
    claimed = claim(eng, origin, body);
    claimed.catch(() => {});
    const line = await eng.waitForLine((l) => l.startsWith(`${origin} asks`) && APPROVE_RE.test(l), 10000, { from });
    const requestId = APPROVE_RE.exec(line)[2];
    maybeKillSoon();
    const d = await own(eng, `/connect/${requestId}/decide`, { body: { allow: true } });
    assert.equal(d.status, 200, `decide: ${d.status} ${d.body}`);
  } else {
    const l = await admin(eng, '/admin/pairing/link', { body: { origin, ...body } });
    assert.equal(l.status, 201, `link: ${l.status} ${l.body}`);
    maybeKillSoon();
    s.step = 'decide';
    const d = await admin(eng, `/admin/pairing/${l.json.requestId}`, { body: { allow: true } });
    assert.equal(d.status, 200, `decide: ${d.status} ${d.body}`);
  }
  // The Yes is acknowledged: on disk now, with a token the page has yet to collect.
  Object.assign(s, { granted: true, hash: null, token: null, inflight: null });
  stats.acked++;
  s.step = 'collect';
  const res = await claimUntilDecided(eng, origin, body, claimed ?? claim(eng, origin, body));
  assert.equal(res.json?.status, 'allowed', `claim: ${res.status} ${res.body}`);
  assert.match(res.json.token, TOKEN_RE);
  Object.assign(s, { hash: sha256hex(res.json.token), token: res.json.token });
}

async function revokeByAdmin(ops, origin) {
  const { eng, model, maybeKillSoon, stats } = ops;
  const s = model.site(origin);
  s.inflight = 'revoke';
  s.step = 'revoke';
  const pending = admin(eng, `/admin/sites?origin=${encodeURIComponent(origin)}`, { method: 'DELETE' });
  maybeKillSoon();
  const r = await pending;
  assert.equal(r.status, 200, `revoke: ${r.status} ${r.body}`);
  assert.equal(r.json?.removed, true, `revoke: ${r.body}`);
  Object.assign(s, { granted: false, hash: null, inflight: null });
  stats.acked++;
}

async function revokeByCli(ops, origin) {
  const { home, model, stats } = ops;
  const s = model.site(origin);
  s.inflight = 'revoke';
  // The CLI isn't killed: its answer always counts, whatever happened to the engine meanwhile.
  const r = await runCli(['sites', 'revoke', origin], { home, timeoutMs: 30000 });
  assert.equal(r.code, 0, `leuria sites revoke: ${r.code} ${r.stderr}`);
  assert.equal(r.stdout.trim(), `Revoked ${origin}.`);
  Object.assign(s, { granted: false, hash: null, inflight: null });
  stats.acked++;
}
