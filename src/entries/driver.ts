/**
 * `cudagraph/driver`: the raw binding, for tools that need a driver call the object layer does not
 * wrap: the checked calls by area (`result`), the lazily bound entry points (`driverSymbol`), the
 * loader, and the state of the hot-call addon. Everything the rest of cudagraph relies on keeps
 * working only when calls go through `result`: a raw `driverSymbol` call bypasses the object
 * layer's bookkeeping (captures, lifetimes), as any foreign code would.
 */
export * from '../driver/index.js';
