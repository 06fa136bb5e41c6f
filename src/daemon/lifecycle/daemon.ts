// The `run` lifecycle (docs/design.md, Start): binaries, kubeconfig, watches, scan, ready; then events, resyncs,
// token rotation, the ownership lock; and on stop, the cleanup, unless a newer instance owns the node.
//
// One explicit phase instead of loose flags:
//   starting → active ⇄ passive (another live instance owns the node) → stopping → stopped
// net.d's watch, the ownership rule, fights and symlinks each live in their own module.
import { existsSync } from 'node:fs';
import type { Config } from '../../config.js';
import type { ChainedPlugin } from '../../cni/conflist.js';
import { errnoCode, isMissing } from '../../fs/errno.js';
import { withDirSync } from '../../fs/dir.js';
import { HostRoot } from '../../fs/host-root.js';
import { KubeconfigFile } from '../../kube/kubeconfig-file.js';
import type { Logger } from '../../log.js';
import { createWatcher } from '../../watch/create-watcher.js';
import type { WatchEvent, Watcher } from '../../watch/watcher.js';
import { installBinaries, removeBinaries } from '../node/binaries.js';
import { CoalescingQueue } from '../keepers/coalescing-queue.js';
import type { Metrics } from '../http/metrics.js';
import { NetDirWatch, watchFailureReason } from './net-dir-watch.js';
import { OwnRenames } from './own-renames.js';
import { PluginBinary } from '../node/plugin-binary.js';
import { LEGACY_STALE_AFTER_MS, OWNER_FILE_NAME, Ownership, type Owner } from './ownership.js';
import { Readiness } from '../keepers/readiness.js';
import type { ConfigKeeper } from '../keepers/config-keeper.js';
import { OwnedConfig } from '../keepers/owned-config.js';
import { Reconciler } from '../keepers/reconciler.js';
import { SettleTimers } from './settle-timers.js';
import { sweepTemps } from './temp-sweep.js';
import { unpatchNode } from './unpatch-node.js';

export type Phase = 'starting' | 'active' | 'passive' | 'stopping' | 'stopped';

export interface StopResult {
  /** True when this instance removed what it installed (false: another owns the node, or it failed). */
  cleaned: boolean;
  unpatched: string[];
  /** Configs that still hold the plugin: the binary and kubeconfig were kept for them. */
  failed: string[];
}

// Temps younger than this may belong to another instance's write in progress (upgrade overlap).
const SWEEP_MIN_AGE_MS = 10_000;
// A scan that cannot list net.d (EMFILE, EACCES, EIO) is tried again this soon (docs/design.md, Readiness: EMFILE is
// retried, never fatal), and its status stays on /readyz meanwhile.
const SCAN_RETRY_MS = 2_000;

export class Daemon {
  readonly root: HostRoot;
  readonly readiness = new Readiness();
  phase: Phase = 'starting';
  /**
   * Told when this instance stands down for a newer one, and when it takes the node back. On the
   * host's network both share one health port: the CLI hands it over (cli.ts).
   */
  onRoleChange: ((role: 'passive' | 'active') => void) | undefined;
  /** Resolves true once the first scan's passes are under way; false if start() ended without one. */
  readonly firstScan: Promise<boolean>;
  private firstScanDispatched!: (dispatched: boolean) => void;
  /** The live instance this one took the node from at start (a maxSurge upgrade), if any. */
  private tookOverFrom: string | undefined;
  private readonly watcher: Watcher;
  private readonly netDir: NetDirWatch;
  /** Keeps the configs chained: in place (Reconciler) or through the agent's own file (OwnedConfig). */
  private readonly reconciler: ConfigKeeper;
  private readonly kubeconfig: KubeconfigFile;
  private readonly ownership: Ownership;
  private readonly settle = new SettleTimers();
  private readonly ownRenames = new OwnRenames();
  // Token rotation and binary checks come in bursts of events: one run at a time, coalesced. The
  // plugin cannot run without its binary, nor reach the API without its kubeconfig, so a chore that
  // fails blocks readiness (as `check` says NOT chained without the binary) until one succeeds: the
  // next event or resync tries again.
  private readonly chores = new CoalescingQueue(
    async (chore: 'kubeconfig' | 'binaries') => {
      await (chore === 'kubeconfig' ? this.writeKubeconfig() : this.checkBinaries());
      if (this.readiness.blocked(chore)) {
        this.readiness.block(chore, undefined);
        this.updateReadiness();
      }
    },
    (chore, err) => {
      const code = errnoCode(err) ?? (err as Error).message;
      this.readiness.block(chore, chore === 'kubeconfig' ? `cannot write the kubeconfig: ${code}` : `cannot install the plugin binaries: ${code}`);
      this.log.error({ code: errnoCode(err), err: (err as Error).message }, chore === 'kubeconfig' ? 'writing kubeconfig failed' : 'reinstalling plugin binaries failed');
      this.updateReadiness();
    },
  );
  private installed: string[] = [];
  private readonly binary: PluginBinary;
  private binDirOnDisk: string | undefined;
  /** Every symlink target we ever patched (host paths): a retargeted link leaves its old one chained. */
  private readonly patchedTargets = new Set<string>();
  private resyncTimer: NodeJS.Timeout | undefined;
  /** While passive under an earlier version's owner, whose liveness is a heartbeat: polled. */
  private legacyOwnerTimer: NodeJS.Timeout | undefined;
  /** Owner files (by inode) whose lock a standby waits on. */
  private readonly waitingOn = new Set<number>();
  private scanRetryTimer: NodeJS.Timeout | undefined;
  private lastReady = false; // "not ready" while starting goes without saying

