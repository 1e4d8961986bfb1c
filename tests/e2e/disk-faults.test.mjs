// The disk: a full disk or an I/O error while saving grants fails closed, with a plain sentence for
// the person and the system's reason in the log; the old grants.json is left as it was and the
// engine keeps serving. Faults are injected with strace (attached to the running engine, or
// running the CLI) on the grants temp file only (-P), or on the folder's fsync.
//
// Also here: the engine listens on 127.0.0.1 only (every listening socket of its pid, from /proc),
// and a port taken by a program listening on all addresses makes it exit with one sentence.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  startEngine, stopAll, runCli, makeHome, writeHomeFiles, hermetic, admin, own, web, claim, nonce, pairApp, pairCli,
  freshOrigin, APPROVE_RE,
} from './helpers.mjs';
import { straceUnavailable, straceAttach, runCliTraced, tempFiles, listeningSockets, SANITIZED } from './lib/crash.mjs';

const NO_STRACE = straceUnavailable();
const NOT_SAVED_PAIR =
  'Leuria could not save this connection to disk, so the site is not connected. Check that the disk has free space, then try again.';
const NOT_SAVED_REVOKE =
  'Leuria could not save the change to disk, so the site is still connected. Check that the disk has free space, then try again.';

// Each fault: strace's filter and injection, and the system's reason the log must carry.
const FAULTS = [
  { name: 'disk full when creating the temp file', on: 'tmp', inject: 'openat:error=ENOSPC', reason: 'No space left on device' },
  { name: 'disk full while writing', on: 'tmp', inject: 'write:error=ENOSPC', reason: 'No space left on device' },
  { name: 'I/O error on fsync of the file', on: 'tmp', inject: 'fsync:error=EIO', reason: 'Input/output error' },
  { name: 'I/O error on rename', on: 'tmp', inject: 'rename:error=EIO', reason: 'Input/output error' },
  { name: 'I/O error on fsync of the folder', on: 'home', inject: 'fsync:error=EIO', reason: 'Input/output error' },
];

const faultArgs = (home, f) => ['-P', f.on === 'tmp' ? path.join(home, 'grants.json.tmp') : home, '-e', `inject=${f.inject}`];
const grantsText = (home) => fs.readFileSync(path.join(home, 'grants.json'), 'utf8');
// The grants without lastUsedAt, which a token's use may note.
const grantsSeen = (home) => JSON.parse(grantsText(home)).grants.map(({ lastUsedAt, ...g }) => g);
const saveFailures = (eng) => eng.stderrLines.filter((l) => /event=grant\.save_failed/.test(l));

async function paired(eng, origin, token) {
  return (await web(eng, origin, '/health', { token })).json?.paired === true;
}

async function hermeticHome() {
  const home = await makeHome();
  await writeHomeFiles(home, { 'providers.json': { providers: await hermetic([]) } });
  return home;
}

