// The agent's reading of a config held to the runtime's own: containerd 2's go-cni and libcni
// (tools/cluster/cni-load) load each config before and after the agent's patch. Whatever the runtime
// loads, the patch keeps loadable and makes it run the plugin last; what the agent calls chained, the
// runtime runs the plugin in; what the runtime refuses, the agent leaves alone; the unpatch gives the
// bytes back. The configs are texts as Go reads them: keys escaped or in another case, duplicate keys,
// strings with escapes, lone surrogates and bytes that are not UTF-8, big numbers, any whitespace.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planPatch, planUnpatch, type PatchPlan } from '../../src/cni/conflist.js';
import { conflistName, libcniReading } from '../../src/cni/names.js';
import { loadAsContainerd, type RuntimeLoad } from '../helpers/cni-load.js';
import { plugin, TYPE } from '../helpers/conflist.js';
import { repoRoot } from '../helpers/addon-path.js';
import { fixturesDir } from '../helpers/fixtures.js';
import { tempDir } from '../helpers/tmp.js';

// A byte that is not UTF-8 (Go reads it as U+FFFD): a private-use character stands for it until the
// text is encoded.
const NOT_UTF8 = '\uE000';
const encode = (text: string): Buffer => {
  const bytes = Buffer.from(text);
  const mark = Buffer.from(NOT_UTF8);
  const parts: Buffer[] = [];
  let from = 0;
  for (let at = bytes.indexOf(mark); at >= 0; at = bytes.indexOf(mark, from)) {
    parts.push(bytes.subarray(from, at), Buffer.from([0xff]));
    from = at + mark.length;
  }
  parts.push(bytes.subarray(from));
  return Buffer.concat(parts);
};

const ws = fc.constantFrom('', '', ' ', '\n  ', '\t', '\r\n');
const stringChars = fc.array(fc.constantFrom('a', 'b', '-', '.', '/', '0', '\\n', '\\"', '\\\\', '\\/', '\\u00e9', '\\ud800', '\\ud83d\\ude00', 'é', '漢', NOT_UTF8), { maxLength: 5 });
const anyString = stringChars.map((cs) => `"${cs.join('')}"`);
const number = fc.constantFrom('0', '-1', '1.5e3', '1e400', '12345678901234567890', '0.25');
const { value: anyValue } = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, number, anyString, fc.constantFrom('true', 'false', 'null'), tie('array'), tie('object')),
  array: fc.array(tie('value') as fc.Arbitrary<string>, { maxLength: 3 }).map((items) => `[${items.join(', ')}]`),
  object: fc.array(fc.tuple(fc.constantFrom('"ipam"', '"mtu"', '"subnet"', '"x"', '"routes"'), tie('value') as fc.Arbitrary<string>), { maxLength: 3 }).map((ms) => `{${ms.map(([k, v]) => `${k}: ${v}`).join(', ')}}`),
}));
const value = anyValue as fc.Arbitrary<string>;

/**
 * `key` as written, with one letter escaped, or in another case: Go matches a plugin's keys to
 * libcni's struct in any case, while a list's keys are looked up in a map, where another case is
 * another key.
 */
function keyText(key: string): fc.Arbitrary<string> {
  const escaped = fc.nat(key.length - 1).map((i) => `"${key.slice(0, i)}\\u00${key.charCodeAt(i).toString(16)}${key.slice(i + 1)}"`);
  const cased = fc.constantFrom(`"${key[0]!.toUpperCase()}${key.slice(1)}"`, `"${key.toUpperCase()}"`);
  return fc.oneof({ weight: 6, arbitrary: fc.constant(`"${key}"`) }, { weight: 1, arbitrary: escaped }, { weight: 1, arbitrary: cased });
}

