import { CudagraphError } from '../errors/base.js';

/**
 * A launcher's environment variable (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`,
 * `MASTER_ADDR`, `MASTER_PORT`, as torchrun sets them) is missing or not what it must be. `variable`
 * names it and `value` is what it held (`undefined` when unset); the message starts with the
 * operation and names both (`parseLaunchEnvironment: RANK must be a whole number ≥ 0, got '-1'`).
 */
export class LaunchEnvironmentError extends CudagraphError {
  readonly code = 'ERR_LAUNCH_ENVIRONMENT' as const;
  /** The operation that read the environment, e.g. `parseLaunchEnvironment`. */
  readonly operation: string;
  /** The variable refused, e.g. `WORLD_SIZE`. */
  readonly variable: string;
  /** Its value, or `undefined` when it is not set. */
  readonly value: string | undefined;

  constructor(operation: string, variable: string, value: string | undefined, message: string) {
    super(`${operation}: ${message}`);
    this.operation = operation;
    this.variable = variable;
    this.value = value;
  }
}
