import { InvalidArgumentError } from '../errors/base.js';
import { describe } from '../util/validate.js';
import { LaunchEnvironmentError } from './launch-environment-error.js';

/** What a launcher such as torchrun tells each process, parsed and checked. */
export interface LaunchEnvironment {
  /** `RANK`: this process's rank in the whole job, 0..worldSize−1. */
  readonly rank: number;
  /** `WORLD_SIZE`: ranks in the whole job, ≥ 1. */
  readonly worldSize: number;
  /** `LOCAL_RANK`: this process's rank on its host; the CUDA device it drives by default. */
  readonly localRank: number;
  /** `LOCAL_WORLD_SIZE`: ranks on this host, or null when the launcher did not set it. */
  readonly localWorldSize: number | null;
  /** `MASTER_ADDR`: where rank 0 is reached (a name or an IP address). */
  readonly masterAddr: string;
  /** `MASTER_PORT`: rank 0's rendezvous port, 1..65535. */
  readonly masterPort: number;
  /**
   * `TORCHELASTIC_USE_AGENT_STORE=True`: torchrun's agent already serves its own store on
   * `MASTER_ADDR:MASTER_PORT`, so that port is taken (`initNcclFromEnvironment` then uses the next).
   */
  readonly agentStore: boolean;
}

/** Values of the environment, as `process.env` holds them. */
export type EnvironmentVariables = Readonly<Record<string, string | undefined>>;

const OP = 'parseLaunchEnvironment';
/** Decimal digits only: a launcher writes plain integers; '1e3', '0x10', ' 1' and '+1' are mistakes to report. */
const DIGITS = /^[0-9]+$/;

function shown(value: string): string {
  return `'${value.length > 60 ? `${value.slice(0, 60)}…` : value}'`;
}

function variable(op: string, env: EnvironmentVariables, name: string): string {
  const v = env[name];
  if (v === undefined) throw new LaunchEnvironmentError(op, name, undefined, `${name} is not set (a launcher such as torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT)`);
  if (typeof v !== 'string') throw new LaunchEnvironmentError(op, name, undefined, `${name} must be a string, got ${describe(v)}`);
  return v;
}

function integer(op: string, name: string, value: string, min: number, max: number, what: string): number {
  if (/^-[0-9]+$/.test(value)) throw new LaunchEnvironmentError(op, name, value, `${name} must be ${what}, got ${shown(value)} (negative)`);
  if (!DIGITS.test(value)) throw new LaunchEnvironmentError(op, name, value, `${name} must be ${what}, got ${shown(value)} (not a whole number)`);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new LaunchEnvironmentError(op, name, value, `${name} must be ${what}, got ${shown(value)}`);
  return n;
}

/**
 * Reads the variables torchrun (and launchers that copy it) sets for each process: `RANK`,
 * `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`, and `LOCAL_WORLD_SIZE` when present.
 * Each must be a plain decimal integer in range (`MASTER_ADDR` a non-empty host without spaces);
 * `RANK` < `WORLD_SIZE`, `LOCAL_RANK` < `LOCAL_WORLD_SIZE` ≤ `WORLD_SIZE`. Nothing is read from
 * the network and nothing is changed.
 *
 * @example
 * const launch = parseLaunchEnvironment(); // process.env
 * console.log(`rank ${launch.rank} of ${launch.worldSize} on GPU ${launch.localRank}`);
 * @throws LaunchEnvironmentError naming the variable and its value for anything missing or out of
 *   range; InvalidArgumentError when `env` is not an object.
 */
export function parseLaunchEnvironment(env: EnvironmentVariables = process.env): LaunchEnvironment {
  return readLaunchEnvironment(OP, env);
}

/** @internal `parseLaunchEnvironment` reporting under the caller's operation name. */
export function readLaunchEnvironment(op: string, env: EnvironmentVariables): LaunchEnvironment {
  if (typeof env !== 'object' || env === null || Array.isArray(env)) {
    throw new InvalidArgumentError(op, 'env', `env must be an object of environment variables (like process.env), got ${describe(env)}`);
  }
  const worldSize = integer(op, 'WORLD_SIZE', variable(op, env, 'WORLD_SIZE'), 1, 0x7fff_ffff, 'a whole number ≥ 1');
  const rankText = variable(op, env, 'RANK');
  const rank = integer(op, 'RANK', rankText, 0, Number.MAX_SAFE_INTEGER, 'a whole number ≥ 0');
  if (rank >= worldSize) throw new LaunchEnvironmentError(op, 'RANK', rankText, `RANK must be below WORLD_SIZE (${worldSize}), got ${shown(rankText)}`);
  let localWorldSize: number | null = null;
  const lws = env['LOCAL_WORLD_SIZE'];
  if (lws !== undefined) {
    localWorldSize = integer(op, 'LOCAL_WORLD_SIZE', String(lws), 1, 0x7fff_ffff, 'a whole number ≥ 1');
    if (localWorldSize > worldSize) {
      throw new LaunchEnvironmentError(op, 'LOCAL_WORLD_SIZE', String(lws), `LOCAL_WORLD_SIZE must not exceed WORLD_SIZE (${worldSize}), got ${shown(String(lws))}`);
    }
  }
  const localText = variable(op, env, 'LOCAL_RANK');
  const localRank = integer(op, 'LOCAL_RANK', localText, 0, Number.MAX_SAFE_INTEGER, 'a whole number ≥ 0');
  if (localWorldSize !== null && localRank >= localWorldSize) {
    throw new LaunchEnvironmentError(op, 'LOCAL_RANK', localText, `LOCAL_RANK must be below LOCAL_WORLD_SIZE (${localWorldSize}), got ${shown(localText)}`);
  }
  if (localRank >= worldSize) throw new LaunchEnvironmentError(op, 'LOCAL_RANK', localText, `LOCAL_RANK must be below WORLD_SIZE (${worldSize}), got ${shown(localText)}`);
  const masterAddr = variable(op, env, 'MASTER_ADDR');
  if (masterAddr.length === 0 || /\s/.test(masterAddr)) {
    throw new LaunchEnvironmentError(op, 'MASTER_ADDR', masterAddr, `MASTER_ADDR must be a host name or IP address without spaces, got ${shown(masterAddr)}`);
  }
  const masterPort = integer(op, 'MASTER_PORT', variable(op, env, 'MASTER_PORT'), 1, 65535, 'a port number in 1..65535');
  return { rank, worldSize, localRank, localWorldSize, masterAddr, masterPort, agentStore: env['TORCHELASTIC_USE_AGENT_STORE'] === 'True' };
}
