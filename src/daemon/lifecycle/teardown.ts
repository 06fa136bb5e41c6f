// Removes what `run` installed, in the one order that never breaks a node (docs/design.md, Stop):
//   1. the owned config of CNI_PATCH_MODE=owned;
//   2. the plugin from every config, symlink targets and backups included (unpatch-node.ts);
//   3. only if no config still names the plugin: the kubeconfig, then the binaries (a failure here is
//      reported, and breaks nothing), then the owner file. A config that names a missing binary fails every new pod on the node, so the binary
//      (and the kubeconfig the plugin reads) stays for as long as any config names the plugin.
// The daemon's stop and `cni-chainer uninstall` both run this.
import type { Config } from '../../config.js';
import { withDirSync } from '../../fs/dir.js';
import { isMissing } from '../../fs/errno.js';
import type { HostRoot } from '../../fs/host-root.js';
import { KubeconfigFile } from '../../kube/kubeconfig-file.js';
import type { Logger } from '../../log.js';
import { removeOwnedCopies } from '../keepers/owned-copies.js';
import { removeBinaries } from '../node/binaries.js';
import { readChainedTargets, removeChainedTargets } from './chained-targets.js';
import { unpatchNode } from './unpatch-node.js';

export interface TeardownOptions {
  /** The binaries to remove (by name, from the host's bin dir). */
  binaries: string[];
  /** Symlink targets (host paths) chained by this instance: a retargeted link leaves its old one chained. */
  patchedTargets?: string[];
  /** The owner file goes last, once everything else did. */
  releaseOwnership: () => void;
}

export interface TeardownResult {
  unpatched: string[];
  /** Configs that still hold the plugin: the binaries and kubeconfig were kept for them. */
  failed: string[];
  kubeconfigRemoved: boolean;
  binariesRemoved: string[];
}

export async function teardown(root: HostRoot, config: Config, pluginType: string, log: Logger, options: TeardownOptions): Promise<TeardownResult> {
  // 1.
  if (config.mode === 'owned') {
    const removed = removeOwnedConfig(root, config, pluginType);
    if (removed.length > 0) log.info({ files: removed }, 'removed the owned config');
  }
  // 2.
  // The targets an earlier instance recorded as well (chained-targets.ts): after a SIGKILL, and for
  // `uninstall`, nothing else remembers them.
  const targets = [...new Set([...(options.patchedTargets ?? []), ...readChainedTargets(root, config.netDir)])];
  const { unpatched, failed } = await unpatchNode(root, config.netDir, config.suffixes, pluginType, config.maxConfigBytes, log, targets);
  if (failed.length > 0) {
    log.error({ files: failed }, 'the plugin could not be removed from some configs: keeping the plugin binaries and kubeconfig');
    return { unpatched, failed, kubeconfigRemoved: false, binariesRemoved: [] };
  }
  // 3.
  removeChainedTargets(root, config.netDir);
  const kubeconfigRemoved = await new KubeconfigFile(config, root).remove();
  if (kubeconfigRemoved) log.info({ file: config.kubeconfigName }, 'removed kubeconfig');
  let binariesRemoved: string[] = [];
  try {
    binariesRemoved = await removeBinaries(root, config.binDir, options.binaries);
    log.info({ binaries: binariesRemoved }, 'removed plugin binaries');
  } catch (err) {
    // No config names the plugin any more: a binary left behind breaks nothing, but is reported.
    log.warn({ err: (err as Error).message }, 'cannot remove the plugin binaries');
  }
  options.releaseOwnership();
  return { unpatched, failed, kubeconfigRemoved, binariesRemoved };
}

/** Removes the owned config files of CNI_PATCH_MODE=owned; the names removed. */
function removeOwnedConfig(root: HostRoot, config: Config, pluginType: string): string[] {
  try {
    return withDirSync(root.openDir(config.netDir), (dir) => removeOwnedCopies(dir, config.ownedConfigName, pluginType, config.maxConfigBytes));
  } catch (err) {
    if (isMissing(err)) return [];
    throw err;
  }
}
