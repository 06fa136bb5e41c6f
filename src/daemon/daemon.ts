// The `run` lifecycle (DESIGN §3): binaries, kubeconfig, watches, scan, ready; then events, resyncs,
// token rotation; and on stop, the cleanup, unless a newer instance owns the node.
import { existsSync, lstatSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import type { JsonObject } from '../cni/json.js';
import { isConfigName } from '../cni/names.js';
import { errnoCode, isMissing } from '../fs/errno.js';
import { HostRoot } from '../fs/host-root.js';
import { KubeconfigFile } from '../kube/kubeconfig-file.js';
import type { Logger } from '../log.js';
import { createWatcher } from '../watch/create-watcher.js';
import type { WatchEvent, Watcher } from '../watch/watcher.js';
import { installBinaries, removeBinaries } from './binaries.js';
import { CoalescingQueue } from './coalescing-queue.js';
import type { Metrics } from './metrics.js';
import { isOwnRename, ownRenameCookies } from './own-renames.js';
import { OWNER_FILE_NAME, Ownership } from './ownership.js';
import { Readiness } from './readiness.js';
import { Reconciler } from './reconciler.js';
import { SettleTimers } from './settle-timers.js';
import { unpatchNode } from './unpatch-node.js';

export class Daemon {
  readonly root: HostRoot;
  readonly readiness = new Readiness();
  readonly netDirOnDisk: string;
  private readonly binDirOnDisk: string;
  private readonly watcher: Watcher;
  private readonly reconciler: Reconciler;
  private readonly kubeconfig: KubeconfigFile;
  private readonly ownership: Ownership;
  private readonly settle = new SettleTimers();
  // Token rotation and binary checks come in bursts of events: one run at a time, coalesced.
  private readonly chores = new CoalescingQueue(
    (chore) => (chore === 'kubeconfig' ? this.writeKubeconfig() : this.checkBinaries()),
    (chore, err) =>
      this.log.error(
        { code: errnoCode(err), err: (err as Error).message },
        chore === 'kubeconfig' ? 'writing kubeconfig failed' : 'reinstalling plugin binaries failed',
      ),
  );
  private installed: string[] = [];
  private armed = false; // net.d itself is watched
  private waitingIn: string | undefined; // the ancestor watched while net.d does not exist
  private claimed = false;
  private passive = false; // another instance took over the node
  private stopping = false;
  private resyncTimer: NodeJS.Timeout | undefined;
  private lastReady = false; // "not ready" while starting goes without saying
  private arming: Promise<void> = Promise.resolve();

  constructor(
    private readonly config: Config,
    private readonly plugin: JsonObject,
    private readonly log: Logger,
    private readonly metrics: Metrics,
  ) {
    this.root = new HostRoot(config.hostRoot);
    this.netDirOnDisk = this.root.dirOnDisk(config.netDir);
    this.binDirOnDisk = this.root.toDisk(config.binDir);
    this.kubeconfig = new KubeconfigFile(config, path.join(this.netDirOnDisk, config.kubeconfigName));
    this.ownership = new Ownership(this.netDirOnDisk);
    this.watcher = createWatcher(
      config.backend,
      (events) => this.onEvents(events),
      (error) => {
        this.log.error({ err: error.message }, 'watcher error: rescanning');
        this.rescan('watcher-error');
      },
    );
    this.reconciler = new Reconciler({
      config,
      plugin,
      root: this.root,
      log,
      metrics,
      readiness: this.readiness,
      isActive: () => !this.stopping && !this.passive,
      onTargetDir: (dir, used) => void this.watchTargetDir(dir, used),
      onPassDone: () => this.updateReadiness(),
    });
    this.readiness.block('start', 'starting');
  }

  get instance(): string {
    return this.ownership.record.instance;
  }

  /** True while the watches are in place (for /healthz). */
  get watching(): boolean {
    return !this.stopping && (this.armed || this.waitingIn !== undefined);
  }

  async start(): Promise<void> {
    this.kubeconfig.render(); // a token without KUBERNETES_SERVICE_HOST is a configuration error: fail now
    // 1. Binaries before any config names them.
    mkdirSync(this.binDirOnDisk, { recursive: true });
    const binaries = await installBinaries(this.config.containerBinDir, this.binDirOnDisk);
    this.installed = binaries.map((b) => b.name);
    this.log.info({ dir: this.config.binDir, binaries: binaries.map((b) => `${b.name}${b.written ? '' : ' (unchanged)'}`) }, 'installed plugin binaries');
    // 2. Kubeconfig, when net.d already exists (otherwise once it appears).
    if (existsSync(this.netDirOnDisk)) await this.syncKubeconfig();
    // 3. Watches first: the service-account dir, the bin dir, net.d (or its nearest existing ancestor).
    if (existsSync(this.config.serviceAccountDir)) await this.watcher.watch(this.config.serviceAccountDir);
    await this.watcher.watch(this.binDirOnDisk);
    // 4. Then the scan, inside arm(): anything written from here on is seen by the scan, the watch or both.
    await this.rearm();
    if (this.config.resyncIntervalMs > 0) {
      this.resyncTimer = setInterval(() => void this.resync(), this.config.resyncIntervalMs);
      this.resyncTimer.unref();
    }
    // 5. Ready once the first passes are done (the readiness report also needs every config chained).
    await this.reconciler.drain();
    this.readiness.block('start', undefined);
    this.updateReadiness();
  }

  /** Stops watching; unless another instance owns the node, removes everything `run` installed. */
  async stop(): Promise<{ cleaned: boolean; unpatched: string[] }> {
    if (this.stopping) return { cleaned: false, unpatched: [] };
    this.stopping = true;
    clearInterval(this.resyncTimer);
    this.settle.clear();
    this.reconciler.stop();
    await this.watcher.close();
    await Promise.all([this.reconciler.drain(), this.chores.drain()]);
    const owner = this.ownership.currentOwner();
    if (this.passive || (owner !== undefined && owner !== this.instance)) {
      this.log.info({ owner }, 'another instance owns this node: leaving its configuration in place');
      return { cleaned: false, unpatched: [] };
    }
    const unpatched = await unpatchNode(this.root, this.config.netDir, this.config.suffixes, this.plugin.type as string, this.log);
    this.metrics.unpatches.inc(unpatched.length);
    if (this.kubeconfig.remove()) this.log.info({ file: this.config.kubeconfigName }, 'removed kubeconfig');
    const removed = removeBinaries(this.binDirOnDisk, this.installed);
    this.log.info({ binaries: removed }, 'removed plugin binaries');
    this.ownership.release();
    return { cleaned: true, unpatched };
  }

  private onEvents(events: WatchEvent[]): void {
    if (this.stopping) return;
    const ownCookies = ownRenameCookies(events);
    for (const event of events) {
      this.metrics.countEvent(event.kind);
      if (isOwnRename(event, ownCookies)) continue;
      if (event.kind === 'overflow') {
        this.metrics.overflows.inc();
        this.log.warn('inotify queue overflowed: rescanning');
        this.rescan('overflow');
        continue;
      }
      if (event.dir === this.netDirOnDisk && this.armed) this.onNetDirEvent(event);
      if (event.dir === this.waitingIn) void this.rearm();
      if (this.reconciler.targets.isTargetDir(event.dir)) this.onTargetDirEvent(event);
      if (event.dir === this.config.serviceAccountDir) void this.syncKubeconfig();
      if (event.dir === this.binDirOnDisk && (event.kind === 'delete' || event.kind === 'moved-out') && this.installed.includes(event.name)) {
        // Someone (an older instance's cleanup during an upgrade) removed our binary: put it back.
        void this.reinstallBinaries();
      }
    }
    this.updateReadiness();
  }

  private onNetDirEvent(event: WatchEvent): void {
    if (event.kind === 'dir-gone') {
      this.log.warn({ dir: this.config.netDir }, 'config directory is gone: waiting for it to come back');
      this.armed = false;
      void this.watcher.unwatch(this.netDirOnDisk);
      this.readiness.clearConfigs();
      void this.rearm();
      return;
    }
    const { name } = event;
    if (name === OWNER_FILE_NAME) {
      this.checkOwnership();
      return;
    }
    if (name === this.config.kubeconfigName && (event.kind === 'delete' || event.kind === 'moved-out')) {
      void this.syncKubeconfig();
      return;
    }
    if (isConfigName(name, this.config.suffixes) && !event.isDir) this.onConfigEvent(event);
    // A symlink target that lives in net.d under a non-config name (05-cilium.conflist-current).
    for (const link of this.reconciler.targets.linksTo(this.netDirOnDisk, name)) this.reconciler.trigger(link);
  }

  private onConfigEvent(event: WatchEvent): void {
    const { name } = event;
    switch (event.kind) {
      case 'create': {
        // A new symlink is complete; a new regular file may still be being written.
        const st = lstatSync(path.join(this.netDirOnDisk, name), { throwIfNoEntry: false });
        if (st?.isFile()) this.triggerWhenWritten(name);
        else this.reconciler.trigger(name);
        return;
      }
      case 'modify':
        this.triggerWhenWritten(name);
        return;
      default:
        this.settle.cancel(name);
        this.reconciler.trigger(name);
    }
  }

  private onTargetDirEvent(event: WatchEvent): void {
    const links = event.kind === 'dir-gone' ? this.reconciler.targets.linksInto(event.dir) : this.reconciler.targets.linksTo(event.dir, event.name);
    if (event.kind === 'dir-gone') void this.watcher.unwatch(event.dir);
    for (const link of links) {
      if (event.kind === 'create' || event.kind === 'modify') this.triggerWhenWritten(link);
      else this.reconciler.trigger(link);
    }
  }

  /** A pass once the writer is done: at its IN_CLOSE_WRITE (which cancels this), or after a quiet period. */
  private triggerWhenWritten(name: string): void {
    this.settle.arm(name, () => this.reconciler.trigger(name));
  }

  private async watchTargetDir(dir: string, used: boolean): Promise<void> {
    if (!used) {
      await this.watcher.unwatch(dir);
      return;
    }
    try {
      await this.watcher.watch(dir);
    } catch (err) {
      // A dangling link into a directory that does not exist yet: the resync looks again.
      if (!isMissing(err)) throw err;
      this.log.debug({ dir }, 'symlink target directory does not exist yet');
    }
  }

  /** Serialised: events from the waiting ancestor may come in bursts. */
  private rearm(): Promise<void> {
    this.arming = this.arming.then(() => this.arm()).catch((err: unknown) => {
      this.log.error({ err: (err as Error).message, code: errnoCode(err) }, 'cannot watch the config directory');
    });
    return this.arming;
  }

  /** Watches net.d, or while it does not exist, its nearest existing ancestor; scans once armed. */
  private async arm(): Promise<void> {
    if (this.armed || this.stopping) return;
    for (;;) {
      try {
        await this.watcher.watch(this.netDirOnDisk);
        break;
      } catch (err) {
        if (!isMissing(err)) throw err;
      }
      const ancestor = this.nearestExisting(path.dirname(this.netDirOnDisk));
      if (ancestor !== this.waitingIn) {
        if (this.waitingIn !== undefined) await this.watcher.unwatch(this.waitingIn);
        this.waitingIn = undefined;
        try {
          await this.watcher.watch(ancestor);
        } catch (err) {
          if (isMissing(err)) continue; // removed meanwhile
          throw err;
        }
        this.waitingIn = ancestor;
        this.readiness.block('netdir', `waiting for ${this.config.netDir} to exist`);
        this.log.info({ dir: this.config.netDir, watching: this.root.fromDisk(ancestor) }, 'config directory does not exist yet: waiting for it');
      }
      // A level created between the failed watch and the ancestor's watch sends no event: look again.
      if (this.nearestExisting(this.netDirOnDisk) === ancestor) return;
    }
    if (this.waitingIn !== undefined) await this.watcher.unwatch(this.waitingIn);
    this.waitingIn = undefined;
    this.armed = true;
    this.readiness.block('netdir', undefined);
    this.log.info({ dir: this.config.netDir, backend: this.watcher.backend }, 'watching config directory');
    await this.onArmed();
  }

  private async onArmed(): Promise<void> {
    const owner = this.ownership.currentOwner();
    // The newest instance claims the node at its first arm; later (net.d re-created) only if unclaimed.
    if (!this.claimed || owner === undefined || owner === this.instance) {
      await this.ownership.claim();
      this.claimed = true;
    } else {
      this.standDown(owner);
      return;
    }
    await this.syncKubeconfig();
    this.rescan('start');
  }

  /** `dir` itself if it exists, else its nearest existing ancestor. */
  private nearestExisting(dir: string): string {
    while (!statSync(dir, { throwIfNoEntry: false })?.isDirectory()) {
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
    return dir;
  }

  private checkOwnership(): void {
    const owner = this.ownership.currentOwner();
    if (owner !== undefined && owner !== this.instance && !this.passive) this.standDown(owner);
  }

  private standDown(owner: string): void {
    this.passive = true;
    this.readiness.block('owner', `instance ${owner} has taken over this node`);
    this.log.warn({ owner }, 'a newer instance has taken over this node: no longer patching, and no cleanup on exit');
  }

  private rescan(reason: string): void {
    if (this.stopping || !this.armed) return;
    this.metrics.resyncs.inc({ reason });
    this.reconciler.scan();
  }

  private async resync(): Promise<void> {
    if (this.stopping) return;
    if (!this.armed) await this.rearm();
    this.rescan('timer');
    await this.syncKubeconfig();
    await this.reinstallBinaries();
    for (const dir of this.reconciler.targets.targetDirs()) if (!this.watcher.isWatching(dir)) void this.watchTargetDir(dir, true);
  }

  private async syncKubeconfig(): Promise<void> {
    if (this.stopping || this.passive) return;
    this.chores.trigger('kubeconfig');
    await this.chores.drain();
  }

  private async reinstallBinaries(): Promise<void> {
    if (this.stopping || this.passive) return;
    this.chores.trigger('binaries');
    await this.chores.drain();
  }

  private async writeKubeconfig(): Promise<void> {
    if ((await this.kubeconfig.sync()) !== 'written') return;
    this.metrics.kubeconfigWrites.inc();
    this.log.info({ file: this.config.kubeconfigName }, 'wrote kubeconfig');
  }

  private async checkBinaries(): Promise<void> {
    const binaries = await installBinaries(this.config.containerBinDir, this.binDirOnDisk);
    const written = binaries.filter((b) => b.written).map((b) => b.name);
    if (written.length > 0) this.log.warn({ binaries: written }, 'plugin binaries were missing or changed: reinstalled');
  }

  /** Logs and exports readiness changes; called after events and passes. */
  updateReadiness(): void {
    if (this.stopping) return;
    const ready = this.readiness.ready;
    if (ready === this.lastReady) return;
    this.lastReady = ready;
    this.metrics.ready.set(ready ? 1 : 0);
    if (ready) this.log.info('ready: every config is chained');
    else this.log.info({ reasons: this.readiness.report().reasons }, 'not ready');
  }
}
