// The files the agent keeps installed on the node (docs/design.md, Start): the plugin binaries in the host's bin dir and the
// kubeconfig in net.d, installed at start and put back whenever something removes or changes them.
//
// Token rotation and binary checks come in bursts of events: one run at a time, coalesced. The
// plugin cannot run without its binary, nor reach the API without its kubeconfig, so an install that
// fails keeps its readiness condition failing (as `check` says NOT chained without the binary) until
// one succeeds: the next event or resync tries again.
import { errnoCode } from '../../fs/errno.js';
import type { KubeconfigFile } from '../../kube/kubeconfig-file.js';
import type { WatchEventKind } from '../../watch/watcher.js';
import { CoalescingQueue, type PassRunner } from '../shared/coalescing-queue.js';
import type { Condition } from '../shared/readiness.js';
import type { ControllerDeps } from '../shared/controller-deps.js';
import { installBinaries, restoreFromSpare } from './binaries.js';
import type { PluginBinary } from './plugin-binary.js';

type InstalledFile = 'kubeconfig' | 'binaries';

export interface InstalledFilesDeps extends ControllerDeps {
  /** Written only while net.d is watched (netDirArmed): it lives there. */
  kubeconfig: KubeconfigFile;
  binary: PluginBinary;
  /** The plugin binary is back: configs refused meanwhile get a pass. */
  onBinaryBack: () => void;
  /**
   * The bin dir was moved away or removed: its watch follows the inode, not the path, so it is
   * dropped and the path resolved and watched anew (daemon/lifecycle/bin-dir-watch.ts).
   */
  rewatchBinDir: () => Promise<void>;
}

export class InstalledFiles implements PassRunner<InstalledFile> {
  /** The names of the binaries installed from CONTAINER_CNI_BIN_DIR. */
  binaryNames: string[] = [];
  private readonly conditions: Record<InstalledFile, Condition>;
  /** The plugin's own binary is on the host as installed (plugin-binary.ts). */
  private readonly pluginBinary: Condition;
  private readonly queue: CoalescingQueue<InstalledFile> = new CoalescingQueue<InstalledFile>(this);
  /** A binary was put back from its spare since the last check: passes meanwhile refused to chain. */
  private restored = false;

  constructor(private readonly deps: InstalledFilesDeps) {
    this.conditions = { kubeconfig: deps.readiness.condition('kubeconfig'), binaries: deps.readiness.condition('binaries') };
    this.pluginBinary = deps.readiness.condition('plugin-binary');
  }

  /** The queue's: the kubeconfig written, or the binaries checked and reinstalled where they changed. */
  async runPass(file: InstalledFile): Promise<void> {
    await (file === 'kubeconfig' ? this.writeKubeconfig() : this.checkBinaries());
    if (this.conditions[file].failing) {
      this.conditions[file].clear();
      this.deps.onConditionChange();
    }
  }

  /** The queue's: the write or the reinstall failed; its condition says why until one succeeds. */
  passFailed(file: InstalledFile, err: unknown): void {
    const code = errnoCode(err) ?? (err as Error).message;
    this.conditions[file].set(file === 'kubeconfig' ? `cannot write the kubeconfig: ${code}` : `cannot install the plugin binaries: ${code}`);
    this.deps.log.error({ code: errnoCode(err), err: (err as Error).message }, file === 'kubeconfig' ? 'writing kubeconfig failed' : 'reinstalling plugin binaries failed');
    this.deps.onConditionChange();
  }

  /** Start step: copy the binaries; nothing is chained unless the plugin's own is there. */
  async installAtStart(): Promise<void> {
    const { config, root, log } = this.deps;
    const binaries = await installBinaries(config.containerBinDir, root, config.binDir);
    this.binaryNames = binaries.map((b) => b.name);
    log.info({ dir: config.binDir, binaries: binaries.map((b) => `${b.name}${b.written ? '' : ' (unchanged)'}`) }, 'installed plugin binaries');
    this.verifyPluginBinary();
  }

