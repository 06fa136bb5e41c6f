// Chaining and unchaining a plugin in a CNI network configuration, byte-exact. Pure: bytes in, bytes out.
//
// The primary CNI's text is never re-serialised (docs/design.md, A pass): the patch splices our plugin's
// text into the `plugins` array after its last element, with that element's indentation; earlier
// entries of our type are spliced out. Unpatching splices out exactly what the patch put in, so
// unpatch(patch(x)) is x byte for byte. A single-plugin config (`type` at the root) becomes
// `{cniVersion, name, plugins: [<the original bytes>, ours]}`.
import type { ChainedPlugin } from './chained-plugin.js';
import { goFieldValue } from './go-struct-field.js';
import type { JsonNode } from './json-spans.js';
import { sameJsonText } from './json.js';
import type { Delegation } from './meta-plugin.js';
import type { LibcniReading } from './names.js';
import { ConfigParseError, scanConfig, type ScannedConfig } from './scan-config.js';

export const DEFAULT_NETWORK_NAME = 'k8s-pod-network';

export type ChainState = 'chained' | 'not-chained' | 'stale-plugin';

/** chained: ours is last, equal to the configured plugin, and no other element has our type. */
export function chainState(config: ScannedConfig, plugin: ChainedPlugin): ChainState {
  const ours = config.types.filter((t) => t === plugin.type).length;
  if (ours === 0) return 'not-chained';
  const lastIndex = config.types.length - 1;
  if (ours === 1 && config.types[lastIndex] === plugin.type) {
    const last = config.plugins!.items![lastIndex]!;
    if (sameJsonText(config.bytes.subarray(last.start, last.end).toString('utf8'), plugin.text)) return 'chained';
  }
  return 'stale-plugin';
}

export const EMPTY_LIST = 'its "plugins" list is empty (libcni refuses it)';
export const PLUGIN_ALONE = 'a config of the chained plugin alone is no network';

/**
 * A list that is no network to chain: libcni refuses one of no plugins (`empty`), and one of ours
 * alone (`plugin-alone`) the runtime loads and fails every pod on. Patched, either would be a network
 * of the chained plugin alone.
 */
export function noNetwork(config: ScannedConfig, plugin: ChainedPlugin): 'empty' | 'plugin-alone' | undefined {
  if (config.shape !== 'conflist' || !config.types.every((t) => t === plugin.type)) return undefined;
  return config.types.length === 0 ? 'empty' : 'plugin-alone';
}

/** The whitespace right before offset `at`. */
function whitespaceBefore(bytes: Buffer, at: number): string {
  let i = at;
  while (i > 0 && (bytes[i - 1] === 0x20 || bytes[i - 1] === 0x0a || bytes[i - 1] === 0x0d || bytes[i - 1] === 0x09)) i--;
  // Decoded in place, not through a subarray: the optimized code of a subarray embeds a Buffer map,
  // which a full collection between two storms clears, and V8 then threw this code away and compiled
  // it again in every storm (--trace-deopt: "embedded weak objects cleared"; docs/performance.md).
  return bytes.toString('latin1', i, at);
}

/**
 * The plugin's text as it goes after `separator` (the whitespace before the array's last element):
 * re-indented to that element's column when the config is multi-line, compact when it is one line.
 * JSON strings hold no raw newline, so prefixing every line break indents without touching a value.
 */
function renderPlugin(plugin: ChainedPlugin, separator: string): string {
  const newline = separator.lastIndexOf('\n');
  if (newline < 0) return plugin.compact;
  return plugin.text.replace(/\n/g, `\n${separator.slice(newline + 1)}`);
}

/** The bytes with array elements `remove` spliced out, separators included. */
function spliceOut(bytes: Buffer, items: readonly JsonNode[], remove: ReadonlySet<number>): Buffer {
  const firstKept = items.findIndex((_, k) => !remove.has(k));
  const cuts: Array<[number, number]> = [];
  if (firstKept < 0) {
    // Nothing stays: cut from the first element to the last, whitespace around them stays.
    cuts.push([items[0]!.start, items.at(-1)!.end]);
  } else {
    for (const k of [...remove].sort((a, b) => a - b)) {
      // Before the first kept element an element goes with the separator after it; after it, with
      // the separator before it. This is what makes the cut of an appended element its exact inverse.
      cuts.push(k < firstKept ? [items[k]!.start, items[k + 1]!.start] : [items[k - 1]!.end, items[k]!.end]);
    }
  }
  const parts: Buffer[] = [];
  let at = 0;
  for (const [from, to] of cuts) {
    parts.push(bytes.subarray(at, from));
    at = to;
  }
  parts.push(bytes.subarray(at));
  return Buffer.concat(parts);
}

