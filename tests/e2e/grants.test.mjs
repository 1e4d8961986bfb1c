// grants.json on disk, `leuria sites`, `leuria sites revoke` honoured by a running engine.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import {
  startEngine, stopAll, runCli, makeHome, pairCli, web, local, poll, sleep,
  freshOrigin, sha256hex, readGrants, findGrant, fileMode, assertError,
} from './helpers.mjs';

const homes = [];
async function tmpHome() {
  const h = await makeHome();
  homes.push(h);
  return h;
}

describe('grants', { timeout: 60000 }, () => {
  after(async () => {
    await stopAll();
    await Promise.all(homes.map((h) => fsp.rm(h, { recursive: true, force: true })));
  });

  it('writes grants.json (0600, in a 0700 LEURIA_HOME) with the token\'s SHA-256 only', async () => {
    const parent = await tmpHome();
    const home = path.join(parent, 'not-yet-there');
    const eng = await startEngine({ home });
    const o = freshOrigin('file');
    const t0 = Date.now();
    const { token } = await pairCli(eng, o, { app: 'File' });
    assert.equal(fileMode(home), 0o700, `LEURIA_HOME mode ${fileMode(home).toString(8)}`);
    const gp = path.join(home, 'grants.json');
    assert.equal(fileMode(gp), 0o600, `grants.json mode ${fileMode(gp).toString(8)}`);
    const text = await fsp.readFile(gp, 'utf8');
    assert.ok(!text.includes(token), 'the token itself must never be stored');
    const file = JSON.parse(text);
    assert.ok(Array.isArray(file.grants));
    const g = findGrant(file, o);
    assert.ok(g, text);
    assert.equal(g.app, 'File');
    assert.match(g.tokenHash, /^[0-9a-f]{64}$/);
    assert.equal(g.tokenHash, sha256hex(token));
    const created = Date.parse(g.createdAt);
    assert.ok(!Number.isNaN(created), `createdAt ${g.createdAt}`);
    assert.ok(Math.abs(created - t0) < 60000, `createdAt ${g.createdAt} is not now`);
    await eng.stop();
    // no temp files left behind by atomic writes
    const left = fs.readdirSync(home).filter((f) => f.startsWith('grants.json') && f !== 'grants.json' && f !== 'grants.json.lock');
    assert.deepEqual(left, []);
  });

  it('grants survive a restart', async () => {
    const home = await tmpHome();
    const o = freshOrigin('persist');
    const e1 = await startEngine({ home });
    const { token } = await pairCli(e1, o);
    await e1.stop();
    const e2 = await startEngine({ home });
    assert.equal((await web(e2, o, '/health', { token })).json.paired, true);
    await e2.stop();
  });

  it('pairing again replaces the token and keeps the site\'s agent and model', async () => {
    const home = await tmpHome();
    const o = freshOrigin('repair');
    const e1 = await startEngine({ home });
    const { token: t1 } = await pairCli(e1, o, { app: 'One' });
    await e1.stop();
    const file = await readGrants(home);
    const g = findGrant(file, o);
    g.agent = 'claude';
    g.model = 'sonnet';
    await fsp.writeFile(path.join(home, 'grants.json'), JSON.stringify(file), { mode: 0o600 });

    const e2 = await startEngine({ home });
    assert.equal((await web(e2, o, '/health', { token: t1 })).json.paired, true);
    const { token: t2 } = await pairCli(e2, o, { app: 'Two' });
    assert.notEqual(t2, t1);
    assert.equal((await web(e2, o, '/health', { token: t1 })).json.paired, false, 'the old token stops working');
    assertError(await web(e2, o, '/session/x', { token: t1 }), 401, { code: 'not_paired' });
    assert.equal((await web(e2, o, '/health', { token: t2 })).json.paired, true);
    const after2 = await readGrants(home);
    const mine = after2.grants.filter((x) => x.origin === o);
    assert.equal(mine.length, 1, 'one grant per origin');
    assert.equal(mine[0].tokenHash, sha256hex(t2));
    assert.equal(mine[0].agent, 'claude');
    assert.equal(mine[0].model, 'sonnet');
    await e2.stop();
  });

  it('records lastUsedAt when a token is used', async () => {
    const eng = await startEngine({ timings: { lastUsedMs: 0 } });
    const o = freshOrigin('used');
    const { token } = await pairCli(eng, o);
    const before = Date.now();
    await web(eng, o, '/session/doesnotexist', { token });
    await web(eng, o, '/health', { token });
    const g = await poll(async () => {
      const x = findGrant(await readGrants(eng.home), o);
      return x?.lastUsedAt ? x : null;
    }, { timeoutMs: 3000 });
    assert.ok(g, 'lastUsedAt written');
    assert.ok(Date.parse(g.lastUsedAt) >= before - 2000, `lastUsedAt ${g.lastUsedAt}`);
    await eng.stop();
  });

  it('moves a corrupt grants.json aside and still starts', async () => {
    const home = await tmpHome();
    await fsp.writeFile(path.join(home, 'grants.json'), '{not json', { mode: 0o600 });
    const eng = await startEngine({ home });
    assert.equal((await local(eng, '/health')).status, 200);
    const aside = fs.readdirSync(home).filter((f) => f.startsWith('grants.json.corrupt'));
    assert.equal(aside.length, 1, `files: ${fs.readdirSync(home).join(', ')}`);
    assert.equal(await fsp.readFile(path.join(home, aside[0]), 'utf8'), '{not json');
    // and pairing still works
    const o = freshOrigin('corrupt');
    const { token } = await pairCli(eng, o);
    assert.equal((await web(eng, o, '/health', { token })).json.paired, true);
    assert.equal(await fsp.readFile(path.join(home, aside[0]), 'utf8'), '{not json', 'the corrupt copy is kept');
    await eng.stop();
  });
});

