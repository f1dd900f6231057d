/**
 * CRC-32 (the zlib / PNG polynomial), as the binary graph form checks each section with. Node's
 * `zlib.crc32` (native, several GB/s) where the runtime has it (Node 20.15 and later), else a
 * table-driven one in JS (a few hundred MB/s), which gives the same values.
 */
import * as zlib from 'node:zlib';

type Crc32 = (data: Uint8Array, value?: number) => number;

let table: Uint32Array | null = null;

function crc32Js(data: Uint8Array, value = 0): number {
  if (table === null) {
    table = new Uint32Array(256);
    for (let i = 0; i < 256; i++) {
      let c = i;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[i] = c >>> 0;
    }
  }
  const t = table;
  let c = ~value >>> 0;
  for (let i = 0; i < data.length; i++) c = t[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

const native = (zlib as unknown as { crc32?: Crc32 }).crc32;

/** The CRC-32 of `data`, continuing from `value` (the CRC of the bytes before it; 0 to start). */
export const crc32: Crc32 = typeof native === 'function' ? native : crc32Js;

/** The JS implementation, exported so that tests can hold it against the native one. */
export const crc32Portable: Crc32 = crc32Js;
