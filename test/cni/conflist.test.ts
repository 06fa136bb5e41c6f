// The byte-exact patcher on the fixtures and the odd files of the byte-exact issue; the property
// tests over arbitrary conflist texts are conflist-properties.test.ts.
import { describe, expect, it } from 'vitest';
import { parsePlugin } from '../../src/cni/chained-plugin.js';
import { chainState, DEFAULT_NETWORK_NAME, planPatch, planUnpatch } from '../../src/cni/conflist.js';
import { ConfigParseError, scanConfig } from '../../src/cni/scan-config.js';
import type { JsonObject } from '../../src/cni/json.js';
import { fixture, fixtureNames } from '../helpers/fixtures.js';
import { b, jsonLevelPatch, plugin, pluginValue, TYPE, unwritten, written } from '../helpers/conflist.js';

describe.each(fixtureNames)('fixture %s', (name) => {
  const text = fixture(name);
  const original = JSON.parse(text) as JsonObject;

  it('means what the JSON-level patch meant: plugin last, everything else kept in order', () => {
    const out = written(text);
    expect(JSON.parse(out.toString())).toEqual(jsonLevelPatch(original, pluginValue));
  });

  it('is left alone once chained, and the unpatch gives back the exact bytes', () => {
    const out = written(text);
    expect(planPatch(out, plugin)).toEqual({ action: 'none' });
    if (Array.isArray(original.plugins) || original.type === 'multus') {
      expect(unwritten(out).toString()).toBe(text);
    } else {
      // The upgraded conflist holds the original .conf bytes verbatim as its first plugin.
      expect(out.includes(b(text.trim()))).toBe(true);
    }
    expect(planUnpatch(b(text), TYPE)).toEqual({ action: 'none' });
  });

  it('indents the plugin like the element before it', () => {
    // A single-plugin .conf is wrapped by the patcher itself (four spaces); a conflist keeps its own.
    const out = written(text).toString();
    const at = out.lastIndexOf(`"type": "${TYPE}"`);
    const lineStart = out.lastIndexOf('\n', at) + 1;
    const added = out.slice(out.lastIndexOf('{', at), out.indexOf('}', at) + 1);
    // Every line of the inserted text sits at least as deep as the '{' that opens it.
    const openColumn = out.slice(out.lastIndexOf('\n', out.lastIndexOf('{', at)) + 1, out.lastIndexOf('{', at));
    for (const line of added.split('\n').slice(1)) expect(line.startsWith(openColumn)).toBe(true);
    expect(lineStart).toBeGreaterThan(0);
  });

  it('refuses every truncation of the file (a half-written file is never rewritten)', () => {
    const end = text.lastIndexOf('}');
    for (let cut = 0; cut <= end; cut++) {
      expect(planPatch(b(text.slice(0, cut)), plugin).action, `cut at ${cut}`).toBe('invalid');
    }
  });

  it('refuses valid JSON followed by junk', () => {
    expect(planPatch(b(`${text}}`), plugin).action).toBe('invalid');
    expect(planPatch(b(`${text}{"x":1}`), plugin).action).toBe('invalid');
    expect(planPatch(b(`${text}\u0000`), plugin).action).toBe('invalid');
  });
});

