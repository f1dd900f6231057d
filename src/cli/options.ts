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
