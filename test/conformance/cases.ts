/**
 * The conformance cases: small scripts with a name and what they show, a random 8-stream program
 * generator, and the parameter-changing variants used to check in-place update. Every node of a
 * script has a unique signature (kernels differ in their block count, copies and fills in their
 * size, host callbacks in their label), so recordings can be matched node by node.
 */
import { op, KERNEL_NAMES, type Op, type Script, type ScriptDir } from './script.js';
import { mulberry32 } from '../../src/util/random.js';

/** A named case: a script, what it shows, and checks written by hand besides the reference. */
export interface ConformanceCase {
  readonly script: Script;
  /** What the case shows. */
  readonly about: string;
  /** Extra expectations, as pairs of node signatures: `[a, b, true]` means a reaches b. */
  readonly reach?: ReadonlyArray<readonly [string, string, boolean]>;
  /** How the seed's semantics (the default `StreamCapture`) differs here, if it does. */
  readonly seedDiffers?: string;
}

const K = (blocks: number): string => `kernel k_a <<<[${blocks},1,1],[32,1,1],0>>>`;

/** The named cases of the issue. */
export const CASES: readonly ConformanceCase[] = [
  {
    about: 'ops on one stream form a chain',
    script: { name: 'chain', streams: 1, ops: [op.kernel(0, 'k_a', 1), op.kernel(0, 'k_a', 2), op.kernel(0, 'k_a', 3)] },
    reach: [
      [K(1), K(3), true],
      [K(3), K(1), false],
    ],
  },
  {
    about: 'fork/join: upload, a branch on a second stream, download after both',
    script: {
      name: 'fork/join',
      streams: 2,
      ops: [
        op.memcpy(0, 'HostToDevice', 4096),
        op.record(0, 0),
        op.wait(1, 0),
        op.kernel(1, 'k_b', 4, 256),
        op.kernel(0, 'k_a', 5),
        op.record(1, 1),
        op.wait(0, 1),
        op.memcpy(0, 'DeviceToHost', 4096),
      ],
    },
    reach: [
      ['memcpy HostToDevice 4096', 'kernel k_b <<<[4,1,1],[256,1,1],0>>>', true],
      ['kernel k_b <<<[4,1,1],[256,1,1],0>>>', 'memcpy DeviceToHost 4096', true],
      ['kernel k_b <<<[4,1,1],[256,1,1],0>>>', K(5), false],
      [K(5), 'kernel k_b <<<[4,1,1],[256,1,1],0>>>', false],
    ],
    seedDiffers: 'none in the graph; the seed begins stream 1 explicitly instead of joining it by the wait',
  },
  {
    about: 'diamond: a, then b and c in parallel, then d',
    script: {
      name: 'diamond',
      streams: 2,
      ops: [
        op.kernel(0, 'k_a', 1),
        op.record(0, 0),
        op.wait(1, 0),
        op.kernel(1, 'k_a', 2),
        op.kernel(0, 'k_a', 3),
        op.record(1, 1),
        op.wait(0, 1),
        op.kernel(0, 'k_a', 4),
      ],
    },
    reach: [
      [K(1), K(4), true],
      [K(2), K(3), false],
      [K(3), K(2), false],
      [K(2), K(4), true],
    ],
  },
  {
    about: 'three-way join: one node forks to three streams, all joined into one node',
    script: {
      name: 'three-way join',
      streams: 4,
      ops: [
        op.kernel(0, 'k_a', 1),
        op.record(0, 0),
        op.wait(1, 0),
        op.wait(2, 0),
        op.wait(3, 0),
        op.kernel(1, 'k_b', 2),
        op.kernel(2, 'k_c', 3),
        op.kernel(3, 'k_d', 4),
        op.record(1, 1),
        op.record(2, 2),
        op.record(3, 3),
        op.wait(0, 1),
        op.wait(0, 2),
        op.wait(0, 3),
        op.kernel(0, 'k_a', 5),
      ],
    },
  },
  {
    about: 'an event recorded twice: a wait uses the record before it, not the later one',
    script: {
      name: 'event recorded twice',
      streams: 3,
      ops: [
        op.kernel(0, 'k_a', 1),
        op.record(0, 0),
        op.wait(2, 0), // sees the first record: depends on k(1) only
        op.kernel(0, 'k_a', 2),
        op.record(0, 0), // moves the event to k(2)
        op.wait(1, 0),
        op.kernel(1, 'k_b', 3),
        op.kernel(2, 'k_c', 4),
        op.record(1, 1),
        op.record(2, 2),
        op.wait(0, 1),
        op.wait(0, 2),
      ],
    },
    reach: [
      [K(2), 'kernel k_b <<<[3,1,1],[32,1,1],0>>>', true],
      [K(2), 'kernel k_c <<<[4,1,1],[32,1,1],0>>>', false],
      [K(1), 'kernel k_c <<<[4,1,1],[32,1,1],0>>>', true],
    ],
  },
  {
    about: 'a wait issued before the waiting stream has work gates its first later op only',
    script: {
      name: 'wait before work',
      streams: 2,
      ops: [
        op.kernel(0, 'k_a', 1),
        op.record(0, 0),
        op.wait(1, 0),
        op.kernel(0, 'k_a', 2),
        op.kernel(1, 'k_b', 3),
        op.record(1, 1),
        op.wait(0, 1),
      ],
    },
    reach: [
      [K(1), 'kernel k_b <<<[3,1,1],[32,1,1],0>>>', true],
      [K(2), 'kernel k_b <<<[3,1,1],[32,1,1],0>>>', false],
    ],
  },
  {
    about: 'a wait on an event never recorded does nothing',
    script: { name: 'never-recorded event', streams: 1, ops: [op.kernel(0, 'k_a', 1), op.wait(0, 7), op.kernel(0, 'k_a', 2)] },
    reach: [[K(1), K(2), true]],
  },
  {
    about: 'a wait on an event recorded before the capture began',
    script: { name: 'event recorded before capture', streams: 1, before: [5], ops: [op.kernel(0, 'k_a', 1), op.wait(0, 5), op.kernel(0, 'k_a', 2)] },
    seedDiffers: 'the seed has no events outside a session: the wait is on an unknown event and does nothing',
  },
  {
    about: 'an event recorded on a stream that waited but has no work of its own carries the waited-on node',
    script: {
      name: 'record on a stream with only waits',
      streams: 3,
      ops: [
        op.kernel(0, 'k_a', 1),
        op.record(0, 0),
        op.wait(1, 0),
        op.record(1, 1), // stream 1 has no op: the event stands for k(1)
        op.wait(2, 1),
        op.kernel(2, 'k_c', 2),
        op.record(2, 2),
        op.wait(0, 2),
      ],
    },
    reach: [[K(1), 'kernel k_c <<<[2,1,1],[32,1,1],0>>>', true]],
    seedDiffers: 'the seed ignores a record on a stream with no ops, so k_c does not depend on k_a',
  },
  {
    about: 'an event recorded after a wait and before the next op carries both the head and the waited-on node',
    script: {
      name: 'record after a wait',
      streams: 3,
      ops: [
        op.kernel(0, 'k_a', 1),
        op.record(0, 0),
        op.wait(1, 0),
        op.kernel(1, 'k_b', 2),
        op.record(1, 1),
        op.kernel(0, 'k_a', 3),
        op.wait(0, 1),
        op.record(0, 2), // stream 0's set is {k(3), k_b}
        op.wait(2, 2),
        op.kernel(2, 'k_c', 4),
        op.record(2, 3),
        op.wait(0, 3),
      ],
    },
    reach: [['kernel k_b <<<[2,1,1],[32,1,1],0>>>', 'kernel k_c <<<[4,1,1],[32,1,1],0>>>', true]],
    seedDiffers: 'the seed records only the stream\'s newest node, so k_c does not depend on k_b',
  },
  {
    about: 'an event recorded on a stream with an empty dependency set: waiting on it joins a stream without dependencies',
    script: {
      name: 'record on an empty stream',
      streams: 2,
      ops: [op.record(0, 0), op.wait(1, 0), op.kernel(1, 'k_b', 1), op.kernel(0, 'k_a', 2), op.record(1, 1), op.wait(0, 1), op.kernel(0, 'k_a', 3)],
    },
    reach: [
      ['kernel k_b <<<[1,1,1],[32,1,1],0>>>', K(2), false],
      [K(2), 'kernel k_b <<<[1,1,1],[32,1,1],0>>>', false],
    ],
  },
  {
    about: 'a stream forked from the origin and not joined back: ending the capture fails',
    script: { name: 'unjoined stream', streams: 2, ops: [op.kernel(0, 'k_a', 1), op.record(0, 0), op.wait(1, 0), op.kernel(1, 'k_b', 2)] },
    seedDiffers: 'the seed ends such a capture (requireJoined: false by default)',
  },
  {
    about: 'memcpy, memset and host callbacks mixed with kernels across three streams',
    script: {
      name: 'memcpy/memset/host mix',
      streams: 3,
      ops: [
        op.memcpy(0, 'HostToDevice', 1024),
        op.memset(0, 512, 7),
        op.record(0, 0),
        op.wait(1, 0),
        op.wait(2, 0),
        op.kernel(1, 'k_b', 8, 128),
        op.host(1, 'h1'),
        op.memcpy(2, 'DeviceToDevice', 2048),
        op.memset(2, 256, 0),
        op.host(2, 'h2'),
        op.record(1, 1),
        op.record(2, 2),
        op.wait(0, 1),
        op.wait(0, 2),
        op.kernel(0, 'k_c', 9, 64, 128),
        op.memcpy(0, 'DeviceToHost', 1024 + 4),
        op.host(0, 'h3'),
      ],
    },
    reach: [
      ['memset 512 = 7', 'host h1', true],
      ['host h1', 'host h2', false],
      ['host h2', 'memcpy DeviceToHost 1028', true],
    ],
  },
];

