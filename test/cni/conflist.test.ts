import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  chainPlugin,
  ConfigParseError,
  DEFAULT_NETWORK_NAME,
  isChained,
  parseConfig,
  planPatch,
  planUnpatch,
  serializeConfig,
  unchainPlugin,
} from '../../src/cni/conflist.js';
import type { Json, JsonObject } from '../../src/cni/json.js';
import { expectedPlugin, fixture, fixtureNames } from '../helpers/fixtures.js';

const plugin = expectedPlugin();
const TYPE = plugin.type as string;

function patched(text: string): JsonObject {
  const plan = planPatch(text, plugin);
  if (plan.action !== 'write') throw new Error(`expected a write, got ${plan.action}`);
  return JSON.parse(plan.text) as JsonObject;
}

describe.each(fixtureNames)('fixture %s', (name) => {
  const text = fixture(name);
  const original = JSON.parse(text) as JsonObject;

  it('gets the plugin appended last, everything else kept in order', () => {
    const doc = patched(text);
    const plugins = doc.plugins as Json[];
    expect(plugins.at(-1)).toEqual(plugin);
    if (Array.isArray(original.plugins)) {
      expect(Object.keys(doc)).toEqual(Object.keys(original));
      expect(plugins.slice(0, -1)).toEqual(original.plugins);
      expect({ ...doc, plugins: original.plugins }).toEqual(original);
    } else {
      // A single-plugin config becomes a conflist around the untouched original.
      expect(plugins).toEqual([original, plugin]);
      expect(doc.cniVersion).toBe(original.cniVersion);
      expect(doc.name).toBe(original.name ?? DEFAULT_NETWORK_NAME);
    }
  });

  it('is left alone once chained (no write), and unpatching restores the list', () => {
    const once = serializeConfig(patched(text));
    expect(planPatch(once, plugin)).toEqual({ action: 'none' });
    const unpatch = planUnpatch(once, TYPE);
    expect(unpatch.action).toBe('write');
    const restored = JSON.parse((unpatch as { text: string }).text) as JsonObject;
    expect(restored).toEqual(Array.isArray(original.plugins) ? original : { ...patched(text), plugins: [original] });
    expect(planUnpatch(text, TYPE)).toEqual({ action: 'none' });
  });

  it('refuses every truncation of the file (a half-written file is never rewritten)', () => {
    const end = text.lastIndexOf('}');
    for (let cut = 0; cut <= end; cut++) {
      expect(planPatch(text.slice(0, cut), plugin).action, `cut at ${cut}`).toBe('invalid');
    }
  });

  it('refuses valid JSON followed by junk', () => {
    expect(planPatch(`${text}}`, plugin).action).toBe('invalid');
    expect(planPatch(`${text}{"x":1}`, plugin).action).toBe('invalid');
    expect(planPatch(`${text}\u0000`, plugin).action).toBe('invalid');
  });
});

describe('patching rules', () => {
  it('moves an older copy of our plugin to the end, replacing it', () => {
    const old = { ...plugin, log_level: 'debug' };
    const doc = { cniVersion: '0.3.1', name: 'n', plugins: [{ type: 'calico' }, old, { type: 'portmap' }] };
    expect(patched(JSON.stringify(doc)).plugins).toEqual([{ type: 'calico' }, { type: 'portmap' }, plugin]);
  });

  it('removes duplicates of our type and is not fooled by key order', () => {
    const reordered = Object.fromEntries(Object.entries(plugin).reverse());
    const doc = { plugins: [{ type: 'calico' }, reordered] };
    expect(planPatch(JSON.stringify(doc), plugin)).toEqual({ action: 'none' });
    const twice = { plugins: [plugin, { type: 'calico' }, plugin] };
    expect(patched(JSON.stringify(twice)).plugins).toEqual([{ type: 'calico' }, plugin]);
  });

  it('does not descend into Multus delegates', () => {
    const doc = patched(fixture('00-multus.conf'));
    const multus = (doc.plugins as JsonObject[])[0]!;
    expect(multus.delegates).toEqual((JSON.parse(fixture('00-multus.conf')) as JsonObject).delegates);
    expect(JSON.stringify(multus.delegates)).not.toContain(TYPE);
  });

  it('names an unnamed single-plugin config k8s-pod-network and keeps a missing cniVersion missing', () => {
    expect(patched('{"type":"bridge"}')).toEqual({ name: DEFAULT_NETWORK_NAME, plugins: [{ type: 'bridge' }, plugin] });
  });

  it.each([
    ['not JSON', 'hello'],
    ['an array', '[]'],
    ['a string', '"x"'],
    ['null', 'null'],
    ['no plugins and no type', '{"name":"x"}'],
    ['plugins not a list', '{"plugins":{}}'],
    ['type not a string', '{"type":3}'],
    ['empty', ''],
  ])('refuses %s', (_, text) => {
    expect(planPatch(text, plugin).action).toBe('invalid');
    expect(planUnpatch(text, TYPE).action).toBe('invalid');
    expect(() => parseConfig(text)).toThrow(ConfigParseError);
  });

  it('keeps unknown keys at every level', () => {
    const doc = { zzz: 1, plugins: [{ type: 'x', nested: { deep: [1, { a: null }] } }], aaa: { b: true } };
    const out = patched(JSON.stringify(doc));
    expect(Object.keys(out)).toEqual(['zzz', 'plugins', 'aaa']);
    expect(out.aaa).toEqual({ b: true });
    expect((out.plugins as Json[])[0]).toEqual(doc.plugins[0]);
  });
});