describe('leuria sites', { timeout: 60000 }, () => {
  after(async () => {
    await stopAll();
    await Promise.all(homes.map((h) => fsp.rm(h, { recursive: true, force: true })));
  });

  it('says when no site is connected', async () => {
    const home = await tmpHome();
    const r = await runCli(['sites'], { home });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'No sites are connected.');
  });

  it('works before LEURIA_HOME exists', async () => {
    const home = path.join(await tmpHome(), 'missing');
    const r = await runCli(['sites'], { home });
    assert.equal(r.code, 0, `stderr: ${r.stderr}`);
    assert.equal(r.stdout.trim(), 'No sites are connected.');
    const rv = await runCli(['sites', 'revoke', 'https://never.example'], { home });
    assert.equal(rv.code, 1);
    assert.match(rv.stdout + rv.stderr, /No grant for/);
  });

  it('lists grants and revokes them; the running engine honours it within a second', async () => {
    const home = await tmpHome();
    const eng = await startEngine({ home });
    const o1 = freshOrigin('list');
    const o2 = freshOrigin('list');
    const { token: t1 } = await pairCli(eng, o1, { app: 'First App' });
    const { token: t2 } = await pairCli(eng, o2, { app: 'Second App' });

    const ls = await runCli(['sites'], { home });
    assert.equal(ls.code, 0, ls.stderr);
    const l1 = ls.stdout.split('\n').find((l) => l.includes(o1));
    const l2 = ls.stdout.split('\n').find((l) => l.includes(o2));
    assert.ok(l1 && l1.includes('First App'), ls.stdout);
    assert.ok(l2 && l2.includes('Second App'), ls.stdout);
    assert.ok(!ls.stdout.includes(t1) && !ls.stdout.includes(sha256hex(t1)), 'sites never prints tokens or hashes');

    assert.equal((await web(eng, o1, '/health', { token: t1 })).json.paired, true);
    const rv = await runCli(['sites', 'revoke', o1], { home });
    assert.equal(rv.code, 0, rv.stderr);
    assert.equal(rv.stdout.trim(), `Revoked ${o1}.`);

    const gone = await poll(async () => (await web(eng, o1, '/health', { token: t1 })).json.paired === false, { timeoutMs: 3000, intervalMs: 50 });
    assert.ok(gone, 'the running engine must stop accepting a revoked token within 3 s');
    assertError(await web(eng, o1, '/session/x', { token: t1 }), 401, { code: 'not_paired' });
    // the other grant is untouched
    assert.equal((await web(eng, o2, '/health', { token: t2 })).json.paired, true);
    const ls2 = await runCli(['sites'], { home });
    assert.ok(!ls2.stdout.includes(o1), ls2.stdout);
    assert.ok(ls2.stdout.includes(o2), ls2.stdout);
    const g = await readGrants(home);
    assert.equal(findGrant(g, o1), undefined);
    assert.ok(findGrant(g, o2));
    assert.equal(fileMode(path.join(home, 'grants.json')), 0o600);

    // the engine's own later writes must not resurrect the revoked grant
    const o3 = freshOrigin('list');
    await pairCli(eng, o3);
    await sleep(100);
    const g2 = await readGrants(home);
    assert.equal(findGrant(g2, o1), undefined, 'revoked grant came back after the engine wrote grants.json');
    assert.ok(findGrant(g2, o2) && findGrant(g2, o3));
    await eng.stop();
  });

  it('revoke normalizes the origin', async () => {
    const home = await tmpHome();
    const eng = await startEngine({ home });
    const o = freshOrigin('normrev');
    await pairCli(eng, o);
    await eng.stop();
    const rv = await runCli(['sites', 'revoke', o.toUpperCase() + ':443'], { home });
    assert.equal(rv.code, 0, rv.stderr);
    assert.equal(rv.stdout.trim(), `Revoked ${o}.`);
    assert.equal(findGrant(await readGrants(home), o), undefined);
  });

  it('revoke of an unknown origin exits 1', async () => {
    const home = await tmpHome();
    const r = await runCli(['sites', 'revoke', 'https://never.example'], { home });
    assert.equal(r.code, 1);
    assert.match(r.stdout + r.stderr, /No grant for/);
  });
});
