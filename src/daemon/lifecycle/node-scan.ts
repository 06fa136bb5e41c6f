// Looking at the whole node again (docs/design.md, Events): the rescan of net.d after a start, an
// overflow, a watcher error, a take-back or a resync tick; and the sweep of temp files that earlier
// instances stranded. A scan that cannot list net.d (EMFILE, EACCES, EIO) is a named readiness
// condition and is tried again soon, never a crash: it runs from timers, where a throw would end the
// process.
import { withDirSync } from '../../fs/dir.js';
import { errnoCode, isMissing } from '../../fs/errno.js';
import type { ConfigKeeper } from '../keepers/config-keeper.js';
import type { Condition } from '../shared/readiness.js';
import type { ControllerDeps } from '../shared/controller-deps.js';
import { sweepTemps } from './temp-sweep.js';

// (docs/design.md, Readiness: EMFILE is retried, never fatal.)
const SCAN_RETRY_MS = 2_000;

export interface NodeScanDeps extends ControllerDeps {
  pluginType: string;
  keeper: ConfigKeeper;
}

export class NodeScan {
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly condition: Condition;

  constructor(private readonly deps: NodeScanDeps) {
    this.condition = deps.readiness.condition('scan');
  }

  /** Every config in net.d gets a pass (labelled `reason` in the metrics). */
  rescan(reason: string): void {
    const { phase, config, log, metrics, keeper } = this.deps;
    if (!phase.maintaining || !this.deps.netDirArmed()) return;
    metrics.resyncs.inc({ reason });
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    try {
      keeper.scan();
    } catch (err) {
      const failure = `cannot list the config directory: ${errnoCode(err) ?? (err as Error).message}`;
      if (failure !== this.condition.reason) log.error({ dir: config.netDir, code: errnoCode(err), err: (err as Error).message }, 'cannot list the config directory: trying again');
      this.condition.set(failure);
      this.deps.onConditionChange();
      this.retryTimer = setTimeout(() => this.rescan('retry'), SCAN_RETRY_MS);
      this.retryTimer.unref();
      return;
    }
    if (this.condition.failing) {
      this.condition.clear();
      log.info({ dir: config.netDir }, 'the config directory can be listed again');
      this.deps.onConditionChange();
    }
  }

  /**
   * Removes stranded temp files older than `minAgeMs` from net.d, the bin dir and every symlink
   * target's directory; a newer write a crash left mid-exchange is put back first.
   */
  sweep(minAgeMs: number): void {
    const { config, root, log, keeper } = this.deps;
    const dirs = [config.netDir, config.binDir, ...keeper.targets.targetDirs().map((d) => root.fromDisk(d))];
    for (const hostDir of new Set(dirs)) {
      try {
        const result = withDirSync(root.openDir(hostDir), (dir) => sweepTemps(dir, { pluginType: this.deps.pluginType, maxBytes: config.maxConfigBytes, minAgeMs }));
        if (result.restored.length > 0) log.warn({ dir: hostDir, files: result.restored }, 'put back a newer write that a crash had left in a temp file');
        if (result.removed.length > 0) log.info({ dir: hostDir, files: result.removed.length }, 'removed stale temp files of earlier instances');
      } catch (err) {
        if (!isMissing(err)) log.warn({ dir: hostDir, code: errnoCode(err), err: (err as Error).message }, 'cannot sweep stale temp files');
      }
    }
  }

  dispose(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.condition.clear();
  }
}
