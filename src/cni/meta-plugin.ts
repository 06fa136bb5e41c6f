// Meta-plugins (docs/design.md, Neighbours): a config whose plugin runs another config's whole chain.
// Multus is the one in the wild: `00-multus.conf` sorts first, so the runtime loads it, and Multus
// then runs its *delegate* for the pod's cluster network:
// - `clusterNetwork` holding a path (thick mode writes the primary's absolute path, as seen from
//   Multus' own pod: `/host/etc/cni/net.d/10-calico.conflist`). Multus reads that file at every ADD
//   (its getNetDelegate: a name containing "/" is loaded from disk each call), so chaining that file
//   meshes the pod.
// - `clusterNetwork` holding a name: a NetworkAttachmentDefinition, or a config named so in Multus'
//   own confDir. Neither is visible from net.d.
// - `delegates` embedded (thin mode): the first delegate is the cluster network. The runtime hands
//   Multus the whole file at every ADD (containerd and CRI-O reload net.d on change), so the plugin is
//   spliced into that delegate's `plugins`, byte-exact, and cut out again exactly.
// A meta config itself is never chained or converted: the plugin would run twice per pod, and Multus'
// file would be replaced by one it does not manage. Multus ignores `delegates` when `clusterNetwork`
// is set, and so does this module. Pure.
import { decodeString, lastMemberFolded, scanJson, type JsonNode } from './json-spans.js';

export type Delegation =
  | { kind: 'path'; path: string }
  | { kind: 'name'; name: string }
  /** The byte span of the first embedded delegate. */
  | { kind: 'embedded'; start: number; end: number }
  /** Multus thick's shim with no network named: its daemon runs the first other config in net.d. */
  | { kind: 'auto' }
  | { kind: 'none' };

// Multus thin, and thick's shim (which hands the ADD to Multus' daemon: with no clusterNetwork of its
// own, the daemon runs the first other config of net.d).
const META_TYPES = new Set(['multus', 'multus-shim']);

function stringMember(bytes: Buffer, node: JsonNode, key: string): string | undefined {
  const value = lastMemberFolded(bytes, node, key);
  return value?.kind === 'string' ? decodeString(bytes, value.start, value.end) : undefined;
}

/** True for the object of a plugin that delegates: `type: multus`, `clusterNetwork`, or `delegates`. */
function delegates(bytes: Buffer, node: JsonNode): boolean {
  if (node.kind !== 'object') return false;
  const type = stringMember(bytes, node, 'type');
  if (type !== undefined && META_TYPES.has(type)) return true;
  return lastMemberFolded(bytes, node, 'clusterNetwork') !== undefined || lastMemberFolded(bytes, node, 'delegates') !== undefined;
}

function delegationOf(bytes: Buffer, node: JsonNode): Delegation {
  const cluster = stringMember(bytes, node, 'clusterNetwork');
  if (cluster !== undefined && cluster !== '') return cluster.includes('/') ? { kind: 'path', path: cluster } : { kind: 'name', name: cluster };
  const list = lastMemberFolded(bytes, node, 'delegates');
  if (list?.kind !== 'array') return stringMember(bytes, node, 'type') === 'multus-shim' ? { kind: 'auto' } : { kind: 'none' };
  // The array may lie deeper than the config scan records: scan just its span for its items.
  const items = scanJson(bytes.subarray(list.start, list.end), 1).items ?? [];
  const first = items[0];
  if (first === undefined || first.kind !== 'object') return { kind: 'none' };
  return { kind: 'embedded', start: list.start + first.start, end: list.start + first.end };
}

/**
 * The delegation of a meta-plugin config, or undefined when `root` (a scanned config object, with its
 * members and its `plugins` items' members recorded) is no meta-plugin. A single-plugin config is one
 * when its root delegates; a conflist, when any of its plugins does (Multus writes a conflist around
 * itself for cniVersion 1.0.0).
 */
export function metaDelegation(bytes: Buffer, root: JsonNode, plugins: JsonNode | undefined): Delegation | undefined {
  if (plugins === undefined) return delegates(bytes, root) ? delegationOf(bytes, root) : undefined;
  for (const item of plugins.items ?? []) if (delegates(bytes, item)) return delegationOf(bytes, item);
  return undefined;
}

/** Multus' own pod sees the host's root under this prefix, and writes paths with it. */
export const MULTUS_HOST_PREFIX = '/host';

/**
 * The host paths a delegate path may name, most likely first: the path as written, then without the
 * `/host` prefix Multus' pod puts before every host path.
 */
export function delegatePathCandidates(delegatePath: string): string[] {
  // A relative path is relative to Multus' own working directory, which nothing here can know; a NUL
  // ends the path early for the kernel. Neither names a file this agent may touch.
  if (!delegatePath.startsWith('/') || delegatePath.includes('\0')) return [];
  const candidates = [delegatePath];
  if (delegatePath.startsWith(`${MULTUS_HOST_PREFIX}/`)) candidates.push(delegatePath.slice(MULTUS_HOST_PREFIX.length));
  return candidates;
}

/**
 * What the reconciler, owned mode and `check` say about a meta-plugin config they cannot chain
 * through: one wording for the three. `pointTo` is the path clusterNetwork should name instead.
 */
export const delegationProblem = {
  noDelegate: 'a meta-plugin config with neither clusterNetwork nor delegates',
  auto: "Multus' shim with no clusterNetwork: Multus' daemon runs the first other config of net.d",
  nested: 'Multus delegates to another meta-plugin config: nothing to chain',
  byName: (network: string, pointTo?: string): string =>
    `Multus delegates to the network ${JSON.stringify(network)} by name (a NetworkAttachmentDefinition or a config in Multus' confDir), which cni-chainer cannot see${pointTo === undefined ? '' : `: set clusterNetwork to ${pointTo}`}`,
  notAbsolute: (delegatePath: string): string => `${JSON.stringify(delegatePath)} is no absolute path: nothing to chain (set clusterNetwork to the primary config's absolute path)`,
  notTheCopy: (delegatePath: string, copyPath: string): string =>
    `Multus delegates to ${delegatePath}, which owned mode never chains: set Multus' clusterNetwork to ${copyPath}, or use CNI_PATCH_MODE=in-place`,
} as const;
