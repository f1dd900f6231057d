/**
 * Input checks shared by every public entry point. Each throws `InvalidArgumentError` whose
 * message starts with the operation, and returns the value narrowed, so call sites read
 * `const n = requireU32(OP, 'numBlocks', numBlocks);`.
 *
 * Checks run before any state changes: a refused call leaves the object exactly as it was.
 */
import { InvalidArgumentError } from '../errors/base.js';

/** Largest value of an unsigned 32-bit integer (2^32 − 1). */
export const U32_MAX = 0xffff_ffff;

/** The longest string, or class name, `describe` quotes whole. */
const DESCRIBE_MAX = 40;

/**
 * Describes a refused value for an error message. Total: it never throws, whatever the value (a
 * parsed `{"constructor": {"name": {}}}`, a Proxy whose traps throw, a getter on `constructor`,
 * a revoked Proxy), because it runs while a refusal is being built, and throwing there would
 * replace the typed error with a raw one.
 */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > DESCRIBE_MAX ? value.slice(0, DESCRIBE_MAX) + '…' : value);
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'function') return 'a function';
  if (typeof value !== 'object') return typeof value;
  let array = false;
  try {
    // Throws for a revoked Proxy.
    array = Array.isArray(value);
  } catch {
    return 'an object';
  }
  if (array) return 'an array';
  return `an object (${className(value)})`;
}

/** The name of `value`'s constructor when it is a string (cut as `describe` cuts strings), else `Object`; never throws. */
function className(value: object): string {
  let name: unknown;
  try {
    // A getter, a Proxy trap or a parsed object may stand where the class is: only a string is used.
    name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  } catch {
    return 'Object';
  }
  if (typeof name !== 'string' || name.length === 0) return 'Object';
  // Escaped as in a JSON string, so a name holding a line break stays on the message's one line.
  return JSON.stringify(name.length > DESCRIBE_MAX ? `${name.slice(0, DESCRIBE_MAX)}…` : name).slice(1, -1);
}

/** An integer in `min..max` (inclusive); refuses NaN, ±Infinity, fractions and non-numbers. */
export function requireInt(op: string, name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(op, name, `${name} must be an integer in ${min}..${max}, got ${describe(value)}`);
  }
  return value;
}

/** An unsigned 32-bit integer, 0..2^32−1. */
export function requireU32(op: string, name: string, value: unknown): number {
  return requireInt(op, name, value, 0, U32_MAX);
}

/** A positive unsigned 32-bit integer, 1..2^32−1. */
export function requirePositiveU32(op: string, name: string, value: unknown): number {
  return requireInt(op, name, value, 1, U32_MAX);
}

/** A byte count: an integer in 0..Number.MAX_SAFE_INTEGER. */
export function requireSize(op: string, name: string, value: unknown): number {
  return requireInt(op, name, value, 0, Number.MAX_SAFE_INTEGER);
}

/** A finite number (any sign); refuses NaN and ±Infinity. */
export function requireFinite(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidArgumentError(op, name, `${name} must be a finite number, got ${describe(value)}`);
  }
  return value;
}

/** A non-empty string. */
export function requireName(op: string, name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidArgumentError(op, name, `${name} must be a non-empty string, got ${describe(value)}`);
  }
  return value;
}

/** One of the allowed string values (a string enum at the API). */
export function requireOneOf<T extends string>(op: string, name: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(
      op,
      name,
      `${name} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got ${describe(value)}`,
    );
  }
  return value as T;
}

/** A boolean. */
export function requireBoolean(op: string, name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    throw new InvalidArgumentError(op, name, `${name} must be a boolean, got ${describe(value)}`);
  }
  return value;
}

/** A plain options object (or undefined, which becomes `{}`); refuses keys the caller does not know. */
export function requireOptions<T extends object>(op: string, value: unknown, known: readonly string[], name = 'options'): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(op, name, `${name} must be an object, got ${describe(value)}`);
  }
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      // The key is the caller's text: quoted bounded, so a huge or multi-line key cannot flood the message.
      const shown = JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}…` : key).slice(1, -1);
      const what = name === 'options' ? 'option' : `field of ${name}`;
      throw new InvalidArgumentError(op, name, `unknown ${what} '${shown}' (known: ${known.length ? known.join(', ') : 'none'})`);
    }
  }
  return value as Partial<T>;
}

/** A finite number ≥ 0 (a cost, a duration); refuses NaN, ±Infinity and negatives. */
export function requireNonNegativeFinite(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new InvalidArgumentError(op, name, `${name} must be a finite number ≥ 0, got ${describe(value)}`);
  }
  return value;
}

/**
 * True for an integer in 0..2^32−1 (`x >>> 0 === x` holds for exactly those numbers). A cheap test
 * for hot paths, which call the matching `require*` only to throw with the right message.
 */
export function isU32(value: unknown): value is number {
  return typeof value === 'number' && value >>> 0 === value;
}

/** True for a native `async function` or `async function*` (detectable before calling it). */
export function isAsyncFunction(fn: unknown): boolean {
  if (typeof fn !== 'function') return false;
  const tag = (fn as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag];
  return tag === 'AsyncFunction' || tag === 'AsyncGeneratorFunction';
}

/** True for a Promise or any object or function with a callable `then`. Never throws. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  try {
    return typeof (value as { then?: unknown }).then === 'function';
  } catch {
    return false;
  }
}

/**
 * True for a string with no lone surrogate: one that UTF-8 can encode as it is, where encoding a
 * lone surrogate would put U+FFFD in its place. `String.prototype.isWellFormed` (ES2024, in every
 * Node this package supports), typed here because the compiler's lib is ES2022.
 */
export function isWellFormed(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed();
}

/** A class whose genuine instances a private field tells apart from look-alikes (`static is`). */
export interface BrandedClass<T> {
  /** True for an object this class constructed (a brand check on a private field, not `instanceof`). */
  is(value: unknown): value is T;
  readonly name: string;
  readonly prototype: unknown;
}

/** `a Stream`, `an Event`. */
function withArticle(name: string): string {
  return `${/^[AEIOU]/.test(name) ? 'an' : 'a'} ${name}`;
}

/**
 * `value` if it is a genuine instance of `cls`; refuses anything else, including objects that
 * merely inherit its prototype (`Object.create(Stream.prototype)`) or come from another loaded copy
 * of cudagraph, whose private state this copy cannot read (using them could crash the process).
 * @throws InvalidArgumentError naming `op` and `name`.
 */
export function requireInstance<T>(op: string, name: string, value: unknown, cls: BrandedClass<T>): T {
  if (cls.is(value)) return value;
  let why = '';
  if (typeof value === 'object' && value !== null) {
    try {
      if (typeof cls.prototype === 'object' && cls.prototype !== null && Object.prototype.isPrototypeOf.call(cls.prototype, value)) {
        why = ` (it has ${cls.name}'s prototype but ${cls.name} did not make it, e.g. Object.create(${cls.name}.prototype))`;
      } else if ((value as { constructor?: { name?: unknown } }).constructor?.name === cls.name) {
        why = ` (a ${cls.name} of another loaded copy of cudagraph: objects cannot be mixed between copies)`;
      }
    } catch {
      // A Proxy or a getter that throws: the refusal goes without the hint.
    }
  }
  throw new InvalidArgumentError(op, name, `${name} must be ${withArticle(cls.name)}, got ${describe(value)}${why}`);
}

/** `requireInstance` as an assertion, for call sites that keep using the argument they checked. */
export function assertInstance<T>(op: string, name: string, value: unknown, cls: BrandedClass<T>): asserts value is T {
  requireInstance(op, name, value, cls);
}