describe('byte-exact: what the primary wrote comes back exactly', () => {
  // The rows of the byte-exact issue's table: each survives a patch and comes back from the unpatch.
  const odd: Array<[string, string]> = [
    ['2^53+1', '9007199254740993'],
    ['a 30-digit integer', '123456789012345678901234567890'],
    ['1.0', '1.0'],
    ['1e3', '1e3'],
    ['-0', '-0'],
    ['1e-400', '1e-400'],
    ['escapes', '"\\u00e9\\/x"'],
    ['a lone surrogate escape', '"\\ud800"'],
  ];
  it.each(odd)('%s', (_, raw) => {
    const text = `{\n\t"cniVersion" : "1.0.0",\n\t"plugins" : [ { "type" : "calico", "v" : ${raw} } ]\n}\n`;
    const out = written(text);
    expect(out.toString()).toContain(`"v" : ${raw}`);
    expect(unwritten(out).toString()).toBe(text);
  });

  it('duplicate keys: both stay, and the last one decides (as in Go)', () => {
    const text = '{"name":"a","name":"b","plugins":[{"type":"x","type":"calico"}],"plugins":[{"type":"bridge"}]}';
    const out = written(text);
    expect(out.toString()).toContain('"name":"a","name":"b","plugins":[{"type":"x","type":"calico"}]');
    expect(unwritten(out).toString()).toBe(text);
    // Our type found under a duplicate key is recognised by the last one.
    const ours = `{"plugins":[{"type":"${TYPE}","type":"other"},{"type":"other","type":"${TYPE}"}]}`;
    expect(unwritten(b(ours)).toString()).toBe(`{"plugins":[{"type":"${TYPE}","type":"other"}]}`);
  });

  it('invalid UTF-8 inside a string survives (Go accepts it; JSON.parse would make it U+FFFD)', () => {
    const text = Buffer.concat([b('{"plugins":[{"type":"calico","raw":"'), Buffer.from([0xff, 0xfe, 0xc3]), b('"}]}')]);
    const out = written(text);
    expect(out.includes(Buffer.from([0xff, 0xfe, 0xc3]))).toBe(true);
    expect(unwritten(out).equals(text)).toBe(true);
  });

  it('a minified config gets a minified plugin', () => {
    const small = parsePlugin('{\n  "type": "p",\n  "args": [ 1e400, "a b", {"k" : "\\" x"} ]\n}');
    const plan = planPatch(b('{"plugins":[{"type":"calico"}]}'), small);
    // Written out by hand: no whitespace outside strings, every token as given (1e400 included).
    expect(plan.action === 'write' && plan.bytes.toString()).toBe('{"plugins":[{"type":"calico"},{"type":"p","args":[1e400,"a b",{"k":"\\" x"}]}]}');
  });

  it('an empty plugins array is left as it is (libcni refuses it), and a list of ours alone is no network', () => {
    // Patched, either would be a network of the chained plugin alone: the runtime would load it and
    // fail every pod (test/cni/as-containerd-loads.test.ts holds this to containerd's own reading).
    for (const text of ['{"plugins":[]}', '{"plugins":[ \n ]}']) {
      expect(planPatch(b(text), plugin)).toEqual({ action: 'invalid', reason: 'its "plugins" list is empty (libcni refuses it)' });
    }
    const alone = `{"plugins":[${plugin.compact}]}`;
    expect(planPatch(b(alone), plugin)).toEqual({ action: 'plugin-alone' });
    expect(planPatch(b(`{"plugins":[{"type":${JSON.stringify(TYPE)}},${plugin.compact}]}`), plugin)).toEqual({ action: 'plugin-alone' });
    // An earlier version's patch of an empty list still comes out to the byte.
    expect(unwritten(b(alone)).toString()).toBe('{"plugins":[]}');
  });

  it('nesting 50,000 levels deep: patched and unpatched, no stack overflow', () => {
    const depth = 50_000;
    const deep = `${'['.repeat(depth)}1${']'.repeat(depth)}`;
    const text = `{"plugins":[{"type":"calico","deep":${deep}}]}`;
    const out = written(text);
    expect(planPatch(out, plugin)).toEqual({ action: 'none' });
    expect(unwritten(out).toString()).toBe(text);
    // Unbalanced at depth: refused, not thrown.
    expect(planPatch(b(`{"plugins":[${'['.repeat(depth)}]}`), plugin).action).toBe('invalid');
  });

  it('the .conf upgrade embeds the original bytes verbatim and keeps cniVersion and name as written', () => {
    const text = '{ "cniVersion":"0.3.1" , "name" : "k\\u0038s", "type":"bridge", "n": 1.50 }';
    const out = written(`\n${text}\n`).toString();
    expect(out).toContain(`    ${text},\n`);
    expect(out).toContain('"cniVersion": "0.3.1",');
    expect(out).toContain('"name": "k\\u0038s",');
    expect(JSON.parse(out).plugins[1]).toEqual(pluginValue);
  });

  it('names an unnamed single-plugin config k8s-pod-network and keeps a missing cniVersion missing', () => {
    expect(JSON.parse(written('{"type":"bridge"}').toString())).toEqual({ name: DEFAULT_NETWORK_NAME, plugins: [{ type: 'bridge' }, pluginValue] });
  });
});

