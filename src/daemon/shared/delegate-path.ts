// Where the file a meta-plugin (Multus) names by path is on the host: its path as Multus' pod sees it
// (`/host/etc/cni/net.d/...`) or as the host does, resolved inside the host root (cni/meta-plugin.ts
// says which candidates). Shared by the keepers, `check` and the uninstall.
import { delegatePathCandidates } from '../../cni/meta-plugin.js';
import type { HostRoot } from '../../fs/host-root.js';

/** The host path of the file a meta-plugin names by path, if it resolves to one. */
export function resolveDelegate(root: HostRoot, delegatePath: string): string | undefined {
  for (const candidate of delegatePathCandidates(delegatePath)) {
    const resolved = root.resolve(candidate);
    if (resolved.ok && resolved.kind === 'file') return resolved.path;
  }
  return undefined;
}