const pluginType = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('"bridge"', '"calico"', '"portmap"', '"bandwidth"', `"${TYPE}"`) },
  { weight: 1, arbitrary: fc.constantFrom('""', '5', 'null', '"a\\u0000b"', `"${NOT_UTF8}x"`) },
);
type Member = [key: string, value: string];
const extraMembers = fc.array(fc.tuple(fc.constantFrom('"ipam"', '"mtu"', '"log_level"', '"capabilities"', '"args"'), value), { maxLength: 2 });
const joinObject = (members: Member[], gap: string) => `{${gap}${members.map(([k, v]) => `${k}:${gap}${v}`).join(`,${gap}`)}${gap}}`;

// A plugin of a list: mostly an object with a type (twice, sometimes), now and then something else.
const pluginObject = fc
  .tuple(fc.array(fc.tuple(keyText('type'), pluginType), { minLength: 0, maxLength: 2 }), extraMembers, ws)
  .chain(([types, extra, gap]) => fc.shuffledSubarray([...types, ...extra], { minLength: types.length + extra.length }).map((ms) => joinObject(ms, gap)));
const pluginItem = fc.oneof({ weight: 12, arbitrary: pluginObject }, { weight: 1, arbitrary: fc.constantFrom('5', '"bridge"', 'null', '[]') });
const pluginsValue = fc.oneof(
  { weight: 12, arbitrary: fc.tuple(fc.array(pluginItem, { minLength: 1, maxLength: 3 }), ws).map(([items, gap]) => `[${gap}${items.join(`,${gap}`)}${gap}]`) },
  { weight: 1, arbitrary: fc.constantFrom('[]', 'null', '"x"', '{}') },
);
const optional = <T,>(arb: fc.Arbitrary<T>, weight = 6): fc.Arbitrary<T[]> => fc.oneof({ weight, arbitrary: arb.map((x) => [x]) }, { weight: 1, arbitrary: fc.constant([] as T[]) });

/** A conflist as a primary, a person or an attacker may write it. */
const conflist = fc
  .tuple(
    optional(fc.tuple(keyText('cniVersion'), fc.oneof({ weight: 8, arbitrary: fc.constantFrom('"0.3.1"', '"0.4.0"', '"1.0.0"') }, { weight: 1, arbitrary: fc.constantFrom('1', '""') }))),
    optional(fc.tuple(keyText('name'), fc.oneof({ weight: 8, arbitrary: anyString }, { weight: 1, arbitrary: fc.constantFrom('5', 'null') }))),
    fc.array(fc.tuple(keyText('plugins'), pluginsValue), { minLength: 0, maxLength: 2 }),
    optional(fc.tuple(fc.constant('"disableCheck"'), fc.constantFrom('true', 'false', '"true"', '"FALSE"', '"yes"', '1')), 1),
    // A `type` beside the list: libcni reads it in a `.conf` and ignores it in a `.conflist`.
    optional(fc.tuple(keyText('type'), pluginType), 1),
    extraMembers,
    ws,
    fc.constantFrom('', '\n', '\uFEFF'),
  )
  .chain(([version, name, plugins, check, type, extra, gap, edge]) => {
    const members: Member[] = [...version, ...name, ...plugins, ...check, ...type, ...extra];
    return fc.shuffledSubarray(members, { minLength: members.length }).map((ms) => {
      const text = joinObject(ms, gap);
      return edge === '\uFEFF' ? `\uFEFF${text}` : `${text}${edge}`;
    });
  });

/** A single-plugin .conf. */
const single = fc
  .tuple(fc.tuple(keyText('type'), pluginType), optional(fc.tuple(keyText('name'), anyString)), optional(fc.tuple(keyText('cniVersion'), fc.constantFrom('"0.3.1"', '"1.0.0"'))), extraMembers, ws)
  .chain(([type, name, version, extra, gap]) => {
    const members: Member[] = [type, ...name, ...version, ...extra];
    return fc.shuffledSubarray(members, { minLength: members.length }).map((ms) => joinObject(ms, gap));
  });
// libcni reads a file by its extension, not by what it holds: now and then a list in a `.conf` or a
// `.json`, or a single plugin in a `.conflist`.
const extension = (usual: string) => fc.oneof({ weight: 8, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: fc.constantFrom('.conflist', '.conf', '.json') });

