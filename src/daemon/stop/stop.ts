// A stop (docs/design.md, Stop and uninstall), once the watches are closed and the passes drained: the
// verdict, then the leave. The verdict is CLEANUP_ON_STOP, and for `auto` the API server's word on
// this agent's DaemonSet and Node (kube/stop-facts.ts asks, kube/stop-decision.ts decides, a pure
// table); without an API server to ask, an uninstall unless another instance stands by on the node,
// which then keeps it chained without a gap. The leave follows it: the node left to another instance
// that owns it, left chained for a replacement, or uninstalled (teardown.ts). What the stop needs of
// the daemon comes in as the narrow interfaces below.
import type { Config } from '../../config.js';
import type { HostRoot } from '../../fs/host-root.js';
import type { KubeconfigFile } from '../../kube/kubeconfig-file.js';
import type { StopDecision, StopFacts } from '../../kube/stop-decision.js';
import type { Logger } from '../../log.js';
import { removeSpares } from '../node/binaries.js';
import type { Metrics } from '../shared/metrics.js';
import { teardown } from './teardown.js';

// A few GETs at most, each bounded: the stop's own deadline (SHUTDOWN_TIMEOUT_S) is never at risk.
const MAX_REQUEST_MS = 5_000;

export type { StopDecision };

export interface StopResult {
  /** True when this instance removed what it installed (false: another owns the node, or it failed). */
  cleaned: boolean;
  unpatched: string[];
  /** Configs that still hold the plugin: the binary and kubeconfig were kept for them. */
  failed: string[];
}

/** Who owns the node, as the ownership role sees it now (lifecycle/ownership-role.ts). */
export interface NodeRole {
  ownedByAnother(): { another: boolean; instance?: string };
}

/** This instance's claim on the node: the owner file and the standby lock (lifecycle/ownership.ts). */
export interface NodeClaim {
  /** The owner file goes (a standby wakes). */
  release(): void;
  /** A standby's shared lock goes. */
  dropStandbyLock(): void;
  /** True when another instance stands by on this node. */
  standbyWaiting(): boolean;
}

/** What a stop touches. */
export interface Stopping {
  config: Config;
  pluginType: string;
  root: HostRoot;
  log: Logger;
  metrics: Metrics;
  role: NodeRole;
  ownership: NodeClaim;
  /** The stop's facts, asked of the API server (node-credential.ts); undefined without one. */
  stopFacts(timeoutMs: number): Promise<StopFacts | undefined>;
  /** The uninstall said on the Node, waited for at most `ms`. */
  announceUninstall(reason: string, ms: number): Promise<void>;
  binaryNames: string[];
  /** Symlink targets and delegates chained by this instance (host paths), once the passes drained. */
  chainedTargets(): string[];
  kubeconfig: KubeconfigFile;
}

/** Uninstall or keep: CLEANUP_ON_STOP, the API server's answers, or who else is on the node. */
export async function stopVerdict(node: Stopping): Promise<StopDecision> {
  const { config, log } = node;
  if (config.cleanupOnStop === 'never') return { kind: 'keep', reason: 'CLEANUP_ON_STOP=never' };
  if (config.cleanupOnStop === 'always') return { kind: 'uninstall', reason: 'CLEANUP_ON_STOP=always' };
  if (config.pod !== undefined) {
    const facts = await node.stopFacts(Math.min(MAX_REQUEST_MS, Math.floor(config.shutdownTimeoutMs / 5)));
    if (facts !== undefined) {
      // Loaded only now: a node that never stops never pays for it.
      const { decideStop, summarize } = await import('../../kube/stop-decision.js');
      log.info({ answers: summarize(facts) }, "the API server's answers for the stop");
      return decideStop(facts);
    }
    log.warn({ pod: config.pod.name }, 'POD_NAME is set but there is no service-account token or KUBERNETES_SERVICE_HOST: deciding the stop without the API server');
  }
  if (node.ownership.standbyWaiting()) return { kind: 'keep', reason: 'another instance stands by on this node: handing it over' };
  return { kind: 'uninstall', reason: 'no API server to ask and no other instance on this node: removing what was installed' };
}

const LEFT: StopResult = { cleaned: false, unpatched: [], failed: [] };

/** `verdict` is undefined when this instance stood by (it never maintained the node). */
export async function leaveNode(node: Stopping, verdict: Promise<StopDecision> | undefined): Promise<StopResult> {
  const { role, ownership: owner, log } = node;
  const another = role.ownedByAnother();
  if (verdict === undefined || another.another) {
    owner.dropStandbyLock();
    log.info({ owner: another.instance }, 'another instance owns this node: leaving its configuration in place');
    return LEFT;
  }
  const decided = await verdict;
  // Asked again: the verdict may have taken seconds, and a newer instance may have claimed the node
  // meanwhile. Its configuration is not ours to remove.
  const now = role.ownedByAnother();
  if (now.another) {
    owner.dropStandbyLock();
    log.info({ owner: now.instance, reason: decided.reason }, 'another instance took this node over while the stop was decided: leaving its configuration in place');
    return LEFT;
  }
  if (decided.kind === 'keep') {
    // A replacement: configs, binaries and kubeconfig stay; the next instance (or the one standing by,
    // which our lock going wakes) takes the node from here. The binaries' spares are this instance's:
    // the next one makes its own, and another installer (a rollback to linkerd's) would never remove them.
    log.info({ reason: decided.reason }, 'stopping without unchaining: the node stays chained');
    removeSpares(node.root, node.config.binDir, node.binaryNames);
    owner.release();
    return LEFT;
  }
  log.info({ reason: decided.reason }, 'uninstalling: removing the plugin from every config');
  await node.announceUninstall(decided.reason, 2_000);
  const result = await teardown(node.root, node.config, node.pluginType, log, {
    binaries: node.binaryNames,
    patchedTargets: node.chainedTargets(),
    releaseOwnership: () => owner.release(),
    ownedByAnother: () => {
      const latest = role.ownedByAnother();
      return latest.another ? (latest.instance ?? 'another') : undefined;
    },
    kubeconfig: node.kubeconfig,
  });
  if (result.handedOver !== undefined) log.info({ reason: result.handedOver }, 'the plugin binaries and the kubeconfig stay for whoever chains the plugin now');
  node.metrics.unpatches.inc(result.unpatched.length);
  return { cleaned: result.failed.length === 0, unpatched: result.unpatched, failed: result.failed };
}
