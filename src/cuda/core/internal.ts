/**
 * Package-internal keys: the token that lets cudagraph's own modules construct objects users
 * get from factories, and the symbols through which layers share bookkeeping. Not exported from
 * the package root.
 */

/** Passed to constructors that users must not call directly (use `Device.get`, `device.createStream`, …). */
export const INTERNAL: unique symbol = Symbol('cudagraph.internal');

/** On a `Stream`: the capture it currently records into, or null. */
export const CAPTURE: unique symbol = Symbol('cudagraph.capture');

/** On an `Event`: the capture active on the stream of its last record, or null. */
export const RECORDED_IN: unique symbol = Symbol('cudagraph.recordedIn');

/** On every resource object: its `Lifetime`. */
export const LIFETIME: unique symbol = Symbol('cudagraph.lifetime');
