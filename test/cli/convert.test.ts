/**
 * `cudagraph convert` and the binary form on the command line: JSON → .cgraph → JSON gives the
 * same text; `inspect` and `render` read either, knowing the binary form by its first bytes; a
 * damaged binary file or an unknown output extension is a one-line user error.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assertUserError, cudagraph, graph50, inTempDir } from './helpers.js';

/** A 50-node graph saved as JSON in `dir`, and converted to binary beside it: the two paths and the command's run. */
function saved(dir: string): { json: string; bin: string; run: ReturnType<typeof cudagraph> } {
  const json = join(dir, 'g.json');
  writeFileSync(json, JSON.stringify(graph50()));
  const bin = join(dir, 'g.cgraph');
  return { json, bin, run: cudagraph(['convert', json, '-o', bin]) };
}

test('convert: JSON → binary → JSON is the same text, and inspect and render read the binary file', () => {
  inTempDir((dir) => {
    const { json, bin, run: r } = saved(dir);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^wrote .*g\.cgraph \(binary, 50 nodes, \d+ edges, \d+ bytes\)/);
    assert.equal(readFileSync(bin).subarray(0, 6).toString('latin1'), 'CGRAPH');
    const back = join(dir, 'back.json');
    assert.equal(cudagraph(['convert', bin, '-o', back]).status, 0);
    assert.equal(readFileSync(back, 'utf8'), readFileSync(json, 'utf8'));
    const fromJson = cudagraph(['inspect', '--json', json]);
    const fromBin = cudagraph(['inspect', '--json', bin]);
    assert.equal(fromBin.status, 0, fromBin.stderr);
    assert.deepEqual({ ...JSON.parse(fromBin.stdout), file: '' }, { ...JSON.parse(fromJson.stdout), file: '' });
    const svg = join(dir, 'g.svg');
    assert.equal(cudagraph(['render', bin, '-o', svg]).status, 0);
    assert.match(readFileSync(svg, 'utf8'), /<svg/);
  });
});

test('convert and inspect refuse a damaged binary file, an unknown extension and the input as output', () => {
  inTempDir((dir) => {
    const { json, bin, run } = saved(dir);
    assert.equal(run.status, 0, run.stderr);
    const bytes = readFileSync(bin);
    const cut = join(dir, 'cut.cgraph');
    writeFileSync(cut, bytes.subarray(0, bytes.length - 3));
    assertUserError(cudagraph(['inspect', cut]), /cut\.cgraph is not a valid binary graph file: the file ends inside section 'ECOD'/, 'a truncated file');
    const flipped = join(dir, 'flip.cgraph');
    const f = Buffer.from(bytes);
    f[60]! ^= 0x10;
    writeFileSync(flipped, f);
    assertUserError(cudagraph(['inspect', flipped]), /flip\.cgraph is not a valid binary graph file: section 'KIND' fails its checksum/, 'a flipped bit');
    assertUserError(cudagraph(['convert', json, '-o', join(dir, 'g.bin')]), /the output must end in \.cgraph \(binary\) or \.json/, 'an unknown extension');
    assertUserError(cudagraph(['convert', json, '-o', json]), /is the input file/, 'the input as output');
  });
});

test('convert shows an output name with control characters escaped', { skip: process.platform === 'win32' ? 'such names are not allowed here' : false }, () => {
  inTempDir((dir) => {
    const json = join(dir, 'g.json');
    writeFileSync(json, JSON.stringify(graph50()));
    const r = cudagraph(['convert', json, '-o', join(dir, 'g\x1b[31m\nforged.cgraph')]);
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stdout, /\x1b|\nforged/);
    assert.match(r.stdout, /^wrote .*g\\u001b\[31m\\u000aforged\.cgraph \(binary, 50 nodes/);
  });
});
