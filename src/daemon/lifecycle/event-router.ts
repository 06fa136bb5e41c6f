// Routes each batch of watch events to the controller it concerns (docs/design.md, Events): config
// names in net.d to the config keeper (debounced until the writer is done), the owner file to the
// ownership role, the path to net.d to its watch, symlink targets' directories to the links that
// lead there, the service-account dir and the bin dir to the installed files. Our own renames are set aside
// first, and an overflow means a rescan.
import type { Config } from '../../config.js';
import { flushReplacements } from '../../fs/replace-batches.js';
import type { Logger } from '../../log.js';
import type { WatchEventKind, WatchEvents, Watcher } from '../../watch/watcher.js';
import type { Metrics } from '../shared/metrics.js';
import type { ConfigKeeper } from '../keepers/config-keeper.js';
import type { InstalledFiles } from '../node/installed-files.js';
import type { NetDirWatch } from './net-dir-watch.js';
import type { NodeScan } from './node-scan.js';
import { OwnRenames } from './own-renames.js';
import { OWNER_FILE_NAME } from './ownership.js';
import type { OwnershipRole } from './ownership-role.js';
import type { PhaseState } from '../shared/phase.js';
import { SettleTimers } from './settle-timers.js';

export interface EventRouterDeps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  phase: PhaseState;
  watcher: Watcher;
  netDir: NetDirWatch;
  keeper: ConfigKeeper;
  role: OwnershipRole;
  installed: InstalledFiles;
  scan: NodeScan;
  /** The bin dir as the watcher names it. */
  binDirOnDisk: () => string | undefined;
  /** After every batch: readiness may have changed. */
  onBatchDone: () => void;
}

export class EventRouter {
  private readonly settle = new SettleTimers();
  private readonly ownRenames = new OwnRenames();

  constructor(private readonly deps: EventRouterDeps) {}

  onEvents(events: WatchEvents): void {
    const { phase, metrics, log, netDir, keeper, config, installed } = this.deps;
    if (phase.ending) return;
    this.ownRenames.observe(events);
    const netDirDisk = netDir.disk;
    const binDirOnDisk = this.deps.binDirOnDisk();
    // Column by column, no object per event (watch/watcher.ts, WatchEvents); indexed, not for-of: an
    // iterator result per event until the optimizing compiler has this function.
    for (let i = 0; i < events.length; i++) {
      const kind = events.kind(i);
      metrics.countEvent(kind);
      if (kind === 'overflow') {
        metrics.overflows.inc();
        log.warn('inotify queue overflowed: rescanning');
        installed.binDirEventsLost();
        this.deps.scan.rescan('overflow');
        void netDir.rearm().catch(() => {});
        continue;
      }
      const dir = events.dir(i);
      const name = events.name(i);
      if (this.ownRenames.isOwn(kind, name, events.cookie(i))) continue;
      if (dir === netDirDisk) this.onNetDirEvent(kind, dir, name, events.isDir(i));
      netDir.onEvent(kind, dir, name);
      if (keeper.targets.isTargetDir(dir)) this.onTargetDirEvent(kind, dir, name);
      if (dir === config.serviceAccountDir) void installed.syncKubeconfig();
      if (dir === binDirOnDisk) installed.onBinDirEvent(kind, name);
    }
    // Every pass these events started synchronously has asked for its write by now.
    flushReplacements();
    this.deps.onBatchDone();
  }

  /** Stop: no pass is scheduled any more. */
  dispose(): void {
    this.settle.clear();
  }

  private onNetDirEvent(kind: WatchEventKind, dir: string, name: string, isDir: boolean): void {
    const { phase, netDir, keeper, config } = this.deps;
    if (kind === 'dir-gone') {
      // The watch re-resolves the path; when it finds net.d gone it logs that and calls onNetDirLost,
      // which drops the held directory.
      netDir.onNetDirGone();
      return;
    }
    if (name === OWNER_FILE_NAME) {
      // Only once the file is complete: an owner file written in place (by hand, say) is empty or
      // half-written at its IN_CREATE and IN_MODIFY, and a record that cannot be
      // read looks like no owner at all, which would claim the node over it. IN_CLOSE_WRITE follows.
      if (kind !== 'create' && kind !== 'modify') this.deps.role.check();
      return;
    }
    if (phase.standingBy) return;
    if (name === config.kubeconfigName && (kind === 'delete' || kind === 'moved-out')) {
      void this.deps.installed.syncKubeconfig();
      return;
    }
    if (!isDir && keeper.concerns(name)) this.onConfigEvent(kind, name);
    // A symlink target that lives in net.d under a non-config name (05-cilium.conflist-current).
    const links = keeper.targets.linksTo(dir, name);
    for (let k = 0; k < links.length; k++) keeper.trigger(links[k]!);
  }

  private onConfigEvent(kind: WatchEventKind, name: string): void {
    switch (kind) {
      case 'create':
        // A new symlink is complete; a new regular file may still be being written. Both get a pass
        // once written; a symlink has no IN_CLOSE_WRITE, so look now (a pass of a half-written file
        // only finds invalid JSON and waits for the next event).
        this.deps.keeper.trigger(name);
        this.triggerWhenWritten(name);
        return;
      case 'modify':
        this.triggerWhenWritten(name);
        return;
      default:
        this.settle.cancel(name);
        this.deps.keeper.trigger(name);
    }
  }

  private onTargetDirEvent(kind: WatchEventKind, dir: string, name: string): void {
    const { keeper } = this.deps;
    let links: readonly string[];
    if (kind === 'dir-gone') {
      // The directory was replaced or removed: drop the dead watch and look again (re-watched by the pass).
      void this.deps.watcher.unwatch(dir);
      links = keeper.targetDirGone(dir);
    } else {
      links = keeper.targets.linksTo(dir, name);
    }
    for (const link of links) {
      if (kind === 'create' || kind === 'modify') this.triggerWhenWritten(link);
      else keeper.trigger(link);
    }
  }

  /** A pass once the writer is done: at its IN_CLOSE_WRITE (which cancels this), or after a quiet period. */
  private triggerWhenWritten(name: string): void {
    this.settle.arm(name, () => this.deps.keeper.trigger(name));
  }
}
