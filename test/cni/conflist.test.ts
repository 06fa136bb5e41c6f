// The byte-exact patcher: unit tests on the fixtures and the odd files of the byte-exact issue, and
// property tests over arbitrary conflist *texts* (any whitespace, big numbers, escapes, duplicate keys).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  chainState,
  compactJson,
  ConfigParseError,
  DEFAULT_NETWORK_NAME,
  parsePlugin,
  planPatch,
  planUnpatch,
  scanConfig,
  type ChainedPlugin,
} from '../../src/cni/conflist.js';
import { isJsonObject, type Json, type JsonObject } from '../../src/cni/json.js';
import { JsonSyntaxError, lastMember, scanJson } from '../../src/cni/json-spans.js';
import { expectedPlugin, fixture, fixtureNames, pluginText } from '../helpers/fixtures.js';

const pluginValue = expectedPlugin();
const plugin: ChainedPlugin = parsePlugin(pluginText.replaceAll('__KUBECONFIG_FILEPATH__', '/etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig'));
const TYPE = plugin.type;
const b = (text: string) => Buffer.from(text);

function written(bytes: Buffer | string): Buffer {
  const plan = planPatch(typeof bytes === 'string' ? b(bytes) : bytes, plugin);
  if (plan.action !== 'write') throw new Error(`expected a write, got ${plan.action}`);
  return plan.bytes;
}

function unwritten(bytes: Buffer): Buffer {
  const plan = planUnpatch(bytes, TYPE);
  if (plan.action !== 'write') throw new Error(`expected a write, got ${plan.action}`);
  return plan.bytes;
}

/** The JSON-level patch of version 0.1: what the byte-exact patch must mean wherever that one lost nothing. */
function jsonLevelPatch(doc: JsonObject, ours: JsonObject): JsonObject {
  const typeOf = (p: Json) => (isJsonObject(p) && typeof p.type === 'string' ? p.type : undefined);
  // A meta-plugin (Multus) with embedded delegates: the plugin goes into its first delegate only.
  if (typeOf(doc) === 'multus' && Array.isArray(doc.delegates)) {
    const [first, ...rest] = doc.delegates as JsonObject[];
    return { ...doc, delegates: [jsonLevelPatch(first!, ours), ...rest] };
  }
  if (!Object.hasOwn(doc, 'plugins')) {
    const upgraded: JsonObject = {};
    if (doc.cniVersion !== undefined) upgraded.cniVersion = doc.cniVersion;
    upgraded.name = doc.name ?? DEFAULT_NETWORK_NAME;
    upgraded.plugins = [doc, ours];
    return upgraded;
  }
  return { ...doc, plugins: [...(doc.plugins as Json[]).filter((p) => typeOf(p) !== ours.type), ours] };
}

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

  it('an empty plugins array, with or without whitespace', () => {
    for (const text of ['{"plugins":[]}', '{"plugins":[ \n ]}']) {
      const out = written(text);
      expect(JSON.parse(out.toString()).plugins).toEqual([pluginValue]);
      expect(unwritten(out).toString()).toBe(text);
    }
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
const ws = fc.constantFrom('', ' ', '\n', '\n  ', '\t', ' \r\n    ');
const numberText = fc.oneof(
  fc.constantFrom('0', '-0', '1.0', '1e3', '1E+3', '-1.5e-400', '1e400', '9007199254740993', '123456789012345678901234567890'),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
);
const stringText = fc.oneof(
  fc.string().map((s) => JSON.stringify(s)),
  fc.constantFrom('"\\u00e9\\/x"', '"\\ud800"', '"a\\nb\\t"', '"\\"q\\""', '"\\\\"'),
);
const keyText = fc.oneof(stringText, fc.constantFrom('"type"', '"name"', '"plugins"', '"a"'));
const { value: valueTextUntyped } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, numberText, stringText, fc.constantFrom('true', 'false', 'null'), tie('array'), tie('object')),
  array: fc.tuple(ws, fc.array(tie('value') as fc.Arbitrary<string>, { maxLength: 3 }), ws).map(([a, items, c]) => `[${a}${items.join(`${a},${c}`)}${c}]`),
  object: fc
    .tuple(ws, fc.array(fc.tuple(keyText, tie('value') as fc.Arbitrary<string>), { maxLength: 3 }), ws)
    .map(([a, members, c]) => `{${a}${members.map(([k, v]) => `${k}${c}:${a}${v}`).join(`${c},${a}`)}${c}}`),
}));
const valueText = valueTextUntyped as fc.Arbitrary<string>;
// A plugin element of another type (a `type` key may also appear earlier, duplicated: the last counts).
const otherPluginText = fc
  .tuple(ws, fc.array(fc.tuple(fc.constantFrom('"a"', '"ipam"', '"mtu"', '"type"'), valueText), { maxLength: 3 }), fc.string().filter((t) => t !== TYPE), ws)
  .map(([a, members, type, c]) => `{${a}${[...members.map(([k, v]) => `${k}:${c}${v}`), `"type":${a}${JSON.stringify(type)}`].join(`,${c}`)}${c}}`);
