// CNI_PATCH_MODE=owned (docs/design.md, "Owned mode"): the primary's file is never touched. The agent keeps its own file
// in net.d, named to be loaded first, holding the primary's loaded config with the plugin appended
// (byte-exact, as an in-place patch would be). A primary that rewrites its file then never exposes an
// unchained config: the runtime keeps loading ours, which follows the primary within milliseconds,
// and disappears the moment the primary's config does (or the runtime would keep wiring pods into a
// dead network).
//
// - The primary is the first config libcni would load, once our copies and meta-plugin configs
//   (Multus) are set aside.
// - Our copy is named after it (names.ts ownedNameFor: `10-calico.conflist` gets
//   `10-calico-linkerd-cni.conflist`), so it sorts right before the primary and after a meta-plugin's
//   config, whatever the primary is called; CNI_OWNED_CONFIG_NAME names it instead when set.
// - The copy carries the primary's mode, owner and xattrs (POSIX ACLs, SELinux labels): a 0600 Calico
//   config is never copied world-readable.
// - A meta-plugin config that the runtime loads first (Multus) is never copied: its embedded
//   delegate is chained in place, as in-place mode does, and a delegate named by path must be our
//   copy, or the pods Multus wires are not meshed (not ready, saying how to fix it).
// - A primary that removes, renames or reverts our copy within milliseconds of each write (Cilium's
//   cni.exclusive renames every other config to `.cilium_bak`) is a fight: the copy is written at the
//   fight rule's backoff rate, and readiness names the cause and the fix.
import { planPatch, PLUGIN_ALONE } from '../../cni/conflist.js';
import { isLibcniName, isOwnedCopyName, libcniReading, ownedNameFor } from '../../cni/names.js';
import { loadOrder, primaryConfig, type ConfigEntry } from '../../cni/runtime-load.js';
import { NAME_MAX } from '../../fs/temp-names.js';
import { writeFileAtomic } from '../../fs/atomic-write.js';
import { ownerOf, readEntry, type EntryRead, type FileOwner } from '../../fs/bounded-read.js';
import { sha256 } from '../../fs/content-hash.js';
import type { Dir } from '../../fs/dir.js';
import { isMissing } from '../../fs/errno.js';
import { CoalescingQueue, type PassRunner } from '../shared/coalescing-queue.js';
import { OWNED_WORDS } from './book-words.js';
import { ConfigBook } from './config-book.js';
import type { ConfigKeeper, KeeperDeps } from './config-keeper.js';
import { holdsPlugin, removeOwnedCopies } from './owned-copies.js';
import { isMeta, keepMeta } from './owned-meta.js';
import { placeOwnedCopy } from './owned-placement.js';
import { STALE_WRITE, problem, written, type PassOutcome } from './pass-outcome.js';
import { openLinkTarget, SymlinkTargets } from './symlink-targets.js';
import { monotonicMs } from '../../monotonic-ms.js';

// The owned keeper has one job, so one key for its queue; the primary's symlink (if it is one) is
// tracked under a name of its own; a failure before the owned file has a name is reported under one.
const SYNC = 'sync';
const PRIMARY_LINK = 'primary';
const UNNAMED = 'owned';

/** A config the runtime may load, as one sync sees it. */
interface Listed extends ConfigEntry {
  read: EntryRead | undefined; // undefined for a symlink (read through its target when needed)
}

export class OwnedConfig implements ConfigKeeper, PassRunner<string> {
  readonly targets: SymlinkTargets;
  private readonly queue: CoalescingQueue;
  /** Per config its status, logged problem and retry; for the copy, our last write and the fight state. */
  private readonly book: ConfigBook;
  /** The copy's name in the last sync (for shutdown and uninstall). */
  private current: string | undefined;

  constructor(
    private readonly deps: KeeperDeps,
    private netDirOnDisk: string,
  ) {
    this.targets = new SymlinkTargets(netDirOnDisk, deps.onTargetDir);
    this.book = new ConfigBook({ ...deps, now: deps.now ?? monotonicMs }, OWNED_WORDS, this);
    this.queue = new CoalescingQueue(this, 1);
  }

  targetDirGone(dir: string): readonly string[] {
    return this.targets.dropDir(dir);
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
    this.queue.trigger(SYNC);
  }

  scan(): number {
    this.trigger();
    return 1;
  }