  /** Writes the kubeconfig now (start, before net.d is watched). */
  async writeKubeconfigNow(): Promise<void> {
    this.queue.trigger('kubeconfig');
    await this.queue.drain();
  }

  async syncKubeconfig(): Promise<void> {
    if (!this.deps.phase.maintaining || !this.deps.netDirArmed()) return;
    await this.writeKubeconfigNow();
  }

  async reinstallBinaries(): Promise<void> {
    if (!this.deps.phase.maintaining) return;
    this.queue.trigger('binaries');
    await this.queue.drain();
  }

  /**
   * An event of the bin dir. Any of them means the plugin binary is looked at again before the next
   * chain (plugin-binary.ts). One that removed or replaced a binary of ours (an older instance's
   * cleanup during an upgrade) puts it back; our own install lands by a rename, which OwnRenames has
   * set aside before this.
   */
  onBinDirEvent(kind: WatchEventKind, name: string): void {
    this.deps.binary.lookAgain();
    if (kind === 'dir-gone') {
      // Whatever is at the path now gets our binaries; until it is watched, every pass looks.
      void this.deps.rewatchBinDir().then(() => this.reinstallBinaries());
      return;
    }
    if (!this.isOurBinary(name)) return;
    // Removed under us (another installer's stop): the spare goes back at once, before any pass runs.
    if ((kind === 'delete' || kind === 'moved-out') && this.deps.phase.maintaining && restoreFromSpare(this.deps.root, this.deps.config.binDir, name)) {
      // The very inode installed, its ctime new with the rename: recorded again, and what a pass
      // refused meanwhile is chained now, without waiting for the check below.
      this.restored = true;
      this.verifyPluginBinary();
      if (!this.pluginBinary.failing) this.deps.onBinaryBack();
    }
    if (kind === 'delete' || kind === 'moved-out' || kind === 'moved-in' || kind === 'write-closed') void this.reinstallBinaries();
  }

  /** The kernel dropped events: whatever happened in the bin dir went unseen. */
  binDirEventsLost(): void {
    this.deps.binary.lookAgain();
  }

  /** True for an entry of the bin dir that is ours: one we installed, or the plugin's own. */
  isOurBinary(name: string): boolean {
    return this.binaryNames.includes(name) || name === this.deps.binary.type;
  }

  drain(): Promise<void> {
    return this.queue.drain();
  }

  dispose(): void {
    this.conditions.kubeconfig.clear();
    this.conditions.binaries.clear();
    this.pluginBinary.clear();
  }

  private async writeKubeconfig(): Promise<void> {
    if ((await this.deps.kubeconfig.sync()) !== 'written') return;
    this.deps.metrics.kubeconfigWrites.inc();
    this.deps.log.info({ file: this.deps.config.kubeconfigName }, 'wrote kubeconfig');
  }

  private async checkBinaries(): Promise<void> {
    const { config, root, log } = this.deps;
    const binaries = await installBinaries(config.containerBinDir, root, config.binDir);
    this.binaryNames = binaries.map((b) => b.name);
    const written = binaries.filter((b) => b.written).map((b) => b.name);
    if (written.length > 0) log.warn({ binaries: written }, 'plugin binaries were missing or changed: reinstalled');
    const wasMissing = this.pluginBinary.failing;
    const restored = this.restored;
    this.restored = false;
    this.verifyPluginBinary();
    // Configs refused while the binary was not there are chained now: refused by the install's own
    // check, or by a pass that found the binary missing or changed before this reinstall wrote it
    // (or put it back from its spare: the same inode, but a new ctime).
    if (!this.pluginBinary.failing && (wasMissing || restored || written.includes(this.deps.binary.type))) this.deps.onBinaryBack();
  }

  /** After an install: the plugin's own binary is there as installed, or nothing is chained (plugin-binary.ts). */
  private verifyPluginBinary(): void {
    const problem = this.deps.binary.installedNow();
    if (problem !== undefined && problem !== this.pluginBinary.reason) this.deps.log.error({ binary: this.deps.binary.hostPath }, problem);
    this.pluginBinary.set(problem);
  }
}