// Arbitrary conflists: plugins of random types (never ours) with random extra keys, random top level.
const otherPlugin = fc
  .tuple(
    fc.string({ minLength: 1 }).filter((t) => t !== TYPE),
    fc.dictionary(fc.string().filter((k) => k !== 'type'), fc.jsonValue()),
  )
  .map(([type, extra]) => ({ ...extra, type }) as JsonObject);
const conflist = fc
  .tuple(fc.dictionary(fc.string().filter((k) => k !== 'plugins'), fc.jsonValue()), fc.array(otherPlugin, { maxLength: 6 }))
  // Through JSON once, as a file on disk would be (-0 becomes 0, for one).
  .map(([top, plugins]) => JSON.parse(JSON.stringify({ ...top, plugins })) as JsonObject);

describe('properties', () => {
  it('unpatch(patch(x)) equals x, to the byte', () => {
    fc.assert(
      fc.property(conflist, (doc) => {
        const text = serializeConfig(doc);
        const once = planPatch(text, plugin);
        expect(once.action).toBe('write');
        const back = planUnpatch((once as { text: string }).text, TYPE);
        expect(back).toEqual({ action: 'write', text });
      }),
    );
  });

  it('patch is idempotent', () => {
    fc.assert(
      fc.property(conflist, (doc) => {
        const once = serializeConfig(chainPlugin(parseConfig(serializeConfig(doc)), plugin));
        expect(planPatch(once, plugin)).toEqual({ action: 'none' });
        expect(isChained(parseConfig(once), plugin)).toBe(true);
      }),
    );
  });

  it('keeps every other plugin, in order', () => {
    fc.assert(
      fc.property(conflist, fc.nat(6), (doc, at) => {
        const plugins = [...(doc.plugins as Json[])];
        plugins.splice(Math.min(at, plugins.length), 0, { type: TYPE, stale: true });
        const out = chainPlugin(parseConfig(JSON.stringify({ ...doc, plugins })), plugin);
        expect(out.plugins).toEqual([...(doc.plugins as Json[]), plugin]);
        expect(unchainPlugin(parseConfig(JSON.stringify(out)), TYPE)).toEqual(doc);
      }),
    );
  });

  it('never throws on arbitrary text, and parseConfig throws only ConfigParseError', () => {
    const anyText = fc.oneof(fc.string(), fc.json(), fc.jsonValue().map((v) => JSON.stringify(v)), fc.string({ unit: 'binary' }));
    fc.assert(
      fc.property(anyText, (text) => {
        const plan = planPatch(text, plugin);
        expect(['none', 'write', 'invalid']).toContain(plan.action);
        expect(['none', 'write', 'invalid']).toContain(planUnpatch(text, TYPE).action);
        try {
          parseConfig(text);
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigParseError);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('a written patch always parses back to a chained conflist', () => {
    fc.assert(
      fc.property(fc.oneof(conflist, otherPlugin), (doc) => {
        const plan = planPatch(JSON.stringify(doc), plugin);
        if (plan.action !== 'write') return;
        const parsed = parseConfig(plan.text);
        expect(parsed.shape).toBe('conflist');
        expect(isChained(parsed, plugin)).toBe(true);
      }),
    );
  });
});
