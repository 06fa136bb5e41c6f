// The `run` lifecycle (docs/design.md, Start): an install flow of numbered steps, then controllers
// that keep the node as installed, and on stop the teardown, unless a newer instance owns the node
// (stop/stop.ts). The controllers, each in its own file and owning its readiness conditions, are
// net-dir-watch (net-dir), ownership-role (owner), installed-files (binaries, plugin-binary,
// kubeconfig), node-scan (scan), target-dir-watches (target-dir:D), the event router, and the config
// keeper (reconciler.ts or owned-config.ts). This file wires them together and holds the one
// explicit phase (phase.ts).
import { existsSync } from 'node:fs';
import type { Config } from '../../config.js';
import type { ChainedPlugin } from '../../cni/chained-plugin.js';
import { errnoCode } from '../../fs/errno.js';
import { HostRoot } from '../../fs/host-root.js';
import { KubeconfigFile } from '../../kube/kubeconfig-file.js';
import type { Logger } from '../../log.js';
import { createWatcher } from '../../watch/create-watcher.js';
import type { Watcher } from '../../watch/watcher.js';
import type { Metrics } from '../shared/metrics.js';
import type { ConfigKeeper } from '../keepers/config-keeper.js';
import { OwnedConfig } from '../keepers/owned-config.js';
import { Readiness, type Condition } from '../shared/readiness.js';
import { Reconciler } from '../keepers/reconciler.js';
import { TargetDirWatches } from './target-dir-watches.js';
import { InstalledFiles } from '../node/installed-files.js';
import { PluginBinary } from '../node/plugin-binary.js';
import { BinDirWatch } from './bin-dir-watch.js';
import { ChainedTargets } from '../node/chained-targets.js';
import type { ControllerDeps } from '../shared/controller-deps.js';
import { EventRouter } from './event-router.js';
import { NetDirWatch } from './net-dir-watch.js';
import { NodeScan } from './node-scan.js';
import { Ownership } from './ownership.js';
import { OwnershipRole } from './ownership-role.js';
import { PhaseState } from '../shared/phase.js';
import { ReadinessReporter } from './readiness-reporter.js';
import { MemoryReturn } from './memory-return.js';
import { leaveNode, stopVerdict, type Stopping, type StopResult } from '../stop/stop.js';
import { NodeCredential } from './node-credential.js';
import { runStep } from './start-step.js';
import { refreshNode, type RefreshTrigger } from './node-refresh.js';
import { markByTriggers, optimizeHeapForSize } from '../../memory-flags.js';
import type { Probes } from '../http/probes.js';

export { StartStepError } from './start-step.js';
export type { StopResult } from '../stop/stop.js';

export class Daemon {
  readonly root: HostRoot;
  readonly readiness = new Readiness();
  private readonly phaseState = new PhaseState();
  private readonly lifecycle: Condition;
  private readonly watcher: Watcher;
  private readonly netDir: NetDirWatch;
  /** Keeps the configs chained: in place (Reconciler) or through the agent's own file (OwnedConfig). */
  private readonly keeper: ConfigKeeper;
  private readonly ownership: Ownership;
  private readonly kubeconfig: KubeconfigFile;
  private readonly role: OwnershipRole;
  private readonly installed: InstalledFiles;
  private readonly scan: NodeScan;
  private readonly targetDirs: TargetDirWatches;
  private readonly router: EventRouter;
  private readonly binDir: BinDirWatch;
  /** Every symlink target and delegate we ever patched (host paths), recorded in net.d. */
  private readonly chainedTargets: ChainedTargets;
  private resyncTimer: NodeJS.Timeout | undefined;
  /** Freed memory back to the kernel after start and after bursts (memory-return.ts). */
  private readonly memory = new MemoryReturn();
  /** Readiness changes to the log, the metrics and the API server (readiness-reporter.ts). */
  private readonly reporter: ReadinessReporter;
  /** The kubeconfig's token and the stop's question, both outliving this pod (node-credential.ts). */
  private readonly credential: NodeCredential;

