// The end of a stop (docs/design.md, Stop and uninstall), once the watches are closed and the passes
// drained: the node is left to another instance that owns it, left chained for a replacement, or
// uninstalled, as the stop's verdict (stop-policy.ts) says.
import type { Config } from '../../config.js';
import type { ChainedPlugin } from '../../cni/chained-plugin.js';
import type { HostRoot } from '../../fs/host-root.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../http/metrics.js';
import type { InstalledFiles } from '../node/installed-files.js';
import type { KubeconfigFile } from '../../kube/kubeconfig-file.js';
import type { ChainedTargets } from './chained-targets.js';
import type { Ownership } from './ownership.js';
import type { OwnershipRole } from './ownership-role.js';
import type { ReadinessReporter } from './readiness-reporter.js';
import type { StopVerdict } from './stop-policy.js';
import { removeSpares } from '../node/binaries.js';
import { teardown } from './teardown.js';

export interface StopResult {
  /** True when this instance removed what it installed (false: another owns the node, or it failed). */
  cleaned: boolean;
  unpatched: string[];
  /** Configs that still hold the plugin: the binary and kubeconfig were kept for them. */
  failed: string[];
}

/** What leaving the node touches: the daemon's parts. */
export interface LeavingNode {
  config: Config;
  plugin: ChainedPlugin;
  root: HostRoot;
  log: Logger;
  metrics: Metrics;
  ownership: Ownership;
  role: OwnershipRole;
  reporter: ReadinessReporter;
  installed: InstalledFiles;
  chainedTargets: ChainedTargets;
  kubeconfig: KubeconfigFile;
}

/** `verdict` is undefined when this instance stood by (it never maintained the node). */
export async function leaveNode(node: LeavingNode, wasPassive: boolean, verdict: Promise<StopVerdict> | undefined): Promise<StopResult> {
  const owner = node.role.ownedByAnother();
  if (wasPassive || owner.another || verdict === undefined) {
    node.ownership.dropStandbyLock();
    node.log.info({ owner: owner.instance }, 'another instance owns this node: leaving its configuration in place');
    return { cleaned: false, unpatched: [], failed: [] };
  }
  const decided = await verdict;
  // Asked again: the verdict may have taken seconds, and a newer instance may have claimed the node
  // meanwhile (docs/design.md, Stop). Its configuration is not ours to remove.
  const nowOwner = node.role.ownedByAnother();
  if (nowOwner.another) {
    node.ownership.dropStandbyLock();
    node.log.info({ owner: nowOwner.instance, reason: decided.reason }, 'another instance took this node over while the stop was decided: leaving its configuration in place');
    return { cleaned: false, unpatched: [], failed: [] };
  }
  if (!decided.teardown) {
    // A replacement: configs, binaries and kubeconfig stay; the next instance (or the one standing
    // by, which our lock going wakes) takes the node from here.
    node.log.info({ reason: decided.reason }, 'stopping without unchaining: the node stays chained');
    // The binaries' spares are this instance's: the next one makes its own, and another installer
    // (a rollback to linkerd's) would never remove them.
    removeSpares(node.root, node.config.binDir, node.installed.binaryNames);
    node.ownership.release();
    return { cleaned: false, unpatched: [], failed: [] };
  }
  node.log.info({ reason: decided.reason }, 'uninstalling: removing the plugin from every config');
  await node.reporter.uninstalling(decided.reason, 2_000);
  const result = await teardown(node.root, node.config, node.plugin.type, node.log, {
    binaries: node.installed.binaryNames,
    patchedTargets: node.chainedTargets.all,
    releaseOwnership: () => node.ownership.release(),
    ownedByAnother: () => {
      const now = node.role.ownedByAnother();
      return now.another ? (now.instance ?? 'another') : undefined;
    },
    kubeconfig: node.kubeconfig,
  });
  if (result.handedOver !== undefined) node.log.info({ reason: result.handedOver }, 'the plugin binaries and the kubeconfig stay for whoever chains the plugin now');
  node.metrics.unpatches.inc(result.unpatched.length);
  return { cleaned: result.failed.length === 0, unpatched: result.unpatched, failed: result.failed };
}