interface Case {
  name: string;
  bytes: Buffer;
}

/** Each config alone in a directory of its own, loaded there by containerd's code. */
function loadEach(root: string, cases: readonly Case[]): RuntimeLoad[] {
  const dirs = cases.map((c, i) => {
    const dir = path.join(root, String(i));
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, c.name), c.bytes);
    return dir;
  });
  return loadAsContainerd(dirs);
}


const loaded = (l: RuntimeLoad) => l.error === undefined;
const describeCase = (c: Case, l: RuntimeLoad, plan: PatchPlan) => `${c.name} ${JSON.stringify(c.bytes.toString('latin1'))}: runtime ${loaded(l) ? `runs ${l.plugins.join(',')}` : `refuses it (${l.error})`}; agent plans ${plan.action}${'reason' in plan ? ` (${plan.reason})` : ''}`;

/**
 * The properties over `cases`: the runtime's load of each before and after the patch, compared with
 * the plan. Returns the failures, one line each.
 */
function check(cases: readonly Case[]): string[] {
  const root = tempDir('as-containerd-');
  const before = loadEach(path.join(root, 'before'), cases);
  // Read as the agent reads a config of net.d: by its name's extension, as the runtime does.
  const plans = cases.map((c) => planPatch(c.bytes, plugin, libcniReading(c.name)));
  const written = cases.flatMap((c, i) => {
    const plan = plans[i]!;
    return plan.action === 'write' ? [{ i, c: { name: plan.upgraded ? conflistName(c.name) : c.name, bytes: plan.bytes } }] : [];
  });
  const after = loadEach(
    path.join(root, 'after'),
    written.map((w) => w.c),
  );
  const afterOf = new Map(written.map((w, k) => [w.i, after[k]!]));
  const failures: string[] = [];
  cases.forEach((c, i) => {
    const plan = plans[i]!;
    const runtime = before[i]!;
    const say = (what: string) => failures.push(`${what}: ${describeCase(c, runtime, plan)}`);
    if (!loaded(runtime)) {
      // A config the runtime refuses may be patched: the agent does not check every type libcni's
      // structs demand. The patch may even make it loadable, where it drops what Go refused (a
      // broken older entry of the plugin, or a mistyped duplicate key of a `.conf`, which the list it
      // becomes collapses as Go's maps do). Never into a network of the chained plugin alone, though,
      // nor one that runs it anywhere but last.
      const next = afterOf.get(i);
      if (next !== undefined && loaded(next) && !(next.plugins.at(-1) === TYPE && next.plugins.slice(0, -1).some((t) => t !== TYPE))) {
        say(`the patch made the runtime load it, running ${next.plugins.join(',')}`);
      }
      return;
    }
    switch (plan.action) {
      case 'none':
        if (runtime.plugins.at(-1) !== TYPE) say('called chained, but the runtime does not run the plugin last');
        if (runtime.plugins.every((t) => t === TYPE)) say('called chained, but the runtime runs the plugin alone: no network');
        return;
      case 'plugin-alone':
        if (runtime.plugins.some((t) => t !== TYPE)) say('called the plugin alone, but the runtime runs more');
        return;
      case 'write': {
        const next = afterOf.get(i)!;
        const expected = [...runtime.plugins.filter((t) => t !== TYPE), TYPE];
        if (!loaded(next)) say(`the patch made the runtime refuse it (${next.error})`);
        else if (next.plugins.join() !== expected.join()) say(`patched, the runtime runs ${next.plugins.join(',')} instead of ${expected.join(',')}`);
        // The network keeps its name: host-local keeps its addresses, and the runtime its results, by it.
        // (A `.conf` with no name is a network named "": its list is named k8s-pod-network, as Istio's installer names every one.)
        else if (runtime.name !== undefined && next.name !== runtime.name) say(`patched, the network is named ${JSON.stringify(next.name)} instead of ${JSON.stringify(runtime.name)}`);
        if (!plan.upgraded && !runtime.plugins.includes(TYPE)) {
          const back = planUnpatch(plan.bytes, TYPE);
          if (back.action !== 'write' || !back.bytes.equals(c.bytes)) say('the unpatch does not give the bytes back');
        }
        return;
      }
      default:
        say('the runtime loads it, but the agent would not chain it');
    }
  });
  return failures;
}

