/**
 * Whether a benchmark's large arrays sit on transparent huge pages, so that the reachability rows
 * state that condition: a search is a random read a node in an index of tens of megabytes, and
 * with 4 KiB pages most of those reads also miss the address translation cache. (Measured both
 * ways, the rows moved less than they move from run to run: docs/model.md.)
 *
 * Node's array buffers come from glibc's malloc. With the kernel's setting `always` they get huge
 * pages as they are; with `madvise` (the default of many distributions) only where the allocator
 * asks, which glibc 2.35 and later does under `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (set before
 * the process starts: it cannot be turned on from inside).
 */
import { readFileSync } from 'node:fs';

/** The tunable that makes glibc ask for transparent huge pages (glibc ≥ 2.35). */
const HUGE_PAGE_TUNABLE = 'glibc.malloc.hugetlb=1';

/** The kernel's transparent huge page mode (`always`, `madvise`, `never`), or null where there is none to read. */
export function hugePageMode(): string | null {
  try {
    const text = readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8');
    return /\[(\w+)\]/.exec(text)?.[1] ?? null;
  } catch {
    return null;
  }
}

/** MiB of this process's memory on transparent huge pages now, or null where the kernel does not say. */
export function hugePageMiB(): number | null {
  try {
    const text = readFileSync('/proc/self/smaps_rollup', 'utf8');
    const kb = /^AnonHugePages:\s+(\d+) kB/m.exec(text)?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
}

/** The condition, for a table's footer: the kernel's mode and whether the tunable is set. */
export function hugePageSetting(): string {
  const mode = hugePageMode();
  if (mode === null) return 'transparent huge pages: not reported by this system';
  const tunable = (process.env['GLIBC_TUNABLES'] ?? '').includes(HUGE_PAGE_TUNABLE) ? `, GLIBC_TUNABLES=${HUGE_PAGE_TUNABLE}` : '';
  return `transparent huge pages: ${mode}${tunable}`;
}