describe('disk faults: saving grants fails closed', { skip: NO_STRACE || false, timeout: SANITIZED ? 600000 : 180000 }, () => {
  const homes = [];
  after(async () => {
    await stopAll();
    for (const h of homes) fs.rmSync(h, { recursive: true, force: true });
  });

  describe('the engine (admin API), strace attached', () => {
    let eng;
    let home;
    let kept;  // a connected site, whose token must keep working
    before(async () => {
      home = await hermeticHome();
      homes.push(home);
      eng = await startEngine({ home, devPairing: true, readyTimeoutMs: 30000 });
      const origin = freshOrigin('kept');
      kept = { origin, ...(await pairApp(eng, origin)) };
    });

    for (const f of FAULTS) {
      it(`${f.name}: the Yes and the revocation are refused, nothing changes, the engine serves`, async () => {
        const beforeSeen = grantsSeen(home);
        const unused = freshOrigin('unused');
        const fresh = await pairApp(eng, unused);  // a token not yet used: its first use notes lastUsedAt
        const before = grantsText(home);
        const failuresBefore = saveFailures(eng).length;
        const site = freshOrigin('refused');
        const n = nonce();
        const link = await admin(eng, '/admin/pairing/link', { body: { origin: site, nonce: n } });
        assert.equal(link.status, 201, link.body);

        const trace = await straceAttach(eng.proc.pid, faultArgs(home, f));
        let yes;
        let revoke;
        let traced;
        try {
          yes = await admin(eng, `/admin/pairing/${link.json.requestId}`, { body: { allow: true } });
          revoke = await admin(eng, `/admin/sites?origin=${encodeURIComponent(kept.origin)}`, { method: 'DELETE' });
          // A connected site keeps working: the lastUsedAt note that can't be written is skipped.
          assert.ok(await paired(eng, unused, fresh.token), 'a connected site must keep working on a full disk');
          traced = trace.log();
        } finally {
          await trace.detach();
        }
        assert.match(traced, /INJECTED/, `strace injected nothing:\n${traced}`);

        // The person is told, plainly; nothing is acknowledged.
        assert.equal(yes.status, 503, yes.body);
        assert.deepEqual(yes.json, { error: NOT_SAVED_PAIR, code: 'not_saved' });
        assert.equal(revoke.status, 503, revoke.body);
        assert.deepEqual(revoke.json, { error: NOT_SAVED_REVOKE, code: 'not_saved' });
        // The log says why, with the system's words.
        const logged = saveFailures(eng).slice(failuresBefore);
        assert.equal(logged.length, 2, eng.stderrLines.slice(-10).join('\n'));
        for (const l of logged) assert.ok(l.includes(f.reason), `log line without the reason "${f.reason}": ${l}`);

        // The old file is intact, no temp file is left, and memory agrees with the file.
        assert.equal(grantsText(home), before);
        assert.deepEqual(tempFiles(home), []);
        assert.ok(await paired(eng, kept.origin, kept.token), 'the site whose revocation failed must still work');
        const c = await claim(eng, site, { nonce: n });
        assert.equal(c.json?.status, 'pending', `the refused site must not be connected: ${c.body}`);

        // Once the disk works again, the same question can be answered, and the engine serves on.
        const again = await admin(eng, `/admin/pairing/${link.json.requestId}`, { body: { allow: true } });
        assert.equal(again.status, 200, again.body);
        const collected = await claim(eng, site, { nonce: n });
        assert.equal(collected.json?.status, 'allowed', collected.body);
        assert.ok(await paired(eng, site, collected.json.token));
        for (const o of [site, unused]) {
          const gone = await admin(eng, `/admin/sites?origin=${encodeURIComponent(o)}`, { method: 'DELETE' });
          assert.deepEqual([gone.status, gone.json], [200, { removed: true }]);
        }
        assert.deepEqual(grantsSeen(home), beforeSeen);
      });
    }
  });

  it("the CLI engine's approval page says the Yes could not be saved, and the question stays open", async () => {
    const home = await hermeticHome();
    homes.push(home);
    const eng = await startEngine({ home, readyTimeoutMs: 30000 });
    await pairCli(eng, freshOrigin('first'));  // grants.json exists
    const before = grantsText(home);
    const site = freshOrigin('page');
    const body = { nonce: nonce() };
    const from = eng.lines.length;
    const pending = claim(eng, site, body);
    const requestId = APPROVE_RE.exec(await eng.waitForLine(APPROVE_RE, 10000, { from }))[2];
    assert.equal((await pending).json?.status, 'pending');

    const f = FAULTS[1];
    const trace = await straceAttach(eng.proc.pid, faultArgs(home, f));
    let d;
    try {
      d = await own(eng, `/connect/${requestId}/decide`, { body: { allow: true } });
    } finally {
      await trace.detach();
    }
    assert.equal(d.status, 503, d.body);
    assert.equal(d.json?.error, NOT_SAVED_PAIR);
    assert.ok(saveFailures(eng).some((l) => l.includes(f.reason)));
    assert.equal(grantsText(home), before);
    // The page shows the engine's sentence and lets the visitor answer again.
    const script = await own(eng, '/connect/assets/approve.js', { method: 'GET' });
    assert.match(script.body, /r\.status === 503/);
    const state = await own(eng, `/connect/${requestId}/state`, { method: 'GET' });
    assert.equal(state.json?.status, 'pending', state.body);
    const ok = await own(eng, `/connect/${requestId}/decide`, { body: { allow: true } });
    assert.equal(ok.status, 200, ok.body);
    assert.equal((await claim(eng, site, body)).json?.status, 'allowed');
    await eng.stop();
  });

  describe('leuria sites revoke, under strace', () => {
    for (const f of FAULTS) {
      it(`${f.name}: exits 1 with one sentence, the file unchanged`, async () => {
        const home = await hermeticHome();
        homes.push(home);
        const origin = 'https://kept.example';
        const entry = { origin, tokenHash: 'a'.repeat(64), createdAt: '2026-01-01T00:00:00.000Z' };
        await writeHomeFiles(home, { 'grants.json': JSON.stringify({ grants: [entry] }) + '\n' });
        const before = grantsText(home);
        const r = await runCliTraced(faultArgs(home, f), ['sites', 'revoke', origin], { home });
        assert.match(r.trace, /INJECTED/, `strace injected nothing:\n${r.trace}`);
        assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
        assert.equal(r.stdout, '', 'nothing acknowledged');
        const lines = r.stderr.split('\n').filter(Boolean);
        assert.equal(lines.length, 1, r.stderr);
        assert.match(lines[0], new RegExp(`^leuria: Could not revoke ${origin.replace(/\./g, '\\.')} \\(.*${f.reason}\\); it stays connected\\. Check that the disk has free space, then try again\\.$`));
        assert.equal(grantsText(home), before);
        assert.deepEqual(tempFiles(home), []);
        // Without the fault, the same command works.
        const ok = await runCli(['sites', 'revoke', origin], { home });
        assert.equal(ok.code, 0, ok.stderr);
      });
    }
  });
});

describe('listening', { timeout: 60000 }, () => {
  after(stopAll);

  for (const mode of ['cli', 'app']) {
    it(`every listening socket of the ${mode} engine is on 127.0.0.1`, async () => {
      const eng = await startEngine({ app: mode === 'app', readyTimeoutMs: 30000 });
      const sockets = listeningSockets(eng.proc.pid);
      assert.deepEqual(sockets, [{ family: 'tcp', ip: '127.0.0.1', port: eng.port }]);
      await eng.stop();
    });
  }

  it('a port taken by a program listening on every address: exit 1 with one sentence', async () => {
    // Node's default listen is [::] with IPv4 mapped: it holds 0.0.0.0 too.
    const other = net.createServer((s) => s.destroy());
    await new Promise((r) => other.listen(0, r));
    try {
      const { port } = other.address();
      const r = await runCli(['--port', String(port), '--no-open'], { timeoutMs: 15000 });
      assert.equal(r.timedOut, false, 'the engine kept running');
      assert.equal(r.code, 1, r.stderr);
      assert.equal(
        r.stderr.trim(),
        `leuria: Port ${port} is already in use; stop the program using it or choose another port with --port.`,
      );
      assert.equal(r.stdout, '');
    } finally {
      await new Promise((r) => other.close(r));
    }
  });
});
