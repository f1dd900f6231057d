/**
 * The environment variables a function reads (what `process.env` is), spelled without Node's own
 * types so the published typings need no `@types/node`.
 */
export type Environment = Readonly<Record<string, string | undefined>>;

/** An environment a function may also set variables in (as `process.env`). */
export type WritableEnvironment = Record<string, string | undefined>;