/** A small seeded PRNG (mulberry32): the same seed gives the same program everywhere. */
export const rng = mulberry32;

/**
 * A random program on `streams` streams of about `ops` operations: work on streams that have
 * joined, events recorded on streams with dependencies, waits (which join new streams), and at
 * the end every stream joined back into stream 0. Signatures are unique (block counts and sizes
 * come from the op's index).
 */
export function randomScript(seed: number, ops = 300, streams = 8): Script {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const out: Op[] = [];
  const joined = new Set([0]);
  // Whether a stream's dependency set is non-empty (events are recorded only on such streams:
  // the empty-set case has a named case of its own).
  const busy = new Set<number>();
  const eventBusy = new Map<number, boolean>();
  const dirs: ScriptDir[] = ['HostToDevice', 'DeviceToHost', 'DeviceToDevice'];
  let n = 0;
  while (out.length < ops) {
    const x = r();
    const s = pick([...joined]);
    const tag = ++n;
    if (x < 0.55) {
      const y = r();
      if (y < 0.7) out.push(op.kernel(s, pick(KERNEL_NAMES), tag, pick([32, 64, 128, 256]), pick([0, 0, 0, 256])));
      else if (y < 0.8) out.push(op.memset(s, 4 * tag + 1, Math.floor(r() * 256)));
      else if (y < 0.92) out.push(op.memcpy(s, pick(dirs), 4 * tag + 2));
      else out.push(op.host(s, `h${tag}`));
      busy.add(s);
    } else if (x < 0.75) {
      if (!busy.has(s)) continue;
      const e = Math.floor(r() * 12);
      out.push(op.record(s, e));
      eventBusy.set(e, true);
    } else {
      const events = [...eventBusy.keys()];
      if (events.length === 0) continue;
      const w = Math.floor(r() * streams);
      const e = pick(events);
      out.push(op.wait(w, e));
      joined.add(w);
      busy.add(w);
    }
  }
  for (const s of [...joined].sort((a, b) => a - b)) {
    if (s === 0) continue;
    out.push(op.record(s, 100 + s), op.wait(0, 100 + s));
  }
  return { name: `random program (seed ${seed}, ${ops} ops, ${streams} streams)`, streams, ops: out };
}

