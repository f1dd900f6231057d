/**
 * The direction of a modelled copy. The three common directions are plain strings, so they compare
 * with `===`, print readably and survive `JSON.stringify` unchanged; a peer-to-peer copy also names
 * its two devices, so it is a small object made by `MemcpyDir.PeerToPeer(src, dst)`.
 */
import { InvalidArgumentError } from '../errors/base.js';
import { describe, requireU32 } from '../util/validate.js';
import { nameText } from './bounded-text.js';

/** A copy between two devices (GPU ordinals), made by `MemcpyDir.PeerToPeer(srcDevice, dstDevice)`. */
export interface PeerToPeerDir {
  readonly kind: 'PeerToPeer';
  readonly srcDevice: number;
  readonly dstDevice: number;
}

/** `'HostToDevice' | 'DeviceToHost' | 'DeviceToDevice'`, or a `PeerToPeerDir` object. */
export type MemcpyDir = 'HostToDevice' | 'DeviceToHost' | 'DeviceToDevice' | PeerToPeerDir;

/**
 * The copy directions of the seed's `MemcpyDir`.
 *
 * @example
 * cap.recordMemcpy(s, 'upload', MemcpyDir.HostToDevice, 4096);
 * cap.recordMemcpy(s, 'halo', MemcpyDir.PeerToPeer(0, 1), 1 << 20);
 */
export const MemcpyDir = {
  HostToDevice: 'HostToDevice',
  DeviceToHost: 'DeviceToHost',
  DeviceToDevice: 'DeviceToDevice',
  /**
   * A copy from device `srcDevice` to device `dstDevice`.
   * @throws InvalidArgumentError unless both are integers in 0..2^32−1.
   */
  PeerToPeer(srcDevice: number, dstDevice: number): PeerToPeerDir {
    requireU32('MemcpyDir.PeerToPeer', 'srcDevice', srcDevice);
    requireU32('MemcpyDir.PeerToPeer', 'dstDevice', dstDevice);
    return { kind: 'PeerToPeer', srcDevice, dstDevice };
  },
} as const;

/** How a peer-to-peer copy prints everywhere (labels, messages): `PeerToPeer(dev0→dev1)`, the seed's `Display`. */
function peerToPeerText(dir: PeerToPeerDir): string {
  return `PeerToPeer(dev${dir.srcDevice}→dev${dir.dstDevice})`;
}

/**
 * Short form used in picture labels: `HtoD`, `DtoH`, `DtoD`; a peer-to-peer copy keeps its full
 * form, `PeerToPeer(dev0→dev1)` (it has no short form that would still name both devices).
 */
export function memcpyDirLabel(dir: MemcpyDir): string {
  switch (dir) {
    case 'HostToDevice':
      return 'HtoD';
    case 'DeviceToHost':
      return 'DtoH';
    case 'DeviceToDevice':
      return 'DtoD';
    default:
      return peerToPeerText(dir);
  }
}

/** Full form used in messages: `HostToDevice`, `DeviceToHost`, `DeviceToDevice`, `PeerToPeer(dev0→dev1)`. */
export function memcpyDirName(dir: MemcpyDir): string {
  return typeof dir === 'string' ? dir : peerToPeerText(dir);
}

/** Storage code of `HostToDevice` (a direction is a small number in the node columns, see graph-store.ts). */
export const DIR_H2D = 0;
/** Storage code of `DeviceToHost`. */
export const DIR_D2H = 1;
/** Storage code of `DeviceToDevice`. */
export const DIR_D2D = 2;
/** Storage code of a peer-to-peer copy (its devices are kept beside it). */
export const DIR_P2P = 3;

/**
 * Checks a direction given by a user (or read from JSON) and returns its storage code; for a
 * peer-to-peer copy the devices go to `out[0]`, `out[1]`.
 * @throws InvalidArgumentError naming `name` (e.g. `dir`, `nodes[3].dir.srcDevice`).
 */
export function encodeMemcpyDir(op: string, name: string, dir: unknown, out: Uint32Array | number[]): number {
  switch (dir) {
    case 'HostToDevice':
      return DIR_H2D;
    case 'DeviceToHost':
      return DIR_D2H;
    case 'DeviceToDevice':
      return DIR_D2D;
  }
  if (typeof dir === 'object' && dir !== null && !Array.isArray(dir) && (dir as { kind?: unknown }).kind === 'PeerToPeer') {
    for (const key of Object.keys(dir)) {
      if (key !== 'kind' && key !== 'srcDevice' && key !== 'dstDevice') {
        throw new InvalidArgumentError(op, name, `${name} has an unknown field '${nameText(key)}' (known: kind, srcDevice, dstDevice)`);
      }
    }
    const p = dir as { srcDevice?: unknown; dstDevice?: unknown };
    out[0] = requireU32(op, `${name}.srcDevice`, p.srcDevice);
    out[1] = requireU32(op, `${name}.dstDevice`, p.dstDevice);
    return DIR_P2P;
  }
  throw new InvalidArgumentError(
    op,
    name,
    `${name} must be 'HostToDevice', 'DeviceToHost', 'DeviceToDevice' or MemcpyDir.PeerToPeer(src, dst), got ${describe(dir)}`,
  );
}

const PLAIN_DIRS: readonly MemcpyDir[] = ['HostToDevice', 'DeviceToHost', 'DeviceToDevice'];

/** The inverse of `encodeMemcpyDir`. */
export function decodeMemcpyDir(code: number, srcDevice: number, dstDevice: number): MemcpyDir {
  return code === DIR_P2P ? { kind: 'PeerToPeer', srcDevice, dstDevice } : PLAIN_DIRS[code]!;
}
