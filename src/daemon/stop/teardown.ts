// Removes what `run` installed, in the one order that never breaks a node (docs/design.md, Stop):
//   1. the owned config of CNI_PATCH_MODE=owned;
//   2. the plugin from every config, symlink targets and backups included (unpatch-node.ts);
//   3. net.d watched until quiet, then read: if any config the runtime may load names the plugin
//      again (another installer chained it: linkerd's own, in a rollback to it), or another instance
//      owns the node now, the binaries and the kubeconfig stay, and the result says why;
//   4. the kubeconfig, then the binaries (a failure here is reported, and breaks nothing);
//   5. one more look: a config that names the plugin now (chained again between 3 and 4) gets the
//      binaries and the kubeconfig back at once; else the owner file goes.
// A config that names a missing binary fails every new pod on the node, so the binary (and the
// kubeconfig the plugin reads) stays for as long as any config names the plugin.
// The daemon's stop and `cni-chainer uninstall` both run this.
import type { Config } from '../../config.js';
import { withDirSync } from '../../fs/dir.js';
import { isMissing } from '../../fs/errno.js';
import type { HostRoot } from '../../fs/host-root.js';
import { KubeconfigFile } from '../../kube/kubeconfig-file.js';
import type { Logger } from '../../log.js';
import { removeOwnedCopies } from '../keepers/owned-copies.js';
import { installBinaries, removeBinaries, removeSpares } from '../node/binaries.js';
import { configsChainedAgain, configsNaming, QUIET_MS } from './chained-again.js';
import { readChainedTargets, removeChainedTargets } from '../node/chained-targets.js';
import { unpatchNode } from './unpatch-node.js';

export interface TeardownOptions {
  /** The binaries to remove (by name, from the host's bin dir). */
  binaries: string[];
  /** Symlink targets (host paths) chained by this instance: a retargeted link leaves its old one chained. */
  patchedTargets?: string[];
  /** The owner file goes last, once everything else did. */
  releaseOwnership: () => void;
  /** The live instance that owns the node now, if another does: asked again before anything is removed. */
  ownedByAnother?: () => string | undefined;
  /** Writes the kubeconfig back (step 5). */
  kubeconfig?: KubeconfigFile;
  /** When step 3's wait must end, at the latest (Date.now()); QUIET_MS from now by default. */
  deadlineMs?: number;
}

export interface TeardownResult {
  unpatched: string[];
  /** Configs that still hold the plugin: the binaries and kubeconfig were kept for them. */
  failed: string[];
  /** Why the binaries and the kubeconfig were left to someone else (step 3 or 5), if they were. */
  handedOver?: string;
  kubeconfigRemoved: boolean;
  binariesRemoved: string[];
}

export async function teardown(root: HostRoot, config: Config, pluginType: string, log: Logger, options: TeardownOptions): Promise<TeardownResult> {
  /** Binaries and kubeconfig left to whoever uses them now; the owner file goes unless another instance holds it. */
  const kept = (unpatched: string[], handedOver: string, release: boolean): TeardownResult => {
    log.warn({ reason: handedOver }, 'keeping the plugin binaries and the kubeconfig');
    if (release) {
      // Left to another installer: nothing of ours but the files it uses stays.
      removeSpares(root, config.binDir, options.binaries);
      options.releaseOwnership();
    }
    return { unpatched, failed: [], handedOver, kubeconfigRemoved: false, binariesRemoved: [] };
  };
  const another = options.ownedByAnother?.();
  if (another !== undefined) return kept([], `instance ${another} owns this node now`, false);
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
  const deadline = Math.max(options.deadlineMs ?? 0, Date.now() + QUIET_MS);
  const again = await configsChainedAgain(root, config.netDir, config.suffixes, pluginType, config.maxConfigBytes, QUIET_MS, deadline);
  const owner = options.ownedByAnother?.();
  if (owner !== undefined) return kept(unpatched, `instance ${owner} took this node over during the uninstall`, false);
  if (again.length > 0) return kept(unpatched, `another installer chained the plugin again into ${again.join(', ')}`, true);
  // 4.
  removeChainedTargets(root, config.netDir);
  const kubeconfig = options.kubeconfig ?? new KubeconfigFile(config, root);
  const kubeconfigRemoved = await kubeconfig.remove();
  if (kubeconfigRemoved) log.info({ file: config.kubeconfigName }, 'removed kubeconfig');
  let binariesRemoved: string[] = [];
  try {
    binariesRemoved = await removeBinaries(root, config.binDir, options.binaries);
    log.info({ binaries: binariesRemoved }, 'removed plugin binaries');
  } catch (err) {
    // No config names the plugin any more: a binary left behind breaks nothing, but is reported.
    log.warn({ err: (err as Error).message }, 'cannot remove the plugin binaries');
  }
  // 5.
  const late = configsNaming(root, config.netDir, config.suffixes, pluginType, config.maxConfigBytes);
  if (late.length > 0) {
    await installBinaries(config.containerBinDir, root, config.binDir);
    removeSpares(root, config.binDir, options.binaries);
    await kubeconfig.sync();
    log.warn({ files: late }, 'another installer chained the plugin again while its binaries were being removed: put them and the kubeconfig back');
    options.releaseOwnership();
    return { unpatched, failed: [], handedOver: `another installer chained the plugin again into ${late.join(', ')}`, kubeconfigRemoved: false, binariesRemoved: [] };
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
