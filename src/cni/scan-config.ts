// A CNI config's bytes scanned for what chaining needs: its shape (a conflist or a single plugin), the
// `plugins` array and each element's type, and whether it is a meta-plugin (Multus). Pure; the text
// is never re-serialised (conflist.ts).
import { isAscii } from 'node:buffer';
import { keepHiddenClass } from '../hidden-classes.js';
import { goStringField, type MemberOrder } from './go-struct-field.js';
import { JsonSyntaxError, lastMember, scanJson, type JsonNode } from './json-spans.js';
import { metaDelegation, type Delegation } from './meta-plugin.js';
import type { LibcniReading } from './names.js';

export class ConfigParseError extends Error {
  override readonly name = 'ConfigParseError';
}

export /** scanJson, with a syntax error as the ConfigParseError every caller reports. */
function scanOrRefuse(bytes: Buffer, detailDepth: number): JsonNode {
  try {
    return scanJson(bytes, detailDepth);
  } catch (err) {
    if (err instanceof JsonSyntaxError) throw new ConfigParseError(`not valid JSON: ${err.message}`);
    throw err;
  }
}

export type ConfigShape = 'conflist' | 'single';

/** A config's bytes with the offsets the patcher needs. */
export interface ScannedConfig {
  bytes: Buffer;
  shape: ConfigShape;
  root: JsonNode;
  /** The `plugins` array (conflists). */
  plugins?: JsonNode;
  /** The `type` of each element of `plugins` (undefined where it has none). */
  types: Array<string | undefined>;
  /** A single-plugin config's own `type`. */
  rootType?: string;
  /** Set for a meta-plugin config (Multus): what it delegates to (meta-plugin.ts). */
  meta?: Delegation;
}

// The keys that make a meta-plugin, in any case: nearly every config has none of them, and a storm
// then pays one search instead of member lookups.
const META_HINT = /multus|clusternetwork|delegates/i;

/**
 * False when `bytes` surely hold no meta-plugin key: they are ASCII, hold no `\u` escape, and no hint
 * in any case. Keys may be spelt in any case, escaped (`clusterNetw\u006frk`), or with a non-ASCII
 * letter Go's encoding/json folds to an ASCII one (`ſ` to s, the Kelvin sign to k): Go still matches
 * them, so anything else is looked at closely (metaDelegation). One case-insensitive regular
 * expression over the ASCII text: a lower-cased copy searched once per hint took 3.7 times as long
 * (1.4 against 0.38 µs for the Calico fixture, a hot loop).
 */
export function mayBeMeta(bytes: Buffer): boolean {
  if (!isAscii(bytes)) return true;
  const text = bytes.toString('latin1');
  return text.includes('\\u') || META_HINT.test(text);
}

function metaOf(bytes: Buffer, root: JsonNode, plugins: JsonNode | undefined): Delegation | undefined {
  return mayBeMeta(bytes) ? metaDelegation(bytes, root, plugins) : undefined;
}

/**
 * A plugin's `type` as libcni reads it (go-struct-field.ts): a list's plugin through a map, a
 * single-plugin config straight from its text.
 */
function typeOf(bytes: Buffer, node: JsonNode, order: MemberOrder): string | undefined {
  return node.kind === 'object' ? goStringField(bytes, node, 'type', order) : undefined;
}

/**
 * Scans CNI config bytes. Trailing junk, a non-object, or neither `plugins` nor `type` is an error.
 * `reading` is how the runtime reads the file (names.ts libcniReading): a list by its `plugins`
 * alone, one plugin by its `type` alone; without it, the bytes say which they are.
 */
export function scanConfig(bytes: Buffer, reading?: LibcniReading): ScannedConfig {
  const root = scanOrRefuse(bytes, 3);
  if (root.kind !== 'object') throw new ConfigParseError('not a JSON object');
  const plugins = reading === 'single' ? undefined : lastMember(bytes, root, 'plugins');
  if (reading === 'list' && plugins === undefined) throw new ConfigParseError('no "plugins" list (the runtime reads a .conflist as a list)');
  if (plugins !== undefined) {
    if (plugins.kind !== 'array') throw new ConfigParseError('"plugins" is not an array');
    const scanned: ScannedConfig = { bytes, shape: 'conflist', root, plugins, types: plugins.items!.map((item) => typeOf(bytes, item, 'sorted')) };
    const meta = metaOf(bytes, root, plugins);
    if (meta !== undefined) scanned.meta = meta;
    return scanned;
  }
  const rootType = typeOf(bytes, root, 'text');
  if (rootType !== undefined) {
    const meta = metaOf(bytes, root, undefined);
    return meta === undefined ? { bytes, shape: 'single', root, types: [], rootType } : { bytes, shape: 'single', root, types: [], rootType, meta };
  }
  throw new ConfigParseError(reading === 'single' ? 'no plugin "type" (the runtime reads a .conf or .json file as one plugin)' : 'neither a "plugins" list nor a plugin "type"');
}

// A scan's nodes live as long as its pass: the collection that ends a burst reduces memory, drops the
// hidden classes no live object has (V8 retains none in such a collection), and the scanner's
// optimized code was thrown away and compiled again in every storm (--trace-deopt: "embedded weak
// objects cleared"). One scanned conflist keeps them (hidden-classes.ts).
keepHiddenClass(scanConfig(Buffer.from('{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"t","a":{"b":[1,"s",true]}}]}')));
