// The bench's target checks (bench/lib/targets.mjs) and their lines in the printed table: no timing,
// so they run with every test (scripts/test).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatTable } from './table.mjs';
import { checkTargets, roundValues } from './targets.mjs';

const raw = {
  engine: [{ round: 1, figures: { x: 12 } }, { round: 2, figures: {} }, { round: 3, figures: { x: 9 } }],
  nginx: [{ round: 1, figures: { x: 10 } }, { round: 2, figures: { x: 10 } }, { round: 3, figures: { x: 10 } }],
};
const ratio = { figure: 'x', contender: 'engine', vs: 'nginx', max: 1, text: 'x ≤ nginx' };

describe('bench targets', () => {
  it('a ratio is read on the medians, and round by round on that round’s figures of both', () => {
    const [t] = checkTargets([ratio], { engine: { x: 10.5 }, nginx: { x: 10 } }, raw);
    assert.equal(t.value, 1.05);
    assert.equal(t.pass, false);
    assert.deepEqual(t.rounds, [1.2, 0.9], 'round 2 (no engine figure) is left out');
    assert.equal(t.roundsWithin, 1);
  });

  it('rounds pair by their number, not their place: a contender that failed a round is not shifted', () => {
    const shifted = { engine: [{ round: 2, figures: { x: 20 } }], nginx: raw.nginx };
    assert.deepEqual(roundValues(ratio, shifted), [2]);
  });

  it('an absolute bound reads each round’s own figure; a missing contender is n/a, never a pass', () => {
    const abs = { figure: 'x', contender: 'engine', max: 10, text: 'x ≤ 10' };
    const [t, gone] = checkTargets([abs, { ...ratio, vs: 'node' }], { engine: { x: 10.5 } }, raw);
    assert.deepEqual(t.rounds, [12, 9]);
    assert.equal(t.roundsWithin, 1);
    assert.equal(gone.pass, null);
    assert.deepEqual(gone.rounds, []);
    assert.equal(checkTargets([abs], { engine: { x: 3 } })[0].pass, true, 'without raw figures: medians only');
  });

  it('the table prints each target’s rounds under its verdict', () => {
    const medians = { engine: { x: 10.5 }, nginx: { x: 10 } };
    const res = {
      scenario: { id: 'T', title: 'test', contenders: ['engine', 'nginx'], baseline: 'nginx', figures: { x: { label: 'x', unit: 'µs' } } },
      medians, checked: checkTargets([ratio], medians, raw), errors: [],
      machine: { loadBefore: [0.1], loadAfter: [0.2], cpus: 2, loaded: false }, options: { rounds: 3 },
    };
    const text = formatTable(res);
    assert.match(text, /MISS {2}x ≤ nginx {2}\[engine\/nginx x = 1\.05×, ≤ 1\]\n {8}rounds: 1\.20 0\.90 {2}\(the bound held in 1 of 2\)/);
  });
});