  constructor(
    private readonly config: Config,
    private readonly plugin: ChainedPlugin,
    private readonly log: Logger,
    private readonly metrics: Metrics,
  ) {
    this.firstScan = new Promise((resolve) => (this.firstScanDispatched = resolve));
    this.root = new HostRoot(config.hostRoot);
    this.kubeconfig = new KubeconfigFile(config, this.root);
    this.ownership = new Ownership(this.root, config.netDir);
    this.binary = new PluginBinary(this.root, config.binDir, config.containerBinDir, plugin.type);
    this.watcher = createWatcher(
      config.backend,
      (events) => this.onEvents(events),
      (error) => {
        this.log.error({ err: error.message }, 'watcher error: rescanning');
        this.rescan('watcher-error');
      },
    );
    this.netDir = new NetDirWatch(
      this.root,
      config.netDir,
      this.watcher,
      log,
      (disk) => this.onNetDirArmed(disk),
      (reason) => this.onNetDirLost(reason),
    );
    const deps = {
      config,
      plugin,
      root: this.root,
      log,
      metrics,
      readiness: this.readiness,
      binary: this.binary,
      isActive: () => this.phase === 'active' || this.phase === 'starting',
      onTargetDir: (dir: string, used: boolean) => void this.watchTargetDir(dir, used),
      onPassDone: () => this.updateReadiness(),
      onTargetPatched: (hostPath: string) => this.patchedTargets.add(hostPath),
    };
    const netDirOnDisk = this.root.toDisk(config.netDir);
    this.reconciler = config.mode === 'owned' ? new OwnedConfig(deps, netDirOnDisk) : new Reconciler(deps, netDirOnDisk);
    this.readiness.block('start', 'starting');
  }

  get instance(): string {
    return this.ownership.record.instance;
  }

  /** For /healthz: the watch on net.d (or on the path to it) is live, and we are not stopping. */
  get watching(): boolean {
    return (this.phase === 'starting' || this.phase === 'active' || this.phase === 'passive') && this.netDir.live;
  }

  async start(): Promise<void> {
    try {
      await this.startWatching();
    } finally {
      this.firstScanDispatched(false); // no-op once it said true
    }
  }

