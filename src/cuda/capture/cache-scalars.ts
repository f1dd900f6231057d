/**
 * The named scalars of a `GraphCache`: values such as a sequence position that change on every
 * call without a new capture, written into the kernel nodes of the graph about to launch
 * (`CapturedGraph.setKernelArg`). The names are the cache's, declared with the kernel and the
 * argument index each value goes to: the driver and compiled kernels keep no parameter names
 * (PTX calls them `<kernel>_param_<i>`; a cubin records offsets and sizes only).
 */
import { InvalidArgumentError } from '../../errors/base.js';
import { describe, requireInt, requireName, requireOneOf, requireOptions } from '../../util/validate.js';
import { brands } from '../core/brands.js';
import { KernelArgValue } from '../kernel/arg.js';
import type { Kernel } from '../kernel/kernel.js';
import type { KernelArgSite } from '../graph/kernel-arg-patch.js';
import type { ScalarType } from '../../model/element-type.js';
import type { CapturedGraph } from './captured-graph.js';
import { checkScalar } from './device-scalar.js';

/** Where a named scalar goes: argument `index` (from 0) of every node running `kernel`, as the C type `type`. */
export interface CacheScalar {
  /** The kernel, or its name as the driver reports it (`kernel.name`). */
  readonly kernel: string | Kernel;
  readonly index: number;
  readonly type: ScalarType;
}

/** The scalars a cache can patch by name: each goes to one place, or to several (a position read by two kernels). */
export type CacheScalars = Readonly<Record<string, CacheScalar | readonly CacheScalar[]>>;

interface Place {
  readonly kernel: string;
  readonly index: number;
  readonly type: ScalarType;
}

const TYPES: readonly ScalarType[] = ['i32', 'u32', 'i64', 'u64', 'f32', 'f64'];

/** The values of one call: for each scalar named, its places and the value typed for each. */
export type ScalarValues = ReadonlyArray<{ readonly name: string; readonly values: readonly KernelArgValue[] }>;

/** The scalars a cache declared, and where they lie in each of its graphs (found once per graph). */
export class ScalarTable {
  readonly #places: ReadonlyMap<string, readonly Place[]>;
  readonly #sites = new WeakMap<CapturedGraph, Map<string, readonly KernelArgSite[]>>();

  /** @throws InvalidArgumentError naming `scalars.<name>` for a bad declaration. */
  constructor(op: string, scalars: unknown) {
    const places = new Map<string, readonly Place[]>();
    if (scalars !== undefined) {
      if (typeof scalars !== 'object' || scalars === null || Array.isArray(scalars)) {
        throw new InvalidArgumentError(op, 'scalars', `scalars must be an object { name: { kernel, index, type } }, got ${describe(scalars)}`);
      }
      for (const [name, declared] of Object.entries(scalars)) {
        const at = `scalars.${name}`;
        const list: unknown[] = Array.isArray(declared) ? Array.from(declared as unknown[]) : [declared];
        if (list.length === 0) throw new InvalidArgumentError(op, at, `${at} must name at least one place { kernel, index, type }`);
        places.set(
          name,
          Object.freeze(
            list.map((d, i) => {
              const where = Array.isArray(declared) ? `${at}[${i}]` : at;
              if (typeof d !== 'object' || d === null) throw new InvalidArgumentError(op, where, `${where} must be { kernel, index, type }, got ${describe(d)}`);
              const o = requireOptions<CacheScalar>(op, d, ['kernel', 'index', 'type'], where);
              const kernel = brands.Kernel.is(o.kernel) ? o.kernel.name : requireName(op, `${where}.kernel`, o.kernel);
              return { kernel, index: requireInt(op, `${where}.index`, o.index, 0, 4095), type: requireOneOf(op, `${where}.type`, o.type, TYPES) };
            }),
          ),
        );
      }
    }
    this.#places = places;
  }

  /**
   * The values of `given` (a `run`'s `scalars`), checked and typed for each place, before anything
   * runs.
   * @throws InvalidArgumentError for an undeclared name or a value its type cannot hold.
   */
  values(op: string, given: unknown): ScalarValues {
    if (given === undefined) return [];
    if (typeof given !== 'object' || given === null || Array.isArray(given)) {
      throw new InvalidArgumentError(op, 'scalars', `scalars must be an object { name: value }, got ${describe(given)}`);
    }
    return Object.entries(given).map(([name, value]) => {
      const places = this.#places.get(name);
      if (places === undefined) {
        const known = [...this.#places.keys()];
        throw new InvalidArgumentError(op, `scalars.${name}`, `the cache declares no scalar '${name}' (${known.length === 0 ? 'it declares none: give them as the scalars option of new GraphCache' : `declared: ${known.join(', ')}`})`);
      }
      return { name, values: places.map((p) => new KernelArgValue(p.type, checkScalar(op, p.type, value, `scalars.${name}`), null)) };
    });
  }

  /**
   * The sites of each scalar of `values` in `graph` (the nodes running each place's kernel, the
   * argument checked against its type's size), found on the graph's first use and kept.
   * @throws InvalidArgumentError when a place's kernel is not in the graph, or its argument does not fit.
   */
  sites(op: string, graph: CapturedGraph, values: ScalarValues): Array<readonly KernelArgSite[]> {
    let known = this.#sites.get(graph);
    if (known === undefined) {
      known = new Map();
      this.#sites.set(graph, known);
    }
    return values.map(({ name, values: typed }) => {
      let s = known.get(name);
      if (s === undefined) {
        const found = this.#places.get(name)!.map((p, i) => graph.kernelArgSite(op, p.kernel, p.index, typed[i]!.size));
        known.set(name, found);
        s = found;
      }
      return s;
    });
  }
}