  async drain(): Promise<void> {
    await this.queue.drain();
  }

  stop(): void {
    this.book.stop();
  }

  async dispose(): Promise<void> {}

  /** Every config status dropped: net.d was re-armed or lost, and the next sync sets them again. */
  clearStatuses(): void {
    this.book.clear();
  }

  /** The queue's: one sync (its one key). */
  async runPass(): Promise<void> {
    try {
      await this.sync();
    } finally {
      this.deps.onPassDone?.();
    }
  }

  /** The queue's: a sync threw; reported under the copy's name, or under UNNAMED before it has one. */
  passFailed(_key: string, error: unknown): void {
    this.book.failed(this.current ?? UNNAMED, error);
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
    // Each sync reports every config anew; what it does not report goes when it ends (config-book.ts).
    this.book.beginRound();
    try {
      await this.keepCopy(dir);
    } finally {
      this.book.endRound();
    }
  }

  /** One sync: the copy follows the primary; every config it concerns gets its status. */
  private async keepCopy(dir: Dir): Promise<void> {
    const { config, plugin } = this.deps;
    const configured = config.ownedConfigName;
    const names = dir.list().filter((n) => isLibcniName(n) && !n.startsWith('.'));
    if (configured !== undefined && names.includes(configured) && !holdsPlugin(dir, configured, plugin.type, config.maxConfigBytes)) {
      // The operator named a file that is somebody else's config: never written over, never removed.
      return this.book.apply(configured, problem('conflict', `CNI_OWNED_CONFIG_NAME names ${configured}, an existing config that is not the agent's: it is left as it is; choose a name no other config has`));
    }
    const isCopy = (n: string) => n === configured || isOwnedCopyName(n, plugin.type);
    // Configs in libcni order, our copies set aside; regular files and links only (libcni skips the rest).
    const entries: Listed[] = [];
    for (const name of names) {
      if (isCopy(name)) continue;
      const st = dir.lstat(name);
      if (st === undefined || !(st.isFile() || st.isSymbolicLink())) continue;
      entries.push({ name, kind: st.isFile() ? 'file' : 'symlink', read: st.isFile() ? readEntry(dir, name, config.maxConfigBytes, { xattrs: true }) : undefined });
    }
    const listed = loadOrder(entries);
    const metas = listed.filter((c) => c.read?.kind === 'file' && isMeta(c.read.bytes));
    const primary = primaryConfig(listed, (c) => metas.includes(c));
    if (primary === undefined) {
      // No primary network: an owned copy would wire pods into a network that no longer exists.
      for (const removed of removeOwnedCopies(dir, configured, plugin.type, config.maxConfigBytes)) {
        this.deps.log.warn({ file: removed }, 'the primary config is gone: removed the owned config');
      }
      this.targets.remove(PRIMARY_LINK);
      this.current = undefined;
      return;
    }
    const ownedName = configured ?? ownedNameFor(primary.name, plugin.type);
    this.current = ownedName;
    // Copies of an earlier primary (or under a name CNI_OWNED_CONFIG_NAME gave before) go: the runtime must load one.
    for (const stale of removeOwnedCopies(dir, configured, plugin.type, config.maxConfigBytes, ownedName)) {
      this.deps.log.info({ file: stale, now: ownedName }, 'removed an owned copy of an earlier primary');
    }
    if (Buffer.byteLength(ownedName) > NAME_MAX) {
      return this.book.apply(ownedName.slice(0, 64), problem('error', `the owned copy of ${primary.name} would need a name over ${NAME_MAX} bytes: set CNI_OWNED_CONFIG_NAME`));
    }

    const place = placeOwnedCopy(listed, (c) => metas.includes(c), primary.name, ownedName);
    // A meta-plugin the runtime loads before our copy runs its delegate, not our copy.
    for (const meta of place.metasBefore) {
      this.book.apply(meta.name, await keepMeta(this.deps, dir, meta.name, meta.read as Extract<EntryRead, { kind: 'file' }>, ownedName));
    }
    if (place.bypasses !== undefined) {
      return this.book.apply(ownedName, problem('error', `${ownedName} would sort before the meta-plugin config ${place.bypasses.name} and bypass it: set CNI_OWNED_CONFIG_NAME`));
    }
    const outcome = await this.writeCopy(dir, ownedName, primary);
    if (place.shadowedBy === undefined || outcome.kind !== 'written') return this.book.apply(ownedName, outcome);
    // A shadowed copy in place is still not loaded: the problem stays, its write recorded all the same.
    const detail = `${place.shadowedBy.name} sorts before ${ownedName}: the runtime would not load the owned config first (set CNI_OWNED_CONFIG_NAME)`;
    this.book.apply(ownedName, outcome.landed === undefined ? problem('error', detail) : { kind: 'problem', status: 'error', detail, landed: outcome.landed });
  }