  private async startWatching(): Promise<void> {
    this.kubeconfig.render(); // a token without KUBERNETES_SERVICE_HOST is a configuration error: fail now
    if (!this.root.kernelConfined) {
      this.log.warn('openat2 is not available (Linux before 5.6): symlinks are resolved inside the host root in userland, which a concurrent directory swap can race');
    }
    // 1. Binaries before any config names them.
    this.binDirOnDisk = this.root.ensureDir(this.config.binDir);
    const binaries = await installBinaries(this.config.containerBinDir, this.root, this.config.binDir);
    this.installed = binaries.map((b) => b.name);
    this.log.info({ dir: this.config.binDir, binaries: binaries.map((b) => `${b.name}${b.written ? '' : ' (unchanged)'}`) }, 'installed plugin binaries');
    this.verifyPluginBinary();
    // 2. Stranded temp files of earlier instances, before anything reads the configs (a newer write
    //    displaced by a crash mid-exchange goes back first); then the kubeconfig, if net.d exists.
    this.sweep(0);
    if (this.root.dirOnDisk(this.config.netDir) !== undefined) {
      this.chores.trigger('kubeconfig');
      await this.chores.drain();
    }
    // 3. Watches first: the service-account dir, the bin dir, then net.d and the path to it, whose
    //    arming claims the node, writes the kubeconfig and scans. A watch the kernel refuses here
    //    (inotify limits) ends the start: never "running" without a watch.
    // (@parcel/watcher answers a missing directory with EBADF, not ENOENT: look first.)
    if (existsSync(this.config.serviceAccountDir)) await this.watcher.watch(this.config.serviceAccountDir);
    await this.watcher.watch(this.binDirOnDisk);
    await this.netDir.rearm();
    this.firstScanDispatched(true); // its writes are on the pool: nothing below holds them up
    this.resyncTimer = this.every(this.config.resyncIntervalMs, () => void this.resync());
    // 4. Ready once the first passes are done (the readiness report also needs every config chained).
    await this.reconciler.drain();
    if (this.phase === 'starting') this.phase = 'active';
    this.readiness.block('start', undefined);
    this.updateReadiness();
  }

  private every(ms: number, fn: () => void): NodeJS.Timeout | undefined {
    if (ms <= 0) return undefined;
    const timer = setInterval(fn, ms);
    timer.unref();
    return timer;
  }

  /** Stops watching; unless another instance owns the node, removes everything `run` installed. */
  async stop(): Promise<StopResult> {
    if (this.phase === 'stopping' || this.phase === 'stopped') return { cleaned: false, unpatched: [], failed: [] };
    const wasPassive = this.phase === 'passive';
    this.phase = 'stopping';
    clearInterval(this.resyncTimer);
    clearInterval(this.legacyOwnerTimer);
    clearTimeout(this.scanRetryTimer);
    this.settle.clear();
    this.reconciler.stop();
    await this.netDir.close();
    await this.watcher.close();
    await Promise.all([this.reconciler.drain(), this.chores.drain()]);
    await this.reconciler.dispose();
    try {
      const owner = this.ownership.currentOwner();
      if (wasPassive || this.ownership.isLiveOther(owner)) {
        this.log.info({ owner: owner?.instance }, 'another instance owns this node: leaving its configuration in place');
        return { cleaned: false, unpatched: [], failed: [] };
      }
      if (this.config.mode === 'owned') {
        const removed = removeOwnedConfig(this.root, this.config, this.plugin.type);
        if (removed.length > 0) this.log.info({ files: removed }, 'removed the owned config');
      }
      const { unpatched, failed } = await unpatchNode(
        this.root,
        this.config.netDir,
        this.config.suffixes,
        this.plugin.type,
        this.config.maxConfigBytes,
        this.log,
        [...this.patchedTargets],
      );
      this.metrics.unpatches.inc(unpatched.length);
      if (failed.length > 0) {
        // A config that names a missing binary fails every new pod on the node: keep the binary (and
        // the kubeconfig the plugin reads) for as long as any config names the plugin.
        this.log.error({ files: failed }, 'the plugin could not be removed from some configs: keeping the plugin binaries and kubeconfig');
        return { cleaned: false, unpatched, failed };
      }
      if (await this.kubeconfig.remove()) this.log.info({ file: this.config.kubeconfigName }, 'removed kubeconfig');
      const removed = await removeBinaries(this.root, this.config.binDir, this.installed);
      this.log.info({ binaries: removed }, 'removed plugin binaries');
      this.ownership.release();
      return { cleaned: true, unpatched, failed };
    } finally {
      this.phase = 'stopped';
    }
  }

  private onEvents(events: WatchEvent[]): void {
    if (this.phase === 'stopping' || this.phase === 'stopped') return;
    this.ownRenames.observe(events);
    const netDirDisk = this.netDir.disk;
    for (const event of events) {
      this.metrics.countEvent(event.kind);
      if (this.ownRenames.isOwn(event)) continue;
      if (event.kind === 'overflow') {
        this.metrics.overflows.inc();
        this.log.warn('inotify queue overflowed: rescanning');
        this.rescan('overflow');
        void this.netDir.rearm().catch(() => {});
        continue;
      }
      if (event.dir === netDirDisk) this.onNetDirEvent(event);
      this.netDir.onEvent(event);
      if (this.reconciler.targets.isTargetDir(event.dir)) this.onTargetDirEvent(event);
      if (event.dir === this.config.serviceAccountDir) void this.syncKubeconfig();
      if (event.dir === this.binDirOnDisk && (this.installed.includes(event.name) || event.name === this.plugin.type)) {
        // Someone (an older instance's cleanup during an upgrade) removed or replaced our binary: put
        // it back. (Our own install lands by a rename, which OwnRenames has already set aside.)
        if (event.kind === 'delete' || event.kind === 'moved-out' || event.kind === 'moved-in' || event.kind === 'write-closed') void this.reinstallBinaries();
      }
    }
    this.updateReadiness();
  }