const conflistText = fc
  .tuple(ws, fc.array(fc.tuple(fc.constantFrom('"cniVersion"', '"name"', '"x"', '"plugins"'), valueText), { maxLength: 3 }), fc.array(otherPluginText, { maxLength: 5 }), ws, ws)
  .map(([a, members, plugins, c, d]) => {
    const list = `[${plugins.length === 0 ? c : `${c}${plugins.join(`,${c}`)}${d}`}]`;
    // `plugins` last: an earlier duplicate `plugins` member (from `members`) is ignored, as in Go.
    return `${d}{${a}${[...members.map(([k, v]) => `${k}:${v}`), `"plugins":${a}${list}`].join(`,${c}`)}${d}}${a}`;
  });

describe('properties', () => {
  it('the scanner accepts exactly what JSON.parse accepts', () => {
    const anyText = fc.oneof(valueText, fc.string(), fc.json(), valueText.map((t) => t.slice(0, Math.max(0, t.length - 1))), valueText.map((t) => `${t}x`));
    fc.assert(
      fc.property(anyText, (text) => {
        let jsonOk = true;
        try {
          JSON.parse(text);
        } catch {
          jsonOk = false;
        }
        let ours = true;
        try {
          scanJson(b(text));
        } catch (err) {
          expect(err).toBeInstanceOf(JsonSyntaxError);
          ours = false;
        }
        expect(ours).toBe(jsonOk);
      }),
      { numRuns: 3000 },
    );
  });

  it('a key is found by what it decodes to, as JSON.parse finds it (escaped, non-ASCII, duplicated)', () => {
    const spellings = fc.constantFrom('"type"', '"\\u0074ype"', '"typ\\u0065"', '"typ"', '"types"', '"Type"', '"é"', '"\\u00e9"', '"t\\"y"', '"t\\\\y"', '"\\ud800"');
    const objectText = fc
      .tuple(fc.array(fc.tuple(fc.oneof(spellings, keyText), valueText), { maxLength: 6 }), ws)
      .map(([members, a]) => `{${a}${members.map(([k, v]) => `${k}:${a}${v}`).join(`,${a}`)}}`);
    fc.assert(
      fc.property(objectText, (text) => {
        const bytes = b(text);
        const root = scanJson(bytes);
        const parsed = JSON.parse(text) as Record<string, Json>;
        for (const key of ['type', 'typ', 'é', 't"y', 't\\y', '\ud800', ...Object.keys(parsed)]) {
          const node = lastMember(bytes, root, key);
          const want = Object.hasOwn(parsed, key) ? parsed[key] : undefined;
          expect(node === undefined ? undefined : JSON.parse(bytes.subarray(node.start, node.end).toString())).toEqual(want);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('unpatch(patch(x)) is x, to the byte', () => {
    fc.assert(
      fc.property(conflistText, (text) => {
        const out = written(text);
        expect(unwritten(out).toString()).toBe(text);
      }),
      { numRuns: 1000 },
    );
  });

  it('patch is idempotent', () => {
    fc.assert(
      fc.property(conflistText, (text) => {
        expect(planPatch(written(text), plugin)).toEqual({ action: 'none' });
      }),
      { numRuns: 1000 },
    );
  });

  it('means what the JSON-level patch meant, wherever that one lost nothing', () => {
    // Values JSON.parse round-trips exactly (no duplicate keys, safe numbers), written with any indent.
    const doc = fc
      .tuple(
        fc.dictionary(fc.string().filter((k) => k !== 'plugins'), fc.jsonValue()),
        fc.array(fc.tuple(fc.string().filter((t) => t !== TYPE), fc.dictionary(fc.string().filter((k) => k !== 'type'), fc.jsonValue())), { maxLength: 5 }),
        fc.constantFrom(0, 1, 2, 4, '\t'),
      )
      .map(([top, plugins, indent]) => ({ doc: JSON.parse(JSON.stringify({ ...top, plugins: plugins.map(([type, extra]) => ({ ...extra, type })) })) as JsonObject, indent }));
    fc.assert(
      fc.property(doc, ({ doc, indent }) => {
        const out = written(JSON.stringify(doc, null, indent));
        expect(JSON.parse(out.toString())).toEqual(jsonLevelPatch(doc, pluginValue));
      }),
      { numRuns: 500 },
    );
  });

  it('older entries of our type anywhere are replaced by one entry last; every other token is kept', () => {
    fc.assert(
      fc.property(conflistText, fc.nat(6), (text, at) => {
        const config = scanConfig(b(text));
        const items = config.plugins!.items!;
        const stale = `{"type":${JSON.stringify(TYPE)},"stale":true}`;
        // Put a stale copy of ours in front of element `at` (or last).
        const k = Math.min(at, items.length);
        const insertAt = k < items.length ? items[k]!.start : config.plugins!.end - 1;
        const withStale = k < items.length ? `${text.slice(0, insertAt)}${stale},${text.slice(insertAt)}` : items.length === 0 ? `${text.slice(0, insertAt)}${stale}${text.slice(insertAt)}` : `${text.slice(0, items.at(-1)!.end)},${stale}${text.slice(items.at(-1)!.end)}`;
        const out = written(withStale);
        expect(chainState(scanConfig(out), plugin)).toBe('chained');
        // A stale entry we did not put there takes one separator with it: only whitespace may differ.
        expect(compactJson(unwritten(out).toString())).toBe(compactJson(text));
      }),
      { numRuns: 1000 },
    );
  });

  it('never throws on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.string(), (bytes, text) => {
        for (const input of [Buffer.from(bytes), b(text)]) {
          expect(['none', 'write', 'invalid']).toContain(planPatch(input, plugin).action);
          expect(['none', 'write', 'invalid']).toContain(planUnpatch(input, TYPE).action);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('meta-plugins (Multus): never chained themselves, their delegate is', () => {
  const restDelegates = fc.array(otherPluginText, { maxLength: 2 });
  const multusAround = (delegate: string, a: string, rest: string[]) =>
    `{${a}"cniVersion": "0.3.1",${a}"name": "multus-cni-network",${a}"type": "multus",${a}"delegates": [${a}${[delegate, ...rest].join(`,${a}`)}${a}]${a}}\n`;

  it('an embedded delegate gets the plugin inside Multus, byte-exact, and it comes out exactly', () => {
    fc.assert(
      fc.property(conflistText, ws, restDelegates, (delegate, a, rest) => {
        const text = multusAround(delegate.trim(), a, rest);
        const out = written(text);
        const start = text.indexOf(delegate.trim());
        const end = start + delegate.trim().length;
        // Everything outside the first delegate is untouched; the delegate is patched as a conflist would be.
        expect(out.subarray(0, start).toString()).toBe(text.slice(0, start));
        expect(out.subarray(out.length - (text.length - end)).toString()).toBe(text.slice(end));
        expect(out.subarray(start, out.length - (text.length - end)).toString()).toBe(written(delegate.trim()).toString());
        expect(planPatch(out, plugin)).toEqual({ action: 'none' });
        expect(unwritten(out).toString()).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it("Multus' conflist form (cniVersion 1.0.0) is a meta-plugin too", () => {
    const text = `{"cniVersion":"1.0.0","name":"multus-cni-network","plugins":[{"type":"multus","delegates":[${fixture('10-calico.conflist').trim()}]}]}`;
    const out = written(text);
    const doc = JSON.parse(out.toString()) as { plugins: Array<{ delegates: Array<{ plugins: JsonObject[] }> }> };
    expect(doc.plugins).toHaveLength(1);
    expect(doc.plugins[0]!.delegates[0]!.plugins.at(-1)).toEqual(pluginValue);
    expect(unwritten(out).toString()).toBe(text);
  });

  it.each([
    ['a path', '"clusterNetwork": "/host/etc/cni/net.d/10-calico.conflist"', { kind: 'path', path: '/host/etc/cni/net.d/10-calico.conflist' }],
    ['a name', '"clusterNetwork": "calico"', { kind: 'name', name: 'calico' }],
    ['a path, delegates ignored as Multus ignores them', `"clusterNetwork": "/etc/cni/net.d/x.conflist", "delegates": [${fixture('10-flannel.conflist')}]`, { kind: 'path', path: '/etc/cni/net.d/x.conflist' }],
    ['neither', '"kubeconfig": "/x"', { kind: 'none' }],
  ])('clusterNetwork given as %s: never written', (_, member, delegation) => {
    const text = `{"cniVersion": "0.3.1", "name": "multus-cni-network", "type": "multus", ${member}}`;
    expect(planPatch(b(text), plugin)).toEqual({ action: 'delegates', delegation });
    expect(planUnpatch(b(text), TYPE)).toEqual({ action: 'none' });
  });

  it('a single-plugin embedded delegate is refused, not converted inside Multus', () => {
    const plan = planPatch(b(multusAround(fixture('10-calico.conf').trim(), ' ', [])), plugin);
    expect(plan.action).toBe('refuse');
  });

  it('an earlier version that chained Multus itself is repaired by the unpatch', () => {
    const legacy = `{"cniVersion":"0.3.1","name":"multus-cni-network","plugins":[${fixture('00-multus.conf').trim()},${plugin.text}]}`;
    const plan = planUnpatch(b(legacy), TYPE);
    expect(plan.action).toBe('write');
    expect(JSON.parse((plan as { bytes: Buffer }).bytes.toString()).plugins).toHaveLength(1);
  });
});