describe('configs as containerd loads them', () => {
  it("reads with the go-cni and libcni of the cluster's containerd", () => {
    const required = (module: string) => {
      const goMod = readFileSync(path.join(repoRoot, 'tools', 'cluster', module, 'go.mod'), 'utf8');
      return ['github.com/containerd/go-cni', 'github.com/containernetworking/cni'].map((dep) => goMod.match(new RegExp(`^\\s*${dep.replace(/\./g, '\\.')} (v\\S+)`, 'm'))?.[1]);
    };
    expect(required('cni-load')).toEqual(required('containerd'));
    expect(required('cni-load').every((v) => v !== undefined)).toBe(true);
  });

  it('every fixture: loaded by the runtime before the patch and after it, with the plugin last', () => {
    const cases = readdirSync(path.join(fixturesDir, 'conflists'))
      .filter((name) => name !== '00-multus.conf')
      .map((name) => ({ name, bytes: readFileSync(path.join(fixturesDir, 'conflists', name)) }));
    expect(cases.length).toBeGreaterThan(5);
    expect(check(cases)).toEqual([]);
  });

  it('configs Go reads its own way: a key in another case, a null that sets nothing, no plugins, ours alone, by extension', () => {
    const cases = [
      // A `.conf` is decoded into libcni's struct, whose `type` Go matches in any case.
      ['10-type-in-capitals.conf', '{"cniVersion":"0.4.0","name":"n","Type":"bridge"}'],
      ['10-type-then-null.conf', '{"cniVersion":"0.4.0","name":"n","type":"bridge","TYPE":null}'],
      ['10-name-in-capitals.conf', '{"cniVersion":"0.4.0","Name":"n","type":"bridge"}'],
      // A list's plugin goes through a map first: its keys come back sorted, and "type" sorts after "Type".
      ['10-two-cases.conflist', '{"cniVersion":"0.4.0","name":"n","plugins":[{"type":"bridge","Type":"linkerd-cni"}]}'],
      ['10-ours-in-capitals.conflist', '{"cniVersion":"0.4.0","name":"n","plugins":[{"type":"bridge"},{"TYPE":"linkerd-cni"}]}'],
      ['10-no-plugins.conflist', '{"cniVersion":"0.4.0","name":"n","plugins":[]}'],
      ['10-ours-alone.conflist', '{"cniVersion":"0.4.0","name":"n","plugins":[{"type":"linkerd-cni"}]}'],
      // The extension says how a file is read, not what it holds.
      ['10-both.conf', '{"cniVersion":"0.4.0","name":"n","type":"bridge","plugins":[{"type":"portmap"}]}'],
      ['10-both.conflist', '{"cniVersion":"0.4.0","name":"n","type":"bridge","plugins":[{"type":"portmap"}]}'],
      ['10-a-list.json', '{"cniVersion":"0.4.0","name":"n","plugins":[{"type":"bridge"}]}'],
    ].map(([name, text]) => ({ name: name!, bytes: Buffer.from(text!) }));
    expect(check(cases)).toEqual([]);
  });

  it('configs written any way Go reads them: the agent and the runtime agree', () => {
    const seed = Date.now();
    const lists = fc.sample(fc.tuple(conflist, extension('.conflist')), { numRuns: 600, seed }).map(([text, ext], i) => ({ name: `${String(i).padStart(3, '0')}-x${ext}`, bytes: encode(text) }));
    const singles = fc.sample(fc.tuple(single, extension('.conf')), { numRuns: 200, seed: seed + 1 }).map(([text, ext], i) => ({ name: `${String(i).padStart(3, '0')}-y${ext}`, bytes: encode(text) }));
    const cases = [...lists, ...singles];
    const failures = check(cases);
    expect(failures, `seed ${seed}`).toEqual([]);
  });
});