  constructor(
    private readonly config: Config,
    private readonly plugin: ChainedPlugin,
    private readonly log: Logger,
    private readonly metrics: Metrics,
    /** The probes' ports, served at step 5 (the CLI's; none in process). */
    private readonly probes?: Probes,
  ) {
    this.root = new HostRoot(config.hostRoot);
    this.lifecycle = this.readiness.condition('lifecycle');
    this.lifecycle.set('starting');
    this.credential = new NodeCredential(config, log, () => void this.installed.syncKubeconfig());
    this.reporter = new ReadinessReporter(config, this.credential.credentials, this.readiness, this.lifecycle, this.phaseState, log, metrics);
    const onConditionChange = (): void => this.updateReadiness();
    const phase = this.phaseState;
    const netDirArmed = (): boolean => this.netDir.armed;
    this.ownership = new Ownership(this.root, config.netDir);
    this.kubeconfig = new KubeconfigFile(config, this.root, this.credential.credentials);
    this.chainedTargets = new ChainedTargets(this.root, config.netDir, log);
    const binary = new PluginBinary(this.root, config.binDir, config.containerBinDir, plugin.type, () => this.binDir.trusted);
    this.watcher = createWatcher(
      config.backend,
      (events) => this.router.onEvents(events),
      (error) => {
        this.log.error({ err: error.message }, 'watcher error: rescanning');
        this.scan.rescan('watcher-error');
      },
    );
    this.binDir = new BinDirWatch(this.root, config.binDir, this.watcher, log);
    this.netDir = new NetDirWatch(this.root, config.netDir, this.watcher, log, this.readiness.condition('net-dir'), (disk) => this.onNetDirArmed(disk), () => this.onNetDirLost());
    this.targetDirs = new TargetDirWatches(this.root, this.watcher, this.readiness, log, onConditionChange);
    const deps = {
      config, plugin, root: this.root, log, metrics, readiness: this.readiness, binary,
      isActive: () => phase.maintaining,
      onTargetDir: (dir: string, used: boolean) => void this.targetDirs.update(dir, used),
      onPassDone: () => {
        this.memory.passDone();
        this.updateReadiness();
      },
      recordTarget: (hostPath: string) => this.chainedTargets.add(hostPath),
    };
    const netDirOnDisk = this.root.toDisk(config.netDir);
    this.keeper = config.mode === 'owned' ? new OwnedConfig(deps, netDirOnDisk) : new Reconciler(deps, netDirOnDisk);
    const common: ControllerDeps = { config, root: this.root, log, metrics, readiness: this.readiness, phase, netDirArmed, onConditionChange };
    this.scan = new NodeScan({ ...common, pluginType: plugin.type, keeper: this.keeper });
    this.installed = new InstalledFiles({ ...common, kubeconfig: this.kubeconfig, binary, onBinaryBack: () => this.scan.rescan('binary'), rewatchBinDir: () => this.binDir.renew() });
    this.role = new OwnershipRole({
      ownership: this.ownership,
      phase,
      log,
      readiness: this.readiness,
      netDirArmed,
      // On the host's network every instance shares the probes' ports: a newer one that takes the
      // node over gets them, and gives them back with the node.
      onRoleChange: (role) => (role === 'passive' ? void this.probes?.standDown() : this.probes?.takeBack()),
      onTakeBack: () => this.refreshNode('take-back'),
    });
    this.router = new EventRouter({
      config,
      log,
      metrics,
      phase,
      watcher: this.watcher,
      netDir: this.netDir,
      keeper: this.keeper,
      role: this.role,
      installed: this.installed,
      scan: this.scan,
      binDirOnDisk: () => this.binDir.disk,
      onBatchDone: onConditionChange,
    });
  }

  get instance(): string {
    return this.ownership.record.instance;
  }

  /** For /healthz: the watch on net.d (or on the path to it) is live, and we are not stopping. */
  private get watching(): boolean {
    return this.phaseState.running && this.netDir.live;
  }