  private onNetDirEvent(event: WatchEvent): void {
    if (event.kind === 'dir-gone') {
      // The watch re-resolves the path; when it finds net.d gone it logs that and calls onNetDirLost,
      // which drops the held directory.
      this.netDir.onNetDirGone();
      return;
    }
    const { name } = event;
    if (name === OWNER_FILE_NAME) {
      this.checkOwnership();
      return;
    }
    if (this.phase === 'passive') return;
    if (name === this.config.kubeconfigName && (event.kind === 'delete' || event.kind === 'moved-out')) {
      void this.syncKubeconfig();
      return;
    }
    if (this.reconciler.concerns(name) && !event.isDir) this.onConfigEvent(event);
    // A symlink target that lives in net.d under a non-config name (05-cilium.conflist-current). (An
    // indexed loop: this runs for every event, and for-of made an iterator each time.)
    const links = this.reconciler.targets.linksTo(event.dir, name);
    for (let k = 0; k < links.length; k++) this.reconciler.trigger(links[k]!);
  }

  private onConfigEvent(event: WatchEvent): void {
    const { name } = event;
    switch (event.kind) {
      case 'create':
        // A new symlink is complete; a new regular file may still be being written. Both get a pass
        // once written; a symlink has no IN_CLOSE_WRITE, so look now (a pass of a half-written file
        // only finds invalid JSON and waits for the next event).
        this.reconciler.trigger(name);
        this.triggerWhenWritten(name);
        return;
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
    if (event.kind === 'dir-gone') {
      // The directory was replaced or removed: drop the dead watch and look again (re-watched by the pass).
      void this.watcher.unwatch(event.dir);
      for (const link of links) this.reconciler.targets.remove(link);
    }
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
      // No link leads there any more: neither does a reason about its watch.
      this.readiness.block(`target-dir:${dir}`, undefined);
      this.updateReadiness();
      await this.watcher.unwatch(dir);
      return;
    }
    try {
      await this.watcher.watch(dir);
      this.readiness.block(`target-dir:${dir}`, undefined);
    } catch (err) {
      // A dangling link into a directory that does not exist yet: the resync looks again.
      if (isMissing(err)) {
        this.log.debug({ dir }, 'symlink target directory does not exist yet');
        return;
      }
      // The watch limit hit for a target's directory is a status on its configs, never a crash.
      const reason = watchFailureReason(errnoCode(err), this.root.fromDisk(dir));
      this.readiness.block(`target-dir:${dir}`, `${reason}: changes of symlink targets there are not seen`);
      this.log.error({ dir: this.root.fromDisk(dir), code: errnoCode(err) }, reason);
    }
  }

  private async onNetDirArmed(disk: string): Promise<void> {
    this.reconciler.setNetDir(disk);
    this.readiness.block('netdir', undefined);
    this.readiness.clearConfigs();
    const owner = this.ownership.currentOwner();
    // The newest instance claims the node at its first arm; later (net.d re-created) only if no other
    // live instance holds it.
    if (this.phase === 'starting' || !this.ownership.isLiveOther(owner)) {
      if (this.phase === 'starting' && this.ownership.isLiveOther(owner)) this.tookOverFrom = owner!.instance;
      this.claim();
    } else {
      this.standDown(owner!);
      return;
    }
    this.sweep(0);
    await this.syncKubeconfig();
    this.rescan('start');
  }

  private onNetDirLost(reason: string): void {
    // net.d's own IN_DELETE_SELF or its parent's IN_DELETE, whichever came first: a pass that held
    // net.d open at the rmdir delays the former until it closes the fd (inotify(7)).
    this.reconciler.netDirGone();
    this.readiness.clearConfigs();
    this.readiness.block('netdir', reason);
  }

