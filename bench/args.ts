/**
 * The command-line flags of the small benchmark scripts (bench:pdl, bench:await, bench:serve and
 * its step bench): `--name value` pairs, read once each; a bad integer ends the script with a
 * one-line message and exit status 2.
 */

/** The value after `--name` in `argv`, or `dflt`. */
export function flag(argv: readonly string[], name: string, dflt: string): string {
  const i = argv.indexOf(name);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : dflt;
}

/** The integer ≥ 1 after `--name`, or `dflt`; anything else exits naming `script` and the flag. */
export function intFlag(script: string, argv: readonly string[], name: string, dflt: number): number {
  const v = Number(flag(argv, name, String(dflt)));
  if (!Number.isInteger(v) || v < 1) {
    process.stderr.write(`${script}: ${name} must be an integer ≥ 1\n`);
    process.exit(2);
  }
  return v;
}
