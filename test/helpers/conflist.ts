// Shared by the conflist tests: the plugin as the fixtures configure it, patch and unpatch that
// must write, and the JSON-level patch of version 0.1 the byte-exact one is compared with.
import { parsePlugin, type ChainedPlugin } from '../../src/cni/chained-plugin.js';
import { DEFAULT_NETWORK_NAME, planPatch, planUnpatch } from '../../src/cni/conflist.js';
import { isJsonObject, type Json, type JsonObject } from '../../src/cni/json.js';
import { expectedPlugin, pluginText } from './fixtures.js';

export const pluginValue = expectedPlugin();
export const plugin: ChainedPlugin = parsePlugin(pluginText.replaceAll('__KUBECONFIG_FILEPATH__', '/etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig'));
export const TYPE = plugin.type;
export const b = (text: string) => Buffer.from(text);

export function written(bytes: Buffer | string): Buffer {
  const plan = planPatch(typeof bytes === 'string' ? b(bytes) : bytes, plugin);
  if (plan.action !== 'write') throw new Error(`expected a write, got ${plan.action}`);
  return plan.bytes;
}

export function unwritten(bytes: Buffer): Buffer {
  const plan = planUnpatch(bytes, TYPE);
  if (plan.action !== 'write') throw new Error(`expected a write, got ${plan.action}`);
  return plan.bytes;
}

/** The JSON-level patch of version 0.1: what the byte-exact patch must mean wherever that one lost nothing. */
export function jsonLevelPatch(doc: JsonObject, ours: JsonObject): JsonObject {
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
