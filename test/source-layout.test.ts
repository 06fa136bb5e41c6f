// What docs/design.md ("Layers") promises of the source's shape, checked on the files themselves: no
// file in src over 300 lines, and inside daemon/ no import from a lower layer to a higher one.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.join(import.meta.dirname, '..', 'src');
const LAYERS = ['shared', 'node', 'keepers', 'http', 'stop', 'lifecycle'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/** The daemon layer a file of src/daemon/ is in, or undefined outside daemon/. */
function layerOf(file: string): number | undefined {
  const rel = path.relative(path.join(SRC, 'daemon'), file).split(path.sep);
  return rel.length > 1 && !rel[0]!.startsWith('..') ? LAYERS.indexOf(rel[0]!) : undefined;
}

describe('the source layout', () => {
  const files = sources(SRC);

  it('has every folder of daemon/ in a layer', () => {
    expect(readdirSync(path.join(SRC, 'daemon')).sort()).toEqual([...LAYERS].sort());
  });

  it('keeps every file in src to 300 lines', () => {
    const long = files.map((f) => [path.relative(SRC, f), readFileSync(f, 'utf8').split('\n').length - 1] as const).filter(([, n]) => n > 300);
    expect(long).toEqual([]);
  });

  it('has no import inside daemon/ from a lower layer to a higher one', () => {
    const upward: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      if (from === undefined) continue;
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(/^(?:import|export)(?:[^'"]*from)? *'(\.[^']+)'/gm)) {
        const to = layerOf(path.resolve(path.dirname(file), spec!));
        if (to !== undefined && to > from) upward.push(`${path.relative(SRC, file)} -> ${spec}`);
      }
    }
    expect(upward).toEqual([]);
  });
});
