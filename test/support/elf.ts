/**
 * A reader of the little a test asks of a 64-bit little-endian ELF shared object (the prebuilt
 * addons): its machine, the libraries it needs, the symbol versions it needs from them and the
 * functions it exports. Reads the section headers, which a stripped file keeps.
 */

/** ELF `e_machine` values of the architectures cudagraph ships an addon for. */
export const ELF_MACHINE = { x64: 62, arm64: 183 } as const;

export interface ElfFacts {
  /** `e_type`: 3 for a shared object. */
  readonly type: number;
  /** `e_machine`. */
  readonly machine: number;
  /** DT_NEEDED entries, in order. */
  readonly needed: readonly string[];
  /** The version names needed from each library (`.gnu.version_r`), e.g. `{ 'libc.so.6': ['GLIBC_2.17'] }`. */
  readonly versionsNeeded: Readonly<Record<string, readonly string[]>>;
  /** Global functions defined in the file (`.dynsym`). */
  readonly exportedFunctions: readonly string[];
}

const SHT_DYNAMIC = 6;
const SHT_DYNSYM = 11;
const SHT_GNU_VERNEED = 0x6ffffffe;
const DT_NEEDED = 1n;

/** The facts of `bytes`; throws when they are not a 64-bit little-endian ELF file. */
export function readElf(bytes: Buffer): ElfFacts {
  if (bytes.length < 64 || bytes.readUInt32BE(0) !== 0x7f454c46) throw new Error('not an ELF file');
  if (bytes[4] !== 2 || bytes[5] !== 1) throw new Error('not a 64-bit little-endian ELF file');
  const u64 = (at: number): number => Number(bytes.readBigUInt64LE(at));
  const shoff = u64(0x28);
  const shentsize = bytes.readUInt16LE(0x3a);
  const shnum = bytes.readUInt16LE(0x3c);
  const sections = Array.from({ length: shnum }, (_, i) => {
    const at = shoff + i * shentsize;
    return { type: bytes.readUInt32LE(at + 4), offset: u64(at + 24), size: u64(at + 32), link: bytes.readUInt32LE(at + 40), info: bytes.readUInt32LE(at + 44), entsize: u64(at + 56) };
  });
  const stringAt = (table: number, at: number): string => {
    const start = sections[table]!.offset + at;
    return bytes.toString('latin1', start, bytes.indexOf(0, start));
  };
  const needed: string[] = [];
  const versionsNeeded: Record<string, string[]> = {};
  const exportedFunctions: string[] = [];
  for (const s of sections) {
    if (s.type === SHT_DYNAMIC) {
      for (let at = s.offset; at < s.offset + s.size; at += 16) {
        if (bytes.readBigInt64LE(at) === DT_NEEDED) needed.push(stringAt(s.link, u64(at + 8)));
      }
    } else if (s.type === SHT_DYNSYM) {
      for (let at = s.offset; at < s.offset + s.size; at += s.entsize) {
        const info = bytes[at + 4]!;
        const defined = bytes.readUInt16LE(at + 6) !== 0;
        // STB_GLOBAL (1) in the high nibble, STT_FUNC (2) in the low one.
        if (defined && info >> 4 === 1 && (info & 0xf) === 2) exportedFunctions.push(stringAt(s.link, bytes.readUInt32LE(at)));
      }
    } else if (s.type === SHT_GNU_VERNEED) {
      // sh_info Verneed entries, each with vn_cnt Vernaux entries.
      let need = s.offset;
      for (let n = 0; n < s.info; n++) {
        const file = stringAt(s.link, bytes.readUInt32LE(need + 4));
        const names = (versionsNeeded[file] ??= []);
        let aux = need + bytes.readUInt32LE(need + 8);
        for (let k = 0; k < bytes.readUInt16LE(need + 2); k++) {
          names.push(stringAt(s.link, bytes.readUInt32LE(aux + 8)));
          aux += bytes.readUInt32LE(aux + 12);
        }
        need += bytes.readUInt32LE(need + 12);
      }
    }
  }
  return { type: bytes.readUInt16LE(16), machine: bytes.readUInt16LE(18), needed, versionsNeeded, exportedFunctions };
}

/** The newest `GLIBC_x.y[.z]` among `versions` (compared numerically), or null. */
export function newestGlibc(versions: readonly string[]): string | null {
  const parsed = versions.filter((v) => /^GLIBC_\d+(\.\d+)*$/.test(v)).map((v) => ({ v, n: v.slice(6).split('.').map(Number) }));
  parsed.sort((a, b) => {
    for (let i = 0; i < Math.max(a.n.length, b.n.length); i++) {
      const d = (a.n[i] ?? 0) - (b.n[i] ?? 0);
      if (d !== 0) return d;
    }
    return 0;
  });
  return parsed.at(-1)?.v ?? null;
}
