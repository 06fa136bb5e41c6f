import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadedConfig, loadOrder, primaryConfig, type ConfigEntry, type EntryKind } from '../../src/cni/runtime-load.js';

const stem = fc.stringMatching(/^[0-9a-zA-Z_\-.é]{0,6}$/);
const ext = fc.constantFrom('.conf', '.conflist', '.json', '.CONF', '.yaml', '', '.conflist~');
const kind = fc.constantFrom<EntryKind>('file', 'symlink', 'undecodable', 'other');
const entry = fc.record({ name: fc.tuple(stem, ext).map(([s, e]) => s + e), kind, meta: fc.boolean() });
const entries = fc.uniqueArray(entry, { selector: (e) => e.name, maxLength: 12 });

// Go's sort.Strings: byte order of the UTF-8 names.
const goLess = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0;
// Go's filepath.Ext: from the last dot on.
const goExt = (name: string) => (name.includes('.') ? name.slice(name.lastIndexOf('.')) : '');

describe('which config the runtime loads', () => {
  it('tries exactly the regular files, symlinks and undecodable names with a libcni extension, in byte order', () => {
    fc.assert(
      fc.property(entries, (list) => {
        const order = loadOrder(list);
        const expected = list.filter((e) => e.kind !== 'other' && ['.conf', '.conflist', '.json'].includes(goExt(e.name)));
        expect(new Set(order.map((e) => e.name))).toEqual(new Set(expected.map((e) => e.name)));
        for (let i = 1; i < order.length; i++) expect(goLess(order[i - 1]!.name, order[i]!.name)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('loads the first entry of the load order, whatever order the directory lists', () => {
    fc.assert(
      fc.property(entries, (list) => {
        expect(loadedConfig(list)).toBe(loadOrder(list)[0]);
        expect(loadedConfig([...list].reverse())).toBe(loadOrder(list)[0]);
      }),
      { numRuns: 2000 },
    );
  });

  it('finds the primary: the first loaded entry that is not set aside', () => {
    fc.assert(
      fc.property(entries, (list) => {
        const primary = primaryConfig(list, (e) => e.meta);
        const rest = loadOrder(list).filter((e) => !e.meta);
        expect(primary).toBe(rest[0]);
        if (primary !== undefined) for (const e of loadOrder(list)) if (goLess(e.name, primary.name)) expect(e.meta).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('sorts by bytes, not by UTF-16 code units or locale', () => {
    const list: ConfigEntry[] = [
      { name: 'é.conf', kind: 'file' },
      { name: 'z.conf', kind: 'file' },
      { name: 'Z.conflist', kind: 'symlink' },
      { name: '10.json', kind: 'other' },
      { name: '10-calico.CONF', kind: 'file' },
      { name: '.conf', kind: 'file' },
    ];
    expect(loadOrder(list).map((e) => e.name)).toEqual(['.conf', 'Z.conflist', 'z.conf', 'é.conf']);
  });
});
