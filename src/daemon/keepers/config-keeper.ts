// What the daemon asks of whatever keeps the node's configs chained: the in-place Reconciler, or the
// OwnedConfig of CNI_PATCH_MODE=owned. Events, scans and shutdown are the same for both.
import type { Config } from '../../config.js';
import type { ChainedPlugin } from '../../cni/chained-plugin.js';
import type { HostRoot } from '../../fs/host-root.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../shared/metrics.js';
import type { PluginBinary } from '../node/plugin-binary.js';
import type { Readiness } from '../shared/readiness.js';
import type { TargetsView } from './symlink-targets.js';

/** What a keeper needs from the daemon. */
export interface KeeperDeps {
  config: Config;
  plugin: ChainedPlugin;
  root: HostRoot;
  log: Logger;
  metrics: Metrics;
  readiness: Readiness;
  /** The plugin's binary on the host: nothing is chained while it is not there as installed. */
  binary: PluginBinary;
  /** False once the daemon stops or another instance owns the node: passes do nothing then. */
  isActive: () => boolean;
  /** Starts or stops watching a directory that holds symlink targets. */
  onTargetDir: (dir: string, used: boolean) => void;
  /** Called after every pass (readiness may have changed). */
  onPassDone?: () => void;
  /**
   * Called before a file outside net.d (a symlink target, a Multus delegate) is chained, and waited
   * for: it is written down first, so that a crash right after the write still leaves a record.
   */
  recordTarget?: (hostPath: string) => Promise<void> | undefined;
  /** The clock of the fight rule and of what is kept for a removed config, in ms (tests pass their own). */
  now?: () => number;
}


export interface ConfigKeeper {
  /** Symlink targets whose directories the daemon watches: read only, the keeper's passes set them. */
  readonly targets: TargetsView;
  /** A directory holding symlink targets was removed or replaced: the links into it, now forgotten. */
  targetDirGone(dir: string): readonly string[];
  /** True for a net.d entry name whose events need a pass. */
  concerns(name: string): boolean;
  trigger(name: string): void;
  scan(): number;
  drain(): Promise<void>;
  stop(): void;
  /** After the last pass has finished: remove whatever the keeper keeps beside the configs. */
  dispose(): Promise<void>;
  setNetDir(netDirOnDisk: string): void;
  /** Drops every per-config status it set (net.d re-armed or lost): the next scan or sync sets them again. */
  clearStatuses(): void;
  /** net.d was removed or moved away (its watch said so): no new pass may use a handle opened before. */
  netDirGone(): void;
}