  /** The primary's copy with the plugin appended, written unless it is in place as it should be. */
  private async writeCopy(dir: Dir, ownedName: string, primary: Listed): Promise<PassOutcome> {
    const copy = this.copyOfPrimary(dir, ownedName, primary);
    if ('kind' in copy) return copy;
    const { bytes, owner } = copy;
    // Never chain without the plugin's binary (plugin-binary.ts).
    const noBinary = this.deps.binary.problem();
    if (noBinary !== undefined) return problem('no-binary', noBinary);

    const digest = sha256(bytes);
    const current = readEntry(dir, ownedName, this.deps.config.maxConfigBytes);
    const currentDigest = current.kind === 'file' ? sha256(current.bytes) : undefined;
    if (currentDigest === digest && current.kind === 'file' && sameOwner(current.stat, owner)) return written(ownedName);
    // Our copy is missing or not what we wrote: when we wrote it moments ago, somebody reverted it in
    // reaction to our write (a fight).
    const record = this.book.file(ownedName);
    const reverted = record !== undefined && !(currentDigest !== undefined && this.book.holdsOurWrite(record, currentDigest));
    const backoff = this.book.fightRule(record, reverted);
    if (backoff !== undefined) return backoff;
    const result = await writeFileAtomic(dir, ownedName, bytes, { ...owner, noReplace: current.kind === 'missing' });
    if (result === 'stale') return STALE_WRITE; // something appeared under our name meanwhile: look again
    // The book records it, counts it and says it (config-book.ts).
    return { kind: 'written', fileKey: ownedName, landed: { name: ownedName, digest, since: undefined, target: undefined, spare: false } };
  }

  /** The primary's content with the plugin appended, and the owner its copy gets; or why there is none. */
  private copyOfPrimary(dir: Dir, ownedName: string, primary: Listed): { bytes: Buffer; owner: FileOwner } | PassOutcome {
    const { config, root } = this.deps;
    let read = primary.read;
    let targetDir: Dir | undefined;
    if (read === undefined) {
      // A symlinked primary: read through its target, resolved inside the host root.
      const target = openLinkTarget(root, config.netDir, primary.name, this.targets, PRIMARY_LINK);
      if (!target.ok) return problem(target.status, `primary ${primary.name}: ${target.detail}`);
      targetDir = target.dir;
      read = readEntry(target.dir, target.name, config.maxConfigBytes, { xattrs: true });
    } else {
      this.targets.remove(PRIMARY_LINK);
    }
    try {
      if (read.kind === 'too-large') return problem('too-large', `primary ${primary.name}: ${read.size} bytes`);
      if (read.kind !== 'file') return problem('not-regular', `primary ${primary.name} is not a regular file`);
      const plan = planPatch(read.bytes, this.deps.plugin, libcniReading(primary.name));
      // A primary that already holds our plugin (left by in-place mode) is its own chained copy.
      const bytes = plan.action === 'write' ? plan.bytes : plan.action === 'none' ? read.bytes : undefined;
      if (bytes === undefined) {
        // Half-written or broken: the last good copy stays until the write that completes it.
        const reason = plan.action === 'invalid' || plan.action === 'refuse' ? plan.reason : plan.action === 'plugin-alone' ? PLUGIN_ALONE : plan.action;
        return problem('invalid', `primary ${primary.name}: ${reason}`);
      }
      // A new file, not a rewrite: the primary's owner and labels, and its mode without execute and
      // set-id bits (no config's).
      return { bytes, owner: { ...ownerOf(read), mode: read.stat.mode & 0o666 } };
    } finally {
      targetDir?.close();
    }
  }
}

function sameOwner(stat: { mode: number; uid: number; gid: number }, owner: FileOwner): boolean {
  return (stat.mode & 0o7777) === owner.mode && stat.uid === owner.uid && stat.gid === owner.gid;
}
