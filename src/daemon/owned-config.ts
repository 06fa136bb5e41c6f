// CNI_PATCH_MODE=owned (DESIGN §1): the primary's file is never touched. The agent keeps its own file
// in net.d, named to be loaded first, holding the primary's loaded config with the plugin appended
// (byte-exact, as an in-place patch would be). A primary that rewrites its file then never exposes an
// unchained config: the runtime keeps loading ours, which follows the primary within milliseconds,
// and disappears the moment the primary's config does (or the runtime would keep wiring pods into a
// dead network).
//
// The primary is the first config libcni would load once ours is set aside; Multus' own
// `00-multus.conf` is no primary (Multus takes the first other config as its default network, which
// is why the owned name sorts after it).
import { planPatch } from '../cni/conflist.js';
import { compareNames, isLibcniName, libcniOrder } from '../cni/names.js';
import { writeFileAtomic } from '../fs/atomic-write.js';
import { readEntry } from '../fs/bounded-read.js';
import { sha256 } from '../fs/content-hash.js';
import type { Dir } from '../fs/dir.js';
import { errnoCode, isMissing } from '../fs/errno.js';
import { CoalescingQueue } from './coalescing-queue.js';
import type { KeeperDeps } from './config-keeper.js';
import { openLinkTarget, SymlinkTargets } from './symlink-targets.js';


const KEY = 'owned';

function isMultus(name: string): boolean {
  return name.startsWith('00-multus');
}


export class OwnedConfig {
  readonly targets: SymlinkTargets;
  private readonly queue: CoalescingQueue;
  private lastProblem: string | undefined;

  constructor(
    private readonly deps: KeeperDeps,
    private netDirOnDisk: string,
  ) {
    this.targets = new SymlinkTargets(netDirOnDisk, deps.onTargetDir);
    this.queue = new CoalescingQueue(
      () => this.sync().finally(() => deps.onPassDone?.()),
      (_key, error) => {
        const err = error as NodeJS.ErrnoException;
        this.deps.metrics.writeErrors.inc({ code: err.code ?? 'UNKNOWN' });
        this.deps.readiness.set(this.name, 'error', `${err.code ?? 'UNKNOWN'}: ${err.message}`);
        this.deps.log.error({ file: this.name, code: err.code, err: err.message }, 'writing the owned config failed');
      },
      1,
    );
  }

  get name(): string {
    return this.deps.config.ownedConfigName;
  }

  setNetDir(netDirOnDisk: string): void {
    this.netDirOnDisk = netDirOnDisk;
    this.targets.setNetDir(netDirOnDisk);
  }

  netDirGone(): void {
    // Every pass opens net.d by its path: no handle outlives it.
  }

  /** Every config event matters: any of them may change which file is the primary, or its content. */
  concerns(name: string): boolean {
    return !name.startsWith('.') && isLibcniName(name);
  }

  trigger(_name?: string): void {
    this.queue.trigger(KEY);
  }

  scan(): number {
    this.trigger();
    return 1;
  }

  async drain(): Promise<void> {
    await this.queue.drain();
  }

  stop(): void {}

  async dispose(): Promise<void> {}

  /** Removes the owned file (shutdown, uninstall). True when there was one. */
  static remove(dir: Dir, name: string): boolean {
    try {
      dir.unlink(name);
      return true;
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return false;
      throw err;
    }
  }

  private problem(status: 'invalid' | 'dangling' | 'loop' | 'not-regular' | 'too-large' | 'shadowed', detail: string): void {
    const { readiness, log } = this.deps;
    readiness.set(this.name, status === 'shadowed' ? 'error' : status, detail);
    const key = `${status}: ${detail}`;
    if (this.lastProblem === key) return;
    this.lastProblem = key;
    log.warn({ file: this.name, status, detail }, 'owned config not in place');
  }

  private async sync(): Promise<void> {
    if (!this.deps.isActive()) return;
    let dir: Dir;
    try {
      dir = this.deps.root.openDir(this.deps.config.netDir, this.netDirOnDisk);
    } catch (err) {
      if (isMissing(err)) return;
      throw err;
    }
    try {
      await this.syncIn(dir);
    } finally {
      dir.close();
    }
  }

  private async syncIn(dir: Dir): Promise<void> {
    const { config, root, readiness } = this.deps;
    readiness.clearConfigs();
    const names = dir.list().filter((n) => isLibcniName(n) && !n.startsWith('.'));
    const candidates = libcniOrder(names.filter((n) => n !== this.name && !isMultus(n))).filter((n) => {
      const st = dir.lstat(n);
      return st !== undefined && (st.isFile() || st.isSymbolicLink());
    });
    const primary = candidates[0];
    if (primary === undefined) {
      // No primary network: an owned copy would wire pods into a network that no longer exists.
      if (OwnedConfig.remove(dir, this.name)) this.deps.log.warn({ file: this.name }, 'the primary config is gone: removed the owned config');
      this.targets.remove(KEY);
      return;
    }
    // The runtime loads the first libcni name: ours must sort before the primary (and before anything
    // else that is not Multus).
    const before = libcniOrder(names.filter((n) => n !== this.name && !isMultus(n) && compareNames(n, this.name) < 0));
    if (before.length > 0) {
      this.problem('shadowed', `${before[0]} sorts before ${this.name}: the runtime would not load the owned config first (set CNI_OWNED_CONFIG_NAME)`);
    }

    // The primary's content, through its symlink if it is one (resolved inside the host root).
    let source: { dir: Dir; name: string } = { dir, name: primary };
    const link = dir.lstat(primary)!;
    let targetDir: Dir | undefined;
    if (link.isSymbolicLink()) {
      const target = openLinkTarget(root, config.netDir, primary, this.targets, KEY);
      if (!target.ok) return this.problem(target.status, `primary ${primary}: ${target.detail}`);
      targetDir = target.dir;
      source = { dir: target.dir, name: target.name };
    } else {
      this.targets.remove(KEY);
    }
    try {
      const read = readEntry(source.dir, source.name, config.maxConfigBytes);
      if (read.kind === 'too-large') return this.problem('too-large', `primary ${primary}: ${read.size} bytes`);
      if (read.kind !== 'file') return this.problem('not-regular', `primary ${primary} is not a regular file`);
      const plan = planPatch(read.bytes, this.deps.plugin);
      // A primary that already holds our plugin (left by in-place mode) is its own chained copy.
      const bytes = plan.action === 'write' ? plan.bytes : plan.action === 'none' ? read.bytes : undefined;
      if (bytes === undefined) {
        // Half-written or broken: the last good copy stays until the write that completes it.
        return this.problem('invalid', `primary ${primary}: ${(plan as { reason: string }).reason}`);
      }
      const digest = sha256(bytes);
      const current = readEntry(dir, this.name, config.maxConfigBytes);
      if (current.kind !== 'file' || sha256(current.bytes) !== digest) {
        await writeFileAtomic(dir, this.name, bytes, { mode: 0o644 });
        this.deps.metrics.patches.inc();
        this.deps.log.info({ file: this.name, primary }, 'owned config follows the primary');
      }
      if (before.length === 0) {
        readiness.set(this.name, 'chained');
        this.lastProblem = undefined;
      }
    } finally {
      targetDir?.close();
    }
  }
}
