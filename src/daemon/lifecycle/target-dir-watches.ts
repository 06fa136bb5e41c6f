// The watches on directories that symlinked configs point into (docs/design.md, Symlinks): Cilium's
// `05-cilium.conflist -> /var/run/cilium/...`, OKE's links into /etc/cni/oke. A change of a target
// is a change of the config the runtime loads, so its directory is watched like net.d, for as long
// as some link leads there. Each watched directory that the kernel refuses (inotify limits) has its
// own readiness condition, set here and cleared when the watch succeeds or no link leads there.
import { errnoCode, isMissing } from '../../fs/errno.js';
import type { HostRoot } from '../../fs/host-root.js';
import type { Logger } from '../../log.js';
import type { Watcher } from '../../watch/watcher.js';
import { watchFailureReason } from './net-dir-watch.js';
import type { Condition, Readiness } from '../shared/readiness.js';
import type { TargetsView } from '../keepers/symlink-targets.js';

export class TargetDirWatches {
  /** Conditions of the directories whose watch failed, by directory on disk. */
  private readonly failed = new Map<string, Condition>();

  constructor(
    private readonly root: HostRoot,
    private readonly watcher: Watcher,
    private readonly readiness: Readiness,
    private readonly log: Logger,
    private readonly onConditionChange: () => void,
  ) {}

  /** A pass found that links do (`used`) or no longer do lead into `dir`. */
  async update(dir: string, used: boolean): Promise<void> {
    if (!used) {
      // No link leads there any more: neither does a reason about its watch.
      this.clear(dir);
      this.onConditionChange();
      await this.watcher.unwatch(dir);
      return;
    }
    try {
      await this.watcher.watch(dir);
      this.clear(dir);
    } catch (err) {
      // A dangling link into a directory that does not exist yet: the resync looks again.
      if (isMissing(err)) {
        this.log.debug({ dir }, 'symlink target directory does not exist yet');
        return;
      }
      // The watch limit hit for a target's directory is a status on its configs, never a crash.
      const reason = watchFailureReason(errnoCode(err), this.root.fromDisk(dir));
      this.conditionOf(dir).set(`${reason}: changes of symlink targets there are not seen`);
      this.log.error({ dir: this.root.fromDisk(dir), code: errnoCode(err) }, reason);
    }
  }

  /** The resync: every target directory that is not watched is tried again. */
  retry(targets: TargetsView): void {
    for (const dir of targets.targetDirs()) if (!this.watcher.isWatching(dir)) void this.update(dir, true);
  }

  dispose(): void {
    for (const dir of [...this.failed.keys()]) this.clear(dir);
  }

  private conditionOf(dir: string): Condition {
    let condition = this.failed.get(dir);
    if (condition === undefined) {
      condition = this.readiness.condition(`target-dir:${dir}`);
      this.failed.set(dir, condition);
    }
    return condition;
  }

  private clear(dir: string): void {
    this.failed.get(dir)?.clear();
    this.failed.delete(dir);
  }
}