describe('patching rules', () => {
  it('moves an older copy of our plugin to the end, replacing it', () => {
    const old = { ...pluginValue, log_level: 'debug' };
    const doc = { cniVersion: '0.3.1', name: 'n', plugins: [{ type: 'calico' }, old, { type: 'portmap' }] };
    expect(JSON.parse(written(JSON.stringify(doc, null, 2)).toString()).plugins).toEqual([{ type: 'calico' }, { type: 'portmap' }, pluginValue]);
  });

  it('removes duplicates of our type and is not fooled by key order or whitespace', () => {
    const reordered = Object.fromEntries(Object.entries(pluginValue).reverse());
    expect(planPatch(b(JSON.stringify({ plugins: [{ type: 'calico' }, reordered] }, null, 3)), plugin)).toEqual({ action: 'none' });
    const twice = { plugins: [pluginValue, { type: 'calico' }, pluginValue] };
    expect(JSON.parse(written(JSON.stringify(twice)).toString()).plugins).toEqual([{ type: 'calico' }, pluginValue]);
  });

  it('a copy of ours whose number differs only in how it is written is not chained (1 vs 1.0)', () => {
    const p = parsePlugin('{"type":"p","mtu":1}');
    const config = scanConfig(b('{"plugins":[{"type":"p","mtu":1.0}]}'));
    expect(chainState(config, p)).toBe('stale-plugin');
    expect(chainState(scanConfig(b('{"plugins":[{"mtu":1,"type":"p"}]}')), p)).toBe('chained');
  });

  it("chains Multus' embedded delegate, never Multus itself: no conversion, one plugin entry", () => {
    const out = written(fixture('00-multus.conf'));
    const doc = JSON.parse(out.toString()) as JsonObject;
    expect(doc.type).toBe('multus');
    expect(doc.plugins).toBeUndefined();
    const delegate = (doc.delegates as JsonObject[])[0]!;
    expect((delegate.plugins as JsonObject[]).at(-1)).toEqual(pluginValue);
    expect(out.toString().split(`"type": "${TYPE}"`).length - 1).toBe(1);
  });

  it.each([
    ['clusterNetwork', 'as written'],
    ['CLUSTERNETWORK', 'in capitals'],
    ['clusterNetw\\u006frk', 'escaped'],
    ['clu\u017fterNetwork', "with Go's folding of \u017f to s"],
    ['clusterNetwor\u212a', "with Go's folding of the Kelvin sign to k"],
  ])('takes a config with "%s" (%s) for a meta-plugin, as Go\'s encoding/json does: never chained, its delegate path told', (key) => {
    const text = `{"cniVersion":"0.3.1","name":"m","type":"x","${key}":"/etc/cni/net.d/10-a.conflist"}`;
    const plan = planPatch(b(text), plugin);
    expect(plan.action).toBe('delegates');
    expect(plan.action === 'delegates' && plan.delegation).toEqual({ kind: 'path', path: '/etc/cni/net.d/10-a.conflist' });
    expect(planUnpatch(b(text), TYPE)).toEqual({ action: 'none', delegatePath: '/etc/cni/net.d/10-a.conflist' });
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
    ['a trailing comma', '{"plugins":[{"type":"a"},]}'],
    ['a leading zero', '{"plugins":[{"type":"a","n":01}]}'],
    ['a raw control character in a string', '{"plugins":[{"type":"a\u0001"}]}'],
    ['a bad escape', '{"plugins":[{"type":"\\x"}]}'],
    ['a single quote', "{'plugins':[]}"],
  ])('refuses %s', (_, text) => {
    expect(planPatch(b(text), plugin).action).toBe('invalid');
    expect(planUnpatch(b(text), TYPE).action).toBe('invalid');
    expect(() => scanConfig(b(text))).toThrow(ConfigParseError);
  });

  it('rejects a plugin config that cannot be chained', () => {
    for (const text of ['', '{', '[]', '{"name":"x"}', '{"type":""}', '{"type":1}', '{"type":"a"} x']) expect(() => parsePlugin(text)).toThrow(ConfigParseError);
    expect(parsePlugin(' {"type":"a", "n": 1e400}\n')).toMatchObject({ type: 'a', text: '{"type":"a", "n": 1e400}', compact: '{"type":"a","n":1e400}' });
  });
});

// Arbitrary JSON *texts*: any whitespace, numbers JavaScript cannot hold, escapes, duplicate keys.
