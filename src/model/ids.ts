/**
 * Branded numeric ids. Each is both a type and a factory of the same name:
 * `const s: StreamId = StreamId(1)`. The brand stops a `NodeId` being passed where a `StreamId`
 * is expected; at run time they are plain numbers, so they cost nothing to store or compare.
 */
import { requireU32 } from '../util/validate.js';

/** Identifies a modelled CUDA stream. */
export type StreamId = number & { readonly __brand: 'StreamId' };
/** Identifies a modelled CUDA event used for fork/join between streams. */
export type CaptureEvent = number & { readonly __brand: 'CaptureEvent' };
/** Identifies a node of a `ComputeGraph`; ids are dense, 0..nodeCount−1, in creation order. */
export type NodeId = number & { readonly __brand: 'NodeId' };

/**
 * Makes a `StreamId`. @throws InvalidArgumentError unless `n` is an integer in 0..2^32−1.
 */
export function StreamId(n: number): StreamId {
  return requireU32('StreamId', 'n', n) as StreamId;
}

/**
 * Makes a `CaptureEvent`. @throws InvalidArgumentError unless `n` is an integer in 0..2^32−1.
 */
export function CaptureEvent(n: number): CaptureEvent {
  return requireU32('CaptureEvent', 'n', n) as CaptureEvent;
}

/**
 * Makes a `NodeId`. @throws InvalidArgumentError unless `n` is an integer in 0..2^32−1.
 */
export function NodeId(n: number): NodeId {
  return requireU32('NodeId', 'n', n) as NodeId;
}