/** The bytes with the plugin appended to the `plugins` array. */
function appendPlugin(bytes: Buffer, plugins: JsonNode, plugin: ChainedPlugin): Buffer {
  const items = plugins.items!;
  const last = items.at(-1);
  if (last === undefined) {
    // `[]` or `[ \n ]`: right after the bracket, so that cutting the element restores the whitespace.
    const at = plugins.start + 1;
    return Buffer.concat([bytes.subarray(0, at), Buffer.from(plugin.compact), bytes.subarray(at)]);
  }
  const insert = insertAfter(plugin, whitespaceBefore(bytes, last.start));
  return Buffer.concat([bytes.subarray(0, last.end), insert, bytes.subarray(last.end)]);
}

/**
 * The bytes that append the plugin after an element preceded by `separator`. Configs on a node share
 * a few separators, so each is rendered and encoded once (a storm patches thousands).
 */
function insertAfter(plugin: ChainedPlugin, separator: string): Buffer {
  let bySeparator = inserts.get(plugin);
  if (bySeparator === undefined) inserts.set(plugin, (bySeparator = new Map()));
  let insert = bySeparator.get(separator);
  if (insert === undefined) {
    insert = Buffer.from(`,${separator}${renderPlugin(plugin, separator)}`);
    if (bySeparator.size < 64) bySeparator.set(separator, insert);
  }
  return insert;
}

const inserts = new WeakMap<ChainedPlugin, Map<string, Buffer>>();

