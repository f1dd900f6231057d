/**
 * Which device's primary context is current on the JS thread. Calls that need a current context
 * go through `makeCurrent`, which costs a pointer compare when the device is already current, so
 * the launch path pays nothing in the usual one-device program. The mirror assumes cudagraph is
 * the only code switching contexts on this thread.
 */
import { device as dev } from '../driver/result/index.js';

let current: bigint | null = null;

/** Makes `ctx` current unless it already is. */
export function makeCurrent(op: string, ctx: bigint): void {
  if (current === ctx) return;
  dev.ctxSetCurrent(op, ctx);
  current = ctx;
}
