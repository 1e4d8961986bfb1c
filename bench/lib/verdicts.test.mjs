// bench/lib/verdicts.mjs: which runs are whole, and each target's verdicts across them. No timing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatMatrix, matrix, parseName, wholeRuns } from './verdicts.mjs';

const result = (id, checked) => ({ scenario: { id, figures: { x: { unit: 'µs' } } }, checked });

describe('bench verdicts', () => {
  it('reads a result’s name, and nothing else', () => {
    assert.deepEqual(parseName('2026-12-04-174501-11.json'), { stamp: '2026-12-04-174501', id: '11' });
    assert.equal(parseName('2026-12-04-174501-2-paced.png'), null);
    assert.equal(parseName('2026-12-04-174501-2-paced.dat'), null);
    assert.equal(parseName('notes.json'), null);
  });

  it('a whole run has every scenario; runs come oldest first', () => {
    const names = ['2026-12-04-100000-1.json', '2026-12-04-100000-2.json', '2026-12-03-090000-1.json',
      '2026-12-03-090000-2.json', '2026-12-04-110000-2.json', '2026-12-03-090000-2-paced.png'];
    const runs = wholeRuns(names, ['1', '2']);
    assert.deepEqual(runs.map((r) => r.stamp), ['2026-12-03-090000', '2026-12-04-100000'], 'the run of scenario 2 alone is left out');
    assert.deepEqual(runs[0].files, { 1: '2026-12-03-090000-1.json', 2: '2026-12-03-090000-2.json' });
  });

  it('counts a target held only where it passed: a miss and an n/a are not held', () => {
    const ratio = { text: 'x ≤ nginx', vs: 'nginx', figure: 'x' };
    const abs = { text: 'x ≤ 10 µs', figure: 'x' };
    const runs = [
      { stamp: 'a', results: [result('1', [{ ...ratio, pass: true, value: 0.9 }, { ...abs, pass: true, value: 9 }])] },
      { stamp: 'b', results: [result('1', [{ ...ratio, pass: false, value: 1.3 }, { ...abs, pass: null, value: null }])] },
      { stamp: 'c', results: [result('1', [{ ...ratio, pass: true, value: 1 }])] },
    ];
    const [r, a] = matrix(runs);
    assert.deepEqual([r.held, r.of], [2, 3]);
    assert.deepEqual([a.held, a.of], [1, 2], 'a run that did not check the target has no verdict for it');
    assert.equal(a.unit, 'µs');
    assert.equal(r.unit, '', 'a ratio has no unit');
    const text = formatMatrix([r, a], ['a', 'b', 'c']);
    assert.match(text, /1\.30×\*/, 'a miss is marked');
    assert.match(text, /x ≤ 10 µs \(µs\) .* -\? .* 1\/2$/m, 'n/a is marked, and a run without the target is blank');
    assert.match(text, /2\/3$/m);
    assert.doesNotMatch(text, /^commit/m, 'no commit line when no run recorded one');
    assert.match(formatMatrix([r], ['a', 'b', 'c'], { a: 'abc1234', c: 'def5678-dirty' }), /^commit +abc1234 +\? +def5678-dirty$/m);
  });

  it('a run with a second binary (bench/run --ab) counts for the engine, not for engine-b’s twins', () => {
    const t = { text: 'x ≤ nginx', contender: 'engine', vs: 'nginx', figure: 'x' };
    const twin = { ...t, contender: 'engine-b', text: 'x ≤ nginx (engine-b)' };
    const rows = matrix([{ stamp: 'a', results: [result('1', [{ ...t, pass: true, value: 0.9 }, { ...twin, pass: false, value: 1.4 }])] }]);
    assert.deepEqual(rows.map((r) => [r.text, r.held, r.of]), [['x ≤ nginx', 1, 1]]);
  });
});
