// GET /health: fields, paired, approvals.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startEngine, stopAll, local, web, own, pairCli, freshOrigin, assertJsonType, assertCors, VERSION } from './helpers.mjs';

function assertHealthShape(r) {
  assert.equal(r.status, 200, `${r.status} ${r.body}`);
  assertJsonType(r);
  assert.equal(r.json.leuria, VERSION);
  assert.equal(r.json.ok, true);
  assert.equal(typeof r.json.agent, 'string');
  assert.ok(r.json.agent.length > 0, 'agent must be a non-empty string');
}

describe('health (CLI engine)', { timeout: 30000 }, () => {
  let eng;
  let origin;
  let token;
  before(async () => {
    eng = await startEngine();
    origin = freshOrigin('health');
    ({ token } = await pairCli(eng, origin, { app: 'Health' }));
  });
  after(stopAll);

  it('answers a local process without paired', async () => {
    const r = await local(eng, '/health');
    assertHealthShape(r);
    assert.equal(r.json.approvals, 'page');
    assert.equal('paired' in r.json, false, 'local callers get no paired field');
    assert.equal(r.headers['access-control-allow-origin'], undefined);
  });

  it('a local process sending a bearer token still gets no paired field', async () => {
    const r = await local(eng, '/health', { token });
    assertHealthShape(r);
    assert.equal('paired' in r.json, false);
  });

  it('answers the engine\'s own page', async () => {
    assertHealthShape(await own(eng, '/health'));
  });

  it('says paired:false to a web page without a token', async () => {
    const o = freshOrigin('health');
    const r = await web(eng, o, '/health');
    assertHealthShape(r);
    assert.equal(r.json.paired, false);
    assert.equal(r.json.approvals, 'page');
    assertCors(r, o);
  });

  it('says paired:false for a wrong or malformed token (not 401)', async () => {
    for (const t of ['x', 'A'.repeat(43), token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'), token + 'x']) {
      const r = await web(eng, origin, '/health', { token: t });
      assertHealthShape(r);
      assert.equal(r.json.paired, false, `token ${t}`);
    }
    const r = await web(eng, origin, '/health', { headers: { Authorization: `Basic ${token}` } });
    assertHealthShape(r);
    assert.equal(r.json.paired, false, 'a non-bearer Authorization is not a token');
  });

  it('says paired:true for the token issued to this origin', async () => {
    const r = await web(eng, origin, '/health', { token });
    assertHealthShape(r);
    assert.equal(r.json.paired, true);
    assertCors(r, origin);
  });

  it('matches the origin in normalized form', async () => {
    const upper = origin.toUpperCase() + ':443';
    const r = await web(eng, upper, '/health', { token });
    assertHealthShape(r);
    assert.equal(r.json.paired, true, `origin ${upper} is ${origin}`);
  });

  it('a token is valid only for the origin it was issued to', async () => {
    for (const o of [freshOrigin('health'), origin.replace('https://', 'http://'), origin + ':8443', `http://127.0.0.1:${eng.port + 1}`]) {
      const r = await web(eng, o, '/health', { token });
      assertHealthShape(r);
      assert.equal(r.json.paired, false, `token of ${origin} used from ${o}`);
    }
  });
});

describe('health (app engines)', { timeout: 30000 }, () => {
  after(stopAll);

  it('says approvals:app with --app', async () => {
    const eng = await startEngine({ app: true });
    const r = await local(eng, '/health');
    assertHealthShape(r);
    assert.equal(r.json.approvals, 'app');
    assert.equal('paired' in r.json, false);
    await eng.stop();
  });

  it('says approvals:app with --dev-pairing, and answers unknown pages', async () => {
    const eng = await startEngine({ devPairing: true });
    const r = await local(eng, '/health');
    assertHealthShape(r);
    assert.equal(r.json.approvals, 'app');
    const o = freshOrigin('health');
    const w = await web(eng, o, '/health');
    assertHealthShape(w);
    assert.equal(w.json.paired, false);
    assertCors(w, o);
    await eng.stop();
  });
});