/** A single-plugin config as a conflist around its original bytes. */
function upgradeSingle(config: ScannedConfig, plugin: ChainedPlugin): Buffer {
  const { bytes, root } = config;
  const raw = (node: JsonNode | undefined) => (node === undefined ? undefined : bytes.subarray(node.start, node.end).toString('latin1'));
  // The network's version and name as the runtime read them from the `.conf` (go-struct-field.ts):
  // host-local keeps a network's addresses, and the runtime its results, under its name.
  const cniVersion = raw(goFieldValue(bytes, root, 'cniversion', 'text'));
  const name = raw(goFieldValue(bytes, root, 'name', 'text')) ?? JSON.stringify(DEFAULT_NETWORK_NAME);
  // latin1 keeps every byte as one char, and back again: the original bytes survive exactly.
  const head = `{\n${cniVersion === undefined ? '' : `  "cniVersion": ${cniVersion},\n`}  "name": ${name},\n  "plugins": [\n    `;
  const tail = `,\n    ${renderPlugin(plugin, '\n    ')}\n  ]\n}\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), bytes.subarray(root.start, root.end), Buffer.from(tail)]);
}

function indicesOfType(config: ScannedConfig, type: string): Set<number> {
  const found = new Set<number>();
  config.types.forEach((t, k) => {
    if (t === type) found.add(k);
  });
  return found;
}

export type PatchPlan =
  | { action: 'none' } // already chained exactly: write nothing
  | { action: 'write'; bytes: Buffer; upgraded: boolean } // upgraded: was a single-plugin config
  | { action: 'invalid'; reason: string }
  // A meta-plugin config that delegates by path or by name: never written; its delegate is chained.
  | { action: 'delegates'; delegation: Exclude<Delegation, { kind: 'embedded' }> }
  // Valid, but cannot be chained without breaking what reads it.
  | { action: 'refuse'; reason: string }
  // A config of the chained plugin alone: no network (linkerd's interface mode wrote
  // 01-linkerd-cni.conf so); upgraded, it would chain the plugin to itself, and sort first.
  | { action: 'plugin-alone' };

function tryScan(bytes: Buffer, reading?: LibcniReading): ScannedConfig | { invalid: string } {
  try {
    return scanConfig(bytes, reading);
  } catch (err) {
    if (err instanceof ConfigParseError) return { invalid: err.message };
    throw err;
  }
}

/**
 * What to do with a config's bytes so that `plugin` is chained; `reading`, how the runtime reads the
 * file (scan-config.ts). Never throws.
 */
export function planPatch(bytes: Buffer, plugin: ChainedPlugin, reading?: LibcniReading): PatchPlan {
  const config = tryScan(bytes, reading);
  if ('invalid' in config) return { action: 'invalid', reason: config.invalid };
  if (config.meta !== undefined) return planMeta(config, config.meta, plugin);
  if (config.shape === 'single' && config.rootType === plugin.type) return { action: 'plugin-alone' };
  if (config.shape === 'single') return { action: 'write', bytes: upgradeSingle(config, plugin), upgraded: true };
  const none = noNetwork(config, plugin);
  if (none !== undefined) return none === 'empty' ? { action: 'invalid', reason: EMPTY_LIST } : { action: 'plugin-alone' };
  if (chainState(config, plugin) === 'chained') return { action: 'none' };
  const ours = indicesOfType(config, plugin.type);
  let base = config;
  if (ours.size > 0) {
    // Older entries of our type go first; the result is valid JSON of the same shape by construction.
    base = scanConfig(spliceOut(config.bytes, config.plugins!.items!, ours));
  }
  return { action: 'write', bytes: appendPlugin(base.bytes, base.plugins!, plugin), upgraded: false };
}

/** The bytes with `span` replaced by `inner`. */
function spliceSpan(bytes: Buffer, span: { start: number; end: number }, inner: Buffer): Buffer {
  return Buffer.concat([bytes.subarray(0, span.start), inner, bytes.subarray(span.end)]);
}

/**
 * A meta-plugin config: never chained itself. An embedded first delegate gets the plugin spliced into
 * its own `plugins`, byte-exact; a delegate named by path or name is chained where it lives.
 */
function planMeta(config: ScannedConfig, meta: Delegation, plugin: ChainedPlugin): PatchPlan {
  if (meta.kind !== 'embedded') return { action: 'delegates', delegation: meta };
  const inner = planPatch(config.bytes.subarray(meta.start, meta.end), plugin);
  switch (inner.action) {
    case 'none':
    case 'invalid':
      return inner;
    case 'plugin-alone':
      return { action: 'refuse', reason: 'the first of its delegates is a config of the chained plugin alone: no network' };
    case 'write':
      if (inner.upgraded) {
        return { action: 'refuse', reason: 'the first of its delegates is a single-plugin config: chaining it would change its shape, which Multus could not give back as it was' };
      }
      return { action: 'write', bytes: spliceSpan(config.bytes, meta, inner.bytes), upgraded: false };
    default:
      return { action: 'refuse', reason: 'the first of its delegates is itself a meta-plugin' };
  }
}

/**
 * `delegatePath`: the config is a meta-plugin's (Multus) that delegates to that file by path, which may
 * hold the plugin too (meta-plugin.ts).
 */
export type UnpatchPlan = { action: 'none'; delegatePath?: string } | { action: 'write'; bytes: Buffer; delegatePath?: string } | { action: 'invalid'; reason: string };

/** What to do with a config's bytes so that no plugin of `type` is left in it. Never throws. */
export function planUnpatch(bytes: Buffer, type: string): UnpatchPlan {
  const config = tryScan(bytes);
  if ('invalid' in config) return { action: 'invalid', reason: config.invalid };
  let base = config;
  if (config.meta?.kind === 'embedded') {
    // The plugin spliced into Multus' embedded delegate comes out the same way.
    const inner = planUnpatch(bytes.subarray(config.meta.start, config.meta.end), type);
    if (inner.action === 'write') base = scanConfig(spliceSpan(bytes, config.meta, inner.bytes));
  }
  const ours = indicesOfType(base, type);
  const delegatePath = config.meta?.kind === 'path' ? config.meta.path : undefined;
  const plan: UnpatchPlan =
    base.shape === 'single' || ours.size === 0 ? (base === config ? { action: 'none' } : { action: 'write', bytes: base.bytes }) : { action: 'write', bytes: spliceOut(base.bytes, base.plugins!.items!, ours) };
  if (delegatePath !== undefined) plan.delegatePath = delegatePath;
  return plan;
}

/** True when any element of `plugins` has the given type. */
export function holdsPluginType(config: ScannedConfig, type: string): boolean {
  return config.types.includes(type);
}

/**
 * True when `bytes` are a conflist this agent made from a single-plugin `.conf` (planPatch's
 * upgrade), with a plugin of type `type` chained or already taken out again (a stop unchains before
 * it puts converted links back): the `.conf` it was made from is its first plugin, byte for byte,
 * and re-doing the upgrade from it gives the same bytes once the plugin is out of both. A primary's
 * own conflist never has exactly that form, so this tells ours from the primary's after a restart
 * too, where no memory of the write survives.
 */
export function madeByConversion(bytes: Buffer, type: string): boolean {
  const unpatched = planUnpatch(bytes, type);
  if (unpatched.action === 'invalid') return false;
  const base = tryScan(unpatched.action === 'write' ? unpatched.bytes : bytes);
  if ('invalid' in base || base.shape !== 'conflist' || base.meta !== undefined) return false;
  const items = base.plugins!.items ?? [];
  if (items.length !== 1) return false;
  const first = tryScan(base.bytes.subarray(items[0]!.start, items[0]!.end));
  if ('invalid' in first || first.shape !== 'single' || first.meta !== undefined) return false;
  const stub = `{"type":${JSON.stringify(type)}}`;
  const remade = planUnpatch(upgradeSingle(first, { type, text: stub, compact: stub }), type);
  return remade.action === 'write' && remade.bytes.equals(base.bytes);
}