  private claim(): void {
    try {
      this.ownership.claim();
    } catch (err) {
      // A read-only or full net.d: nothing can be chained either; say so, and the resync retries.
      this.readiness.block('owner', `cannot write the owner file: ${errnoCode(err) ?? (err as Error).message}`);
      this.log.error({ code: errnoCode(err), err: (err as Error).message }, 'cannot write the owner file in the config directory');
      return;
    }
    this.readiness.block('owner', undefined);
  }

  /** The owner file changed, or the owner we waited on is gone: stand down, take back, or re-claim. */
  private checkOwnership(): void {
    const owner = this.ownership.currentOwner();
    if (this.phase === 'active') {
      if (this.ownership.isLiveOther(owner)) this.standDown(owner!);
      // Our file was removed or replaced by something that is no live instance: claim again (what the
      // heartbeat of earlier versions did every 2 s, now only when net.d says so).
      else if (owner?.instance !== this.instance && this.netDir.state.kind === 'armed') this.claim();
    } else if (this.phase === 'passive') {
      if (!this.ownership.isLiveOther(owner)) void this.takeBack();
      else this.awaitOwnerGone(owner!);
    }
  }

  /** `owner`, just read and alive, has the node: wait for it to go. */
  private standDown(owner: Owner): void {
    this.phase = 'passive';
    this.ownership.dropLock();
    this.readiness.block('owner', `instance ${owner.instance} has taken over this node`);
    this.log.warn({ owner: owner.instance }, 'a newer instance has taken over this node: no longer patching, and no cleanup on exit');
    this.onRoleChange?.('passive');
    this.awaitOwnerGone(owner);
  }

  /**
   * Takes the node back the moment the owner dies: a blocking wait on its lock, which the kernel
   * drops with the process (SIGKILL and OOM included). An earlier version's owner holds no lock, and
   * its heartbeat is polled instead.
   */
  private awaitOwnerGone(owner: Owner): void {
    if (owner.legacy) {
      this.legacyOwnerTimer ??= this.every(LEGACY_STALE_AFTER_MS / 5, () => this.checkOwnership());
      return;
    }
    if (this.waitingOn.has(owner.ino)) return;
    const wait = this.ownership.ownerGone();
    if (wait === undefined) {
      // Gone between the two looks.
      queueMicrotask(() => this.checkOwnership());
      return;
    }
    this.waitingOn.add(wait.ino);
    void wait.gone
      .catch((err: unknown) => this.log.warn({ code: errnoCode(err), err: (err as Error).message }, 'cannot wait on the owner lock'))
      .finally(() => {
        this.waitingOn.delete(wait.ino);
        if (this.phase === 'passive') this.checkOwnership();
      });
  }

  /**
   * True when this instance took the node over from a live one at start, or another live instance
   * owns it now: either may still hold the health port we share on the host.
   */
  anotherInstanceMayHoldPort(): boolean {
    return this.tookOverFrom !== undefined || this.ownership.isLiveOther(this.ownership.currentOwner());
  }

  /** The newer instance is gone (rolled back, or killed): this one maintains the node again. */
  private async takeBack(): Promise<void> {
    if (this.phase !== 'passive') return;
    this.phase = 'active';
    clearInterval(this.legacyOwnerTimer);
    this.legacyOwnerTimer = undefined;
    this.log.warn('the instance that had taken over this node is gone: maintaining it again');
    this.onRoleChange?.('active');
    this.claim();
    await this.reinstallBinaries();
    await this.syncKubeconfig();
    this.rescan('take-back');
  }

  private rescan(reason: string): void {
    if (this.phase !== 'active' && this.phase !== 'starting') return;
    if (this.netDir.state.kind !== 'armed') return;
    this.metrics.resyncs.inc({ reason });
    clearTimeout(this.scanRetryTimer);
    this.scanRetryTimer = undefined;
    try {
      this.reconciler.scan();
    } catch (err) {
      // net.d is watched but cannot be listed: a named status and one log line per cause, never a
      // crash (this runs from timers, where a throw would end the process), and soon another try.
      const failure = `cannot list the config directory: ${errnoCode(err) ?? (err as Error).message}`;
      if (failure !== this.readiness.blocker('scan')) this.log.error({ dir: this.config.netDir, code: errnoCode(err), err: (err as Error).message }, 'cannot list the config directory: trying again');
      this.readiness.block('scan', failure);
      this.updateReadiness();
      this.scanRetryTimer = setTimeout(() => this.rescan('retry'), SCAN_RETRY_MS);
      this.scanRetryTimer.unref();
      return;
    }
    if (this.readiness.blocked('scan')) {
      this.readiness.block('scan', undefined);
      this.log.info({ dir: this.config.netDir }, 'the config directory can be listed again');
      this.updateReadiness();
    }
  }