/** A script with one op replaced (by index), for the update cases. */
function withOp(s: Script, index: number, replacement: Op | null, name: string): Script {
  const ops = [...s.ops];
  if (replacement === null) ops.splice(index, 1);
  else ops[index] = replacement;
  return { ...s, name, ops };
}

const byName = (name: string): Script => CASES.find((c) => c.script.name === name)!.script;

/** A pair of scripts: an executable is made from `from` and updated in place with `to`. */
export interface UpdateCase {
  readonly name: string;
  readonly from: Script;
  readonly to: Script;
}

/** The parameter-changing variants of the cases: what `cudaGraphExecUpdate` may and may not take. */
export function updateCases(): UpdateCase[] {
  const mix = byName('memcpy/memset/host mix');
  const diamond = byName('diamond');
  const chain = byName('chain');
  const idx = (s: Script, pred: (o: Op) => boolean): number => s.ops.findIndex(pred);
  const memsetAt = idx(mix, (o) => o.op === 'memset');
  const h2dAt = idx(mix, (o) => o.op === 'memcpy' && o.dir === 'HostToDevice');
  const d2dAt = idx(mix, (o) => o.op === 'memcpy' && o.dir === 'DeviceToDevice');
  const hostAt = idx(mix, (o) => o.op === 'host');
  const kAt = idx(diamond, (o) => o.op === 'kernel' && o.blocks === 2);
  const cases: UpdateCase[] = [
    { name: 'identical', from: diamond, to: diamond },
    { name: 'kernel grid changed', from: diamond, to: withOp(diamond, kAt, op.kernel(1, 'k_a', 20), 'diamond, grid') },
    { name: 'kernel block and shared memory changed', from: diamond, to: withOp(diamond, kAt, op.kernel(1, 'k_a', 2, 128, 512), 'diamond, block') },
    { name: 'kernel function changed', from: diamond, to: withOp(diamond, kAt, op.kernel(1, 'k_b', 2), 'diamond, function') },
    { name: 'memset value changed', from: mix, to: withOp(mix, memsetAt, op.memset(0, 512, 9), 'mix, memset value') },
    { name: 'memset size shrunk', from: mix, to: withOp(mix, memsetAt, op.memset(0, 256 + 4, 7), 'mix, memset smaller') },
    { name: 'memset size grown', from: mix, to: withOp(mix, memsetAt, op.memset(0, 8192, 7), 'mix, memset larger') },
    { name: 'memcpy size shrunk', from: mix, to: withOp(mix, h2dAt, op.memcpy(0, 'HostToDevice', 512), 'mix, copy smaller') },
    { name: 'memcpy size grown', from: mix, to: withOp(mix, h2dAt, op.memcpy(0, 'HostToDevice', 8192), 'mix, copy larger') },
    { name: 'memcpy direction changed', from: mix, to: withOp(mix, d2dAt, op.memcpy(2, 'DeviceToHost', 2048), 'mix, copy direction') },
    { name: 'host callback changed', from: mix, to: withOp(mix, hostAt, op.host(1, 'h9'), 'mix, other callback') },
    { name: 'node kind changed', from: diamond, to: withOp(diamond, kAt, op.memset(1, 64, 1), 'diamond, kind') },
    { name: 'node added', from: chain, to: { ...chain, name: 'chain + 1', ops: [...chain.ops, op.kernel(0, 'k_a', 4)] } },
    {
      name: 'dependencies changed',
      from: diamond,
      // The same four kernels as a chain: same count, other edges.
      to: { name: 'chain of four', streams: 1, ops: [op.kernel(0, 'k_a', 1), op.kernel(0, 'k_a', 2), op.kernel(0, 'k_a', 3), op.kernel(0, 'k_a', 4)] },
    },
  ];
  return cases;
}
