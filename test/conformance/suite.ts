/**
 * The conformance suite, written once as a factory over a `Recorder`: every case is recorded and
 * its outcome compared with the reference (reference.ts) and with the hand-written expectations
 * of the case. The CPU run (model.test.ts) drives `StreamCapture`; the GPU run
 * (test/gpu/conformance.test.ts) drives real stream capture.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CASES, randomScript, type ConformanceCase } from './cases.js';
import { compareOutcomes, signature } from './compare.js';
import { referenceOutcome } from './reference.js';
import { runScript } from './run.js';
import { describeOutcome, type Outcome } from './outcome.js';
import type { Recorder } from './recorder.js';
import type { Script } from './script.js';

/** One recorded case, for logs: what was expected, what came, and how they differ. */
export interface CaseReport {
  readonly recorder: string;
  readonly script: string;
  readonly expected: string;
  readonly actual: string;
  readonly differences: readonly string[];
}

/** What the factory needs. */
export interface SuiteOptions {
  /** A fresh recorder for each script. */
  readonly recorder: () => Recorder;
  /** The seeds of the random 8-stream programs. */
  readonly seeds: readonly number[];
  /** Operations per random program. */
  readonly randomOps?: number;
  /** Called with every case's report (the GPU run writes them to a file). */
  readonly report?: (r: CaseReport) => void;
}

/** Records `script` and returns its outcome and its differences from the reference. */
export function checkScript(make: () => Recorder, script: Script, c?: ConformanceCase): { outcome: Outcome; report: CaseReport } {
  const r = make();
  const name = r.name;
  const outcome = runScript(r, script);
  const expected = referenceOutcome(script);
  const differences = compareOutcomes(outcome, expected);
  if (c?.reach !== undefined && outcome.kind === 'graph') {
    const g = outcome.graph;
    const ids = new Map(g.nodes().map((n) => [signature(n), n.id]));
    for (const [a, b, want] of c.reach) {
      const ia = ids.get(a);
      const ib = ids.get(b);
      if (ia === undefined || ib === undefined) differences.push(`hand-written check names a node the graph lacks: ${ia === undefined ? a : b}`);
      else if (g.isReachable(ia, ib) !== want) differences.push(`hand-written check: ${a} ${want ? 'should reach' : 'should not reach'} ${b}`);
    }
  }
  const expectedText =
    expected.kind === 'graph' ? `graph(${expected.graph.signatures.length} nodes)` : describeOutcome(expected as Outcome);
  return {
    outcome,
    report: { recorder: name, script: script.name, expected: expectedText, actual: describeOutcome(outcome), differences },
  };
}

/** Defines one `node:test` test per case and per random seed. */
export function defineConformanceSuite(options: SuiteOptions): void {
  const run = (script: Script, c?: ConformanceCase): void => {
    const { report } = checkScript(options.recorder, script, c);
    options.report?.(report);
    assert.deepEqual(report.differences, [], `${report.recorder} on '${script.name}': ${report.actual}, expected ${report.expected}`);
  };
  for (const c of CASES) test(`${c.script.name}: ${c.about}`, () => run(c.script, c));
  for (const seed of options.seeds) {
    const script = randomScript(seed, options.randomOps ?? 300);
    test(script.name, () => run(script));
  }
}