  /**
   * The install flow. Each step runs once, in order; a step that throws ends the start with its
   * label (never "running" half-installed: the CLI's stop undoes what the steps before it did).
   */
  async start(): Promise<void> {
    // 1. Configuration the environment check cannot see: a token without KUBERNETES_SERVICE_HOST.
    await runStep('1. check the kubeconfig inputs', () => {
      this.kubeconfig.render();
      if (!this.root.kernelConfined) {
        this.log.warn('openat2 is not available (Linux before 5.6): symlinks are resolved inside the host root in userland, which a concurrent directory swap can race');
      }
    });
    // 2. Binaries before any config names them.
    await runStep('2. install the plugin binaries', async () => {
      this.binDir.ensure();
      await this.installed.installAtStart();
    });
    // 3. Stranded temp files of earlier instances, before anything reads the configs (a newer write
    //    displaced by a crash mid-exchange goes back first); then the kubeconfig, if net.d exists.
    await runStep('3. sweep temps and write the kubeconfig', async () => {
      this.scan.sweep(0);
      // A token bound to this node that an earlier agent left there is carried on: nothing rewritten.
      this.credential.adopt(this.kubeconfig.tokenOnDisk());
      if (this.root.dirOnDisk(this.config.netDir) !== undefined) await this.installed.writeKubeconfigNow();
    });
    // 4. Watches: the service-account dir, the bin dir, then net.d and the path to it, whose arming
    //    claims the node, writes the kubeconfig and scans. A watch the kernel refuses here (inotify
    //    limits) ends the start. (@parcel/watcher answers a missing directory with EBADF, not
    //    ENOENT: look first.)
    await runStep('4. watch net.d, the bin dir and the token', async () => {
      if (existsSync(this.config.serviceAccountDir)) await this.watcher.watch(this.config.serviceAccountDir);
      await this.binDir.watch();
      await this.netDir.rearm();
    });
    // Writes go to the pool at the end of the loop turn (fs/replace-batches.ts): what follows (the
    // probes' import and listen, ~13 ms) waits until they are on their way.
    await new Promise((resolve) => setImmediate(resolve));
    await optimizeHeapForSize();
    if (this.config.resyncIntervalMs > 0) {
      this.resyncTimer = setInterval(() => void this.resync(), this.config.resyncIntervalMs);
      this.resyncTimer.unref();
    }
    // 5. The probes (a port held by anything but an instance that owns the node is a configuration
    //    error); a newer instance that took the node over meanwhile gets them at once.
    await runStep('5. serve the probes', async () => {
      if (this.phaseState.ending) return;
      await this.probes?.serve({ alive: () => this.watching, readiness: () => this.readiness.report(), ownerMayHoldPort: () => this.role.anotherInstanceMayHoldPort() });
      if (this.phaseState.standingBy) await this.probes?.standDown();
    });
    // 6. Ready once the first passes are done (the readiness report also needs every config chained).
    await runStep('6. chain every config', () => this.keeper.drain());
    this.phaseState.started();
    this.lifecycle.clear();
    this.updateReadiness();
    this.memory.afterStart();
    // Off the hot path: the pod's DaemonSet for the stop, and a token bound to this node.
    void this.credential.start().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'cannot talk to the API server about this node\'s credential'));
    await markByTriggers();
  }

  /** Stops watching; unless another instance owns the node, removes everything `run` installed. */
  async stop(): Promise<StopResult> {
    if (this.phaseState.ending) return { cleaned: false, unpatched: [], failed: [] };
    const stopping = this.stopping();
    // Asked at once, while the watches close and the passes drain: the API is slow at worst. A standby
    // never maintained the node: it has nothing to decide.
    const verdict = this.phaseState.standingBy
      ? undefined
      : stopVerdict(stopping).catch((err: unknown) => ({ kind: 'keep' as const, reason: `the stop could not be decided (${(err as Error).message}): keeping the node chained` }));
    this.phaseState.stopping();
    // Unready from here on: the configs are about to be unchained.
    this.lifecycle.set('stopping');
    clearInterval(this.resyncTimer);
    this.memory.dispose();
    this.router.dispose();
    this.role.dispose();
    this.scan.dispose();
    this.keeper.stop();
    await this.netDir.close();
    await this.watcher.close();
    await Promise.all([this.keeper.drain(), this.installed.drain()]);
    await this.chainedTargets.drain();
    await this.keeper.dispose();
    this.installed.dispose();
    this.targetDirs.dispose();
    try {
      return await leaveNode(stopping, verdict);
    } finally {
      this.credential.dispose();
      this.reporter.dispose();
      this.phaseState.stopped();
      // Last: the kubelet's probes are answered (not ready) for as long as the stop runs.
      await this.probes?.close();
    }
  }

  /** What the stop (stop/stop.ts) needs of this daemon. */
  private stopping(): Stopping {
    return {
      config: this.config,
      pluginType: this.plugin.type,
      root: this.root,
      log: this.log,
      metrics: this.metrics,
      role: this.role,
      ownership: this.ownership,
      stopFacts: (ms) => this.credential.stopFacts(ms),
      announceUninstall: (reason, ms) => this.reporter.uninstalling(reason, ms),
      binaryNames: this.installed.binaryNames,
      chainedTargets: () => this.chainedTargets.all,
      kubeconfig: this.kubeconfig,
    };
  }

  private async onNetDirArmed(disk: string): Promise<void> {
    this.keeper.setNetDir(disk);
    this.keeper.clearStatuses();
    if (!this.role.onNetDirArmed()) return;
    await this.refreshNode('net-dir');
  }

  private onNetDirLost(): void {
    // net.d's own IN_DELETE_SELF or its parent's IN_DELETE, whichever came first: a pass that held
    // net.d open at the rmdir delays the former until it closes the fd (inotify(7)).
    this.keeper.netDirGone();
    this.keeper.clearStatuses();
  }

  private async resync(): Promise<void> {
    if (this.phaseState.ending) return;
    await this.netDir.rearm().catch((err: unknown) => {
      this.log.error({ code: errnoCode(err), err: (err as Error).message }, 'cannot watch the config directory');
    });
    if (this.phaseState.standingBy) return;
    this.role.retryClaim();
    await this.refreshNode('timer');
  }

  private refreshNode(trigger: RefreshTrigger): Promise<void> {
    const { binDir, installed, scan, keeper, targetDirs } = this;
    return refreshNode({ binDir, installed, scan, keeper, targetDirs }, trigger);
  }

  /** Logs and exports readiness changes; called after events and passes. */
  private updateReadiness = (): void => this.reporter.update();
}