  private sweep(minAgeMs: number): void {
    const dirs = [this.config.netDir, this.config.binDir, ...this.reconciler.targets.targetDirs().map((d) => this.root.fromDisk(d))];
    for (const hostDir of new Set(dirs)) {
      try {
        const result = withDirSync(this.root.openDir(hostDir), (dir) =>
          sweepTemps(dir, { pluginType: this.plugin.type, maxBytes: this.config.maxConfigBytes, minAgeMs }),
        );
        if (result.restored.length > 0) this.log.warn({ dir: hostDir, files: result.restored }, 'put back a newer write that a crash had left in a temp file');
        if (result.removed.length > 0) this.log.info({ dir: hostDir, files: result.removed.length }, 'removed stale temp files of earlier instances');
      } catch (err) {
        if (!isMissing(err)) this.log.warn({ dir: hostDir, code: errnoCode(err), err: (err as Error).message }, 'cannot sweep stale temp files');
      }
    }
  }

  private async resync(): Promise<void> {
    if (this.phase === 'stopping' || this.phase === 'stopped') return;
    await this.netDir.rearm().catch((err: unknown) => {
      this.log.error({ code: errnoCode(err), err: (err as Error).message }, 'cannot watch the config directory');
    });
    if (this.phase === 'passive') return;
    if (this.readiness.blocked('owner')) this.claim();
    this.sweep(SWEEP_MIN_AGE_MS);
    this.rescan('timer');
    await this.syncKubeconfig();
    await this.reinstallBinaries();
    for (const dir of this.reconciler.targets.targetDirs()) if (!this.watcher.isWatching(dir)) void this.watchTargetDir(dir, true);
  }

  private async syncKubeconfig(): Promise<void> {
    if (this.phase !== 'active' && this.phase !== 'starting') return;
    if (this.netDir.state.kind !== 'armed') return;
    this.chores.trigger('kubeconfig');
    await this.chores.drain();
  }

  private async reinstallBinaries(): Promise<void> {
    if (this.phase !== 'active' && this.phase !== 'starting') return;
    this.chores.trigger('binaries');
    await this.chores.drain();
  }

  private async writeKubeconfig(): Promise<void> {
    if ((await this.kubeconfig.sync()) !== 'written') return;
    this.metrics.kubeconfigWrites.inc();
    this.log.info({ file: this.config.kubeconfigName }, 'wrote kubeconfig');
  }

  private async checkBinaries(): Promise<void> {
    const binaries = await installBinaries(this.config.containerBinDir, this.root, this.config.binDir);
    this.installed = binaries.map((b) => b.name);
    const written = binaries.filter((b) => b.written).map((b) => b.name);
    if (written.length > 0) this.log.warn({ binaries: written }, 'plugin binaries were missing or changed: reinstalled');
    const wasMissing = this.readiness.blocked('binary');
    this.verifyPluginBinary();
    // Configs refused while the binary was not there are chained now.
    if (wasMissing && !this.readiness.blocked('binary')) this.rescan('binary');
  }

  /** After an install: the plugin's own binary is there as installed, or nothing is chained (plugin-binary.ts). */
  private verifyPluginBinary(): void {
    const problem = this.binary.installedNow();
    if (problem !== undefined && problem !== this.readiness.blocker('binary')) this.log.error({ binary: this.binary.hostPath }, problem);
    this.readiness.block('binary', problem);
  }

  /** Logs and exports readiness changes; called after events and passes. */
  updateReadiness(): void {
    if (this.phase === 'stopping' || this.phase === 'stopped') return;
    const ready = this.readiness.ready;
    if (ready === this.lastReady) return;
    this.lastReady = ready;
    this.metrics.ready.set(ready ? 1 : 0);
    if (ready) this.log.info('ready: every config is chained');
    else this.log.info({ reasons: this.readiness.report().reasons }, 'not ready');
  }
}

/** Removes the owned config files of CNI_PATCH_MODE=owned; the names removed. */
export function removeOwnedConfig(root: HostRoot, config: Config, pluginType: string): string[] {
  try {
    return withDirSync(root.openDir(config.netDir), (dir) => OwnedConfig.removeAll(dir, config.ownedConfigName, pluginType, config.maxConfigBytes));
  } catch (err) {
    if (isMissing(err)) return [];
    throw err;
  }
}
