// bench/run --ab (bench/lib/ab.mjs): the second binary's place among the contenders, its targets and
// the comparison the run prints. No timing: these run with every test (scripts/test).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AB, abCompare, abContenders, abRoundOrder, abTargets, formatAb } from './ab.mjs';
import { checkTargets } from './targets.mjs';

const figures = {
  cpu_us: { label: 'CPU per event', unit: 'µs', better: 'lower' },
  rps: { label: 'requests per second', unit: '/s', better: 'higher' },
  only_a: { label: 'a figure engine-b lacks', unit: '', better: 'lower' },
};
const raw = {
  engine: [{ round: 1, figures: { cpu_us: 10, rps: 100, only_a: 1 } }, { round: 2, figures: { cpu_us: 20, rps: 100 } }, { round: 3, figures: { cpu_us: 10, rps: 100 } }],
  [AB]: [{ round: 1, figures: { cpu_us: 9, rps: 110 } }, { round: 3, figures: { cpu_us: 12, rps: 90 } }],
};
const medians = { engine: { cpu_us: 10, rps: 100, only_a: 1 }, [AB]: { cpu_us: 10.5, rps: 100 } };

describe('bench --ab', () => {
  it('engine-b runs right after engine in each round; a scenario without an engine is unchanged', () => {
    assert.deepEqual(abContenders(['direct', 'engine', 'nginx', 'node']), ['direct', 'engine', AB, 'nginx', 'node']);
    assert.deepEqual(abContenders(['floor', 'node']), ['floor', 'node']);
  });

  it('the two binaries take turns at going first, round by round', () => {
    const cs = abContenders(['direct', 'engine', 'nginx']);
    assert.deepEqual(abRoundOrder(cs, 1), ['direct', 'engine', AB, 'nginx']);
    assert.deepEqual(abRoundOrder(cs, 2), ['direct', AB, 'engine', 'nginx']);
    assert.deepEqual(abRoundOrder(cs, 3), cs);
    assert.deepEqual(abRoundOrder(['direct', 'engine', 'nginx'], 2), ['direct', 'engine', 'nginx'], 'without --ab: as listed');
  });

  it('every target naming the engine gets a twin for engine-b, on either side of the ratio', () => {
    const ts = abTargets([
      { figure: 'cpu_us', contender: 'engine', vs: 'nginx', max: 1.2, text: 'CPU ≤ 1.2× nginx' },
      { figure: 'cpu_us', contender: 'node', vs: 'engine', min: 4, text: 'Node ≥ 4× engine' },
      { figure: 'cpu_us', contender: 'engine', max: 3, text: '≤ 3 µs' },
      { figure: 'rps', contender: 'nginx', vs: 'floor', min: 1, text: 'not about the engine' },
    ]);
    assert.deepEqual(ts.map((t) => `${t.contender}/${t.vs ?? ''} ${t.text}`), [
      'engine/nginx CPU ≤ 1.2× nginx', `${AB}/nginx CPU ≤ 1.2× nginx (${AB})`,
      'node/engine Node ≥ 4× engine', `node/${AB} Node ≥ 4× engine (${AB})`,
      'engine/ ≤ 3 µs', `${AB}/ ≤ 3 µs (${AB})`,
      'nginx/floor not about the engine',
    ]);
    assert.equal('vs' in ts[5], false, 'an absolute bound stays one');
    const [a, b] = checkTargets(ts.slice(4, 6), medians, raw);
    assert.deepEqual([a.pass, b.pass, b.rounds], [false, false, [9, 12]]);
  });

  it('compares figure by figure, pairing rounds by number, better by the figure’s direction', () => {
    const rows = abCompare({ scenario: { figures }, medians, raw });
    assert.deepEqual(rows.map((r) => r.figure), ['cpu_us', 'rps'], 'a figure one side lacks is left out');
    const [cpu, rps] = rows;
    assert.equal(cpu.ratio, 1.05);
    assert.deepEqual(cpu.rounds, [0.9, 1.2], 'round 2 (engine-b failed it) is left out');
    assert.deepEqual([cpu.better, cpu.of], [1, 2]);
    assert.deepEqual([rps.better, rps.of], [1, 2], 'higher is better for a rate');
    assert.deepEqual(abCompare({ scenario: { figures }, medians: { engine: medians.engine }, raw }), []);
  });

  it('prints the comparison under the table, naming both binaries', () => {
    const text = formatAb({ scenario: { figures }, medians, raw, options: { bin: '/a/leuria', ab: '/b/leuria' } });
    const lines = text.split('\n');
    assert.equal(lines[0], `A/B: ${AB} (/b/leuria) against engine (/a/leuria), in the same rounds`);
    assert.match(lines[2], /^ {2}CPU per event \(µs\) +10 +10\.5 +1\.05×$/);
    assert.match(lines[3], new RegExp(`rounds: 0\\.90 1\\.20  \\(${AB} better in 1 of 2\\)$`));
    assert.equal(formatAb({ scenario: { figures }, medians: {}, raw: {}, options: {} }), '');
  });
});
