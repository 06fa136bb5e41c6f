// The byte-exact patcher's properties over arbitrary conflist *texts* (any whitespace, big numbers,
// escapes, duplicate keys), and meta-plugins (Multus).
import { isAscii } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compactJson } from '../../src/cni/chained-plugin.js';
import { chainState, madeByConversion, planPatch, planUnpatch } from '../../src/cni/conflist.js';
import { mayBeMeta, scanConfig } from '../../src/cni/scan-config.js';
import { type Json, type JsonObject } from '../../src/cni/json.js';
import { JsonSyntaxError, lastMember, scanJson } from '../../src/cni/json-spans.js';
import { fixture } from '../helpers/fixtures.js';
import { b, jsonLevelPatch, plugin, pluginValue, TYPE, unwritten, written } from '../helpers/conflist.js';

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
// A list has one at least: libcni refuses a list of none, and the agent leaves it as it is.
const otherPluginText = fc
  .tuple(ws, fc.array(fc.tuple(fc.constantFrom('"a"', '"ipam"', '"mtu"', '"type"'), valueText), { maxLength: 3 }), fc.string().filter((t) => t !== TYPE), ws)
  .map(([a, members, type, c]) => `{${a}${[...members.map(([k, v]) => `${k}:${c}${v}`), `"type":${a}${JSON.stringify(type)}`].join(`,${c}`)}${c}}`);
const conflistText = fc
  .tuple(ws, fc.array(fc.tuple(fc.constantFrom('"cniVersion"', '"name"', '"x"', '"plugins"'), valueText), { maxLength: 3 }), fc.array(otherPluginText, { minLength: 1, maxLength: 5 }), ws, ws)
  .map(([a, members, plugins, c, d]) => {
    const list = `[${plugins.length === 0 ? c : `${c}${plugins.join(`,${c}`)}${d}`}]`;
    // `plugins` last: an earlier duplicate `plugins` member (from `members`) is ignored, as in Go.
    return `${d}{${a}${[...members.map(([k, v]) => `${k}:${v}`), `"plugins":${a}${list}`].join(`,${c}`)}${d}}${a}`;
  });

describe('properties', () => {
  it("tells the agent's own conversions from any other conflist, chained or unchained again", () => {
    // Every single-plugin config an otherPluginText can be, converted: ours, before and after unpatch.
    fc.assert(
      fc.property(otherPluginText, (single) => {
        const plan = planPatch(b(single), plugin);
        if (plan.action !== 'write' || !plan.upgraded) return;
        expect(madeByConversion(plan.bytes, TYPE)).toBe(true);
        const unpatched = planUnpatch(plan.bytes, TYPE);
        expect(unpatched.action === 'write' && madeByConversion(unpatched.bytes, TYPE)).toBe(true);
      }),
    );
    // Any conflist a primary writes, and its chained form: never ours.
    fc.assert(
      fc.property(conflistText, (text) => {
        expect(madeByConversion(b(text), TYPE)).toBe(false);
        const plan = planPatch(b(text), plugin);
        if (plan.action === 'write') expect(madeByConversion(plan.bytes, TYPE)).toBe(false);
      }),
    );
  });

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
        fc.array(fc.tuple(fc.string().filter((t) => t !== TYPE), fc.dictionary(fc.string().filter((k) => k !== 'type'), fc.jsonValue())), { minLength: 1, maxLength: 5 }),
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

describe('the meta-plugin hint (scan-config.ts mayBeMeta)', () => {
  // Its definition, written plainly: a config that is ASCII, holds no `\u` escape and none of the
  // hint words in any case surely names no meta-plugin key; anything else may.
  const oracle = (bytes: Buffer) => !isAscii(bytes) || bytes.includes('\\u') || ['multus', 'clusternetwork', 'delegates'].some((hint) => bytes.toString('latin1').toLowerCase().includes(hint));
  const hint = fc.constantFrom('multus', 'clusterNetwork', 'delegates', 'MULTUS', 'ClusterNetwork', 'dElEgAtEs', 'multu', 'clusternetwor', 'elegates');
  const piece = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), hint, fc.constantFrom('\\u', '\\', 'u', '\u017f', '\u212a', '"', 'M', 'c'));
  const text = fc.array(piece, { maxLength: 8 }).map((parts) => parts.join(''));

  it('says "maybe" exactly where its definition does, over arbitrary texts and every fixture', () => {
    fc.assert(
      fc.property(text, (t) => {
        const bytes = Buffer.from(t);
        expect(mayBeMeta(bytes)).toBe(oracle(bytes));
      }),
      { numRuns: 5000 },
    );
    for (const name of ['00-multus.conf', '05-cilium.conflist', '10-aws.conflist', '10-calico.conf', '10-calico.conflist', '10-containerd-net.conflist', '10-flannel.conflist', '99-bridge.conf']) {
      const bytes = Buffer.from(fixture(name));
      expect(mayBeMeta(bytes), name).toBe(oracle(bytes));
    }
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
    // Nothing to take out of Multus' own file; a delegate path is told, for the stop to unchain it.
    expect(planUnpatch(b(text), TYPE)).toEqual('path' in delegation ? { action: 'none', delegatePath: delegation.path } : { action: 'none' });
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
