// Chaining and unchaining a plugin in a CNI network configuration. Pure: text in, text out.
//
// A conflist (`plugins` array) gets every plugin of our `type` removed and ours appended last. A
// single-plugin config (`type` at the root) becomes a conflist `{cniVersion, name, plugins: [old,
// ours]}`. Unknown keys and key order are kept. Text that is not a JSON object holding `plugins` or
// `type` is refused with a ConfigParseError and must never be rewritten.
import { isJsonObject, jsonEqual, type Json, type JsonObject } from './json.js';

export const DEFAULT_NETWORK_NAME = 'k8s-pod-network';

export class ConfigParseError extends Error {
  override readonly name = 'ConfigParseError';
}

export type ConfigShape = 'conflist' | 'single';

export interface ParsedConfig {
  shape: ConfigShape;
  doc: JsonObject;
}

/** Parses CNI config text. Trailing junk, a non-object, or neither `plugins` nor `type` is an error. */
export function parseConfig(text: string): ParsedConfig {
  let doc: unknown;
  try {
    // JSON.parse rejects anything after the value, so "valid JSON followed by junk" is refused here.
    doc = JSON.parse(text);
  } catch (err) {
    throw new ConfigParseError(`not valid JSON: ${(err as Error).message}`);
  }
  if (!isJsonObject(doc)) throw new ConfigParseError('not a JSON object');
  if (Object.hasOwn(doc, 'plugins')) {
    if (!Array.isArray(doc.plugins)) throw new ConfigParseError('"plugins" is not an array');
    return { shape: 'conflist', doc };
  }
  if (typeof doc.type === 'string') return { shape: 'single', doc };
  throw new ConfigParseError('neither a "plugins" list nor a plugin "type"');
}

export function serializeConfig(doc: JsonObject): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

function pluginType(plugin: Json): string | undefined {
  return isJsonObject(plugin) && typeof plugin.type === 'string' ? plugin.type : undefined;
}

function pluginsOf(config: ParsedConfig): Json[] {
  return config.shape === 'conflist' ? (config.doc.plugins as Json[]) : [config.doc];
}

/** True when ours is the last plugin, exactly as desired, and no other plugin has our type. */
export function isChained(config: ParsedConfig, plugin: JsonObject): boolean {
  const plugins = pluginsOf(config);
  const last = plugins.at(-1);
  if (config.shape !== 'conflist' || last === undefined || !jsonEqual(last, plugin)) return false;
  return plugins.slice(0, -1).every((p) => pluginType(p) !== plugin.type);
}

/** True when any plugin of the config has the given type. */
export function holdsPluginType(config: ParsedConfig, type: string): boolean {
  return pluginsOf(config).some((p) => pluginType(p) === type);
}

/** The config with our plugin chained last; a single-plugin config becomes a conflist. */
export function chainPlugin(config: ParsedConfig, plugin: JsonObject): JsonObject {
  if (config.shape === 'single') {
    const upgraded: JsonObject = {};
    if (config.doc.cniVersion !== undefined) upgraded.cniVersion = config.doc.cniVersion;
    upgraded.name = config.doc.name ?? DEFAULT_NETWORK_NAME;
    upgraded.plugins = [config.doc, plugin];
    return upgraded;
  }
  const others = (config.doc.plugins as Json[]).filter((p) => pluginType(p) !== plugin.type);
  return { ...config.doc, plugins: [...others, plugin] };
}

/** The config without any plugin of the given type (a single-plugin config is returned unchanged). */
export function unchainPlugin(config: ParsedConfig, type: string): JsonObject {
  if (config.shape === 'single') return config.doc;
  return { ...config.doc, plugins: (config.doc.plugins as Json[]).filter((p) => pluginType(p) !== type) };
}

/** parseConfig without the exception: the reason is returned instead. */
export function tryParseConfig(text: string): ParsedConfig | { invalid: string } {
  try {
    return parseConfig(text);
  } catch (err) {
    if (err instanceof ConfigParseError) return { invalid: err.message };
    throw err;
  }
}

export type PatchPlan =
  | { action: 'none' } // already chained exactly: write nothing
  | { action: 'write'; text: string; upgraded: boolean } // upgraded: was a single-plugin config
  | { action: 'invalid'; reason: string };

/** What to do with a config's text so that `plugin` is chained. Never throws. */
export function planPatch(text: string, plugin: JsonObject): PatchPlan {
  const config = tryParseConfig(text);
  if ('invalid' in config) return { action: 'invalid', reason: config.invalid };
  if (isChained(config, plugin)) return { action: 'none' };
  return { action: 'write', text: serializeConfig(chainPlugin(config, plugin)), upgraded: config.shape === 'single' };
}

export type UnpatchPlan = { action: 'none' } | { action: 'write'; text: string } | { action: 'invalid'; reason: string };

/** What to do with a config's text so that no plugin of `type` is left in it. Never throws. */
export function planUnpatch(text: string, type: string): UnpatchPlan {
  const config = tryParseConfig(text);
  if ('invalid' in config) return { action: 'invalid', reason: config.invalid };
  if (config.shape === 'single' || !holdsPluginType(config, type)) return { action: 'none' };
  return { action: 'write', text: serializeConfig(unchainPlugin(config, type)) };
}
