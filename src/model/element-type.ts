/**
 * The one vocabulary of numeric types and collective operations, shared by every layer: the model
 * (scalar kernel arguments, collectives recorded by `MultiDeviceCapture`), kernel arguments
 * (`arg.*`), `DeviceScalar`, and NCCL collectives (whose binding maps these names to NCCL's codes).
 * It lives in the model because the model runs without any binding.
 */

/** The element type of device data: the C type of one element. */
export type ElementType = 'i8' | 'u8' | 'i32' | 'u32' | 'i64' | 'u64' | 'f16' | 'bf16' | 'f32' | 'f64';

/** Bytes per element of each type. */
export const ELEMENT_BYTES: { readonly [K in ElementType]: 1 | 2 | 4 | 8 } = Object.freeze({
  i8: 1,
  u8: 1,
  i32: 4,
  u32: 4,
  i64: 8,
  u64: 8,
  f16: 2,
  bf16: 2,
  f32: 4,
  f64: 8,
});

/** Every element type, in the order error messages list them. */
export const ELEMENT_TYPES: readonly ElementType[] = Object.freeze(['i8', 'u8', 'i32', 'u32', 'i64', 'u64', 'f16', 'f32', 'f64', 'bf16']);

/** The element types a scalar kernel argument can have (`arg.i32`, …, a builder's `b.f32(x)`). */
export type ScalarType = 'i32' | 'u32' | 'i64' | 'u64' | 'f32' | 'f64';

/** Every scalar type. */
export const SCALAR_TYPES: readonly ScalarType[] = Object.freeze(['i32', 'u32', 'i64', 'u64', 'f32', 'f64']);

/** A reduction of a collective. */
export type ReduceOp = 'sum' | 'prod' | 'max' | 'min' | 'avg';

/** Every reduction. */
export const REDUCE_OPS: readonly ReduceOp[] = Object.freeze(['sum', 'prod', 'max', 'min', 'avg']);

/** A collective operation. */
export type CollectiveOp = 'allReduce' | 'broadcast' | 'reduce' | 'allGather' | 'reduceScatter';

/** Every collective operation. */
export const COLLECTIVE_OPS: readonly CollectiveOp[] = Object.freeze(['allReduce', 'broadcast', 'reduce', 'allGather', 'reduceScatter']);
