/** Parsing of numeric command-line options, with one-line errors. */
import { nameText } from '../model/bounded-text.js';
import { OptionError } from './usage-error.js';

/** An integer option in min..max. @throws OptionError naming the option otherwise. */
export function intOption(name: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new OptionError(`${name} must be an integer from ${min} to ${max}, got '${nameText(value)}'`);
  }
  return n;
}

/** A comma-separated list of integers in min..max. @throws OptionError naming the option otherwise. */
export function intListOption(name: string, value: string, min: number, max: number): number[] {
  const parts = value.split(',').map((p) => p.trim());
  if (parts.length === 0 || parts.some((p) => p === '')) throw new OptionError(`${name} must be a comma-separated list of integers, got '${nameText(value)}'`);
  return parts.map((p) => intOption(name, p, min, max));
}

/** A decimal number, with an optional sign, fraction and exponent (no hexadecimal, binary or octal forms, no `Infinity`). */
const DECIMAL = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i;

/**
 * A decimal number option that `accept` takes; `range` says which in the error
 * (`--scale must be a number from 0.1 to 10, got 'big'`).
 * @throws OptionError naming the option otherwise.
 */
export function numberOption(name: string, value: string, accept: (n: number) => boolean, range: string): number {
  const n = Number(value);
  if (!DECIMAL.test(value) || !Number.isFinite(n) || !accept(n)) throw new OptionError(`${name} must be a number ${range}, got '${nameText(value)}'`);
  return n;
}
