/**
 * The two bindings of the hot calls, for tests that run a check on each and compare them: the
 * Node-API addon (where it loads here) and koffi.
 */
import { loadNativeAddon, setNativeAddonForTesting, type HotAddon } from '../../src/driver/hot.js';

/** The bindings to compare: `['addon', addon]` where it loads, and `['koffi', null]`. */
export function bindings(): Array<[string, HotAddon | null]> {
  const hot = loadNativeAddon({}).addon;
  return hot === null ? [['koffi', null]] : [['addon', hot], ['koffi', null]];
}

/** Runs `body` with launches prepared (and sequences made, graphs launched) on `hot` (null: koffi). */
export function onBinding<T>(hot: HotAddon | null, body: () => T): T {
  const saved = setNativeAddonForTesting(hot);
  try {
    return body();
  } finally {
    setNativeAddonForTesting(saved);
  }
}
