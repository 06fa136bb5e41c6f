// Keeps every config in net.d chained: one pass per config name, serialised and coalesced per name,
// a bounded number at once.
//
// A pass opens net.d inside the host root, finds the file behind the name (the config itself, or its
// symlink's target, whose directory is opened inside the root too), reads it with a bound, decides with
// the pure planner, and writes atomically relative to that directory only when something changes. What
// we wrote is remembered by hash, so a pass that finds our own write (the parcel backend has no rename
// cookies to tell) costs one read and no scan.
import type { Stats } from 'node:fs';
import path from 'node:path';
import { planPatch } from '../../cni/conflist.js';
import type { Delegation } from '../../cni/meta-plugin.js';
import { conflistName, isConfigName, isLibcniName, libcniOrder, parkedLinkName, parkedLinkOriginal } from '../../cni/names.js';
import { landTemp, touchSymlink, unlinkIfUnchanged, writeFileAtomic } from '../../fs/atomic-write.js';
import { readEntry, type EntryRead } from '../../fs/bounded-read.js';
import { contentHashOfDigest, sha256 } from '../../fs/content-hash.js';
import { withDirSync, type Dir } from '../../fs/dir.js';
import { SharedDir } from '../../fs/shared-dir.js';
import { TurnMemo } from '../../turn-memo.js';
import { errnoCode, isMissing } from '../../fs/errno.js';
import { BurstLog } from './burst-log.js';
import { BytesInFlight } from './bytes-in-flight.js';
import { CoalescingQueue, DEFAULT_PASS_CONCURRENCY } from './coalescing-queue.js';
import type { KeeperDeps } from './config-keeper.js';
import { DEFAULT_FIGHT_POLICY, FIGHT_CAUSE, FightDetector } from './fight-detector.js';
import { GonePaths } from './gone-paths.js';
import type { ConfigStatus } from './readiness.js';
import { Spares } from './spares.js';
import { openDelegate, openLinkTarget, resolveDelegate, SymlinkTargets } from './symlink-targets.js';

export type ReconcilerDeps = KeeperDeps;

/** The file behind a config name: the directory it lives in (open), and its name there. */
interface Source {
  dir: Dir;
  name: string;
  /** The symlink's text when the config is a symlink. */
  linkText?: string;
  /** A meta-plugin's delegate named by path (meta-plugin.ts): never converted, nor a meta itself. */
  pinned?: boolean;
}

// Errors that say "not now" rather than "never": the pass is retried shortly, not at the next resync.
const TRANSIENT = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EINTR']);
const TRANSIENT_RETRY_MS = 100;

export class Reconciler {
  readonly targets: SymlinkTargets;
  readonly fights: FightDetector;
  private readonly queue: CoalescingQueue;
  private readonly lastWritten = new Map<string, string>(); // file on disk -> sha256 of what we wrote
  private readonly lastProblem = new Map<string, string>(); // config name -> the problem last logged
  /** CNI_PATCH_SCOPE=primary: per net.d on disk, the file the runtime loads, as listed in this turn. */
  private readonly primaryThisTurn = new TurnMemo<string, string | undefined>();
  private readonly firstEvent = new Map<string, bigint>(); // config name -> when its pending work began
  private readonly retryTimers = new Map<string, NodeJS.Timeout>();
  private readonly upgraded = new Map<string, string>(); // conflist we made from a .conf, on disk -> sha256 of it
  /** Configs gone from disk whose entries in the maps above are kept a while (gone-paths.ts). */
  private readonly gone: GonePaths;
  private readonly spares: Spares;
  private readonly netDirHandle: SharedDir;
  private readonly inFlight = new BytesInFlight();
  private readonly burst = new BurstLog((count, sample) => this.deps.log.info({ count, files: sample }, 'chained plugin into configs'));

  constructor(
    private readonly deps: ReconcilerDeps,
    /** net.d on disk, as the watcher names it. */
    private netDirOnDisk: string,
  ) {
    const now = deps.now ?? (() => performance.now());
    this.fights = new FightDetector(DEFAULT_FIGHT_POLICY, now);
    this.gone = new GonePaths(this.fights.policy.calmMs, now);
    // A symlink target no link leads to any more is no config of ours: it goes like a removed one.
    this.targets = new SymlinkTargets(netDirOnDisk, deps.onTargetDir, (target) => this.wentAway(target));
    this.spares = new Spares(deps.root);
    this.netDirHandle = new SharedDir(() => deps.root.openDir(deps.config.netDir, this.netDirOnDisk));
    this.queue = new CoalescingQueue(
      (name) => this.pass(name),
      (name, error) => this.failed(name, error),
      DEFAULT_PASS_CONCURRENCY,
      () => this.inFlight.hasRoom,
    );
  }

  /** net.d was re-resolved (re-created, or its path now leads elsewhere). */
  setNetDir(netDirOnDisk: string): void {
    this.netDirHandle.retire();
    this.netDirOnDisk = netDirOnDisk;
    this.targets.setNetDir(netDirOnDisk);
  }

  /** A name a pass looks at: a config, or a file the runtime may load that is not one of ours. */
  concerns(name: string): boolean {
    // The cheap test first: most events of a storm are for hidden temp names.
    return isConfigName(name, this.deps.config.suffixes) || (!name.startsWith('.') && isLibcniName(name));
  }

  /** Schedules a pass of config `name` (it starts now unless one is running or the bound is reached). */
  trigger(name: string): void {
    if (!this.firstEvent.has(name)) this.firstEvent.set(name, process.hrtime.bigint());
    this.queue.trigger(name);
  }

  /** net.d was removed or moved away: the next pass opens it by its path again. */
  netDirGone(): void {
    this.netDirHandle.retire();
  }

  /** Lists net.d, forgets configs that are gone and triggers a pass of every config present. */
  scan(): number {
    // A resync looks up net.d by its path again, whatever the watches said.
    this.netDirHandle.retire();
    let names: string[];
    try {
      names = withDirSync(this.deps.root.openDir(this.deps.config.netDir, this.netDirOnDisk), (dir) => dir.list());
    } catch (err) {
      if (isMissing(err)) return 0;
      throw err;
    }
    const present = new Set(names.filter((n) => this.concerns(n) || parkedLinkOriginal(n) !== undefined));
    for (const known of this.deps.readiness.names()) if (!present.has(known)) this.forget(known);
    // Also when nothing else went since: what is kept for a removed config goes within a resync.
    this.dropMemoryOf(this.gone.expire());
    for (const name of present) this.trigger(name);
    return present.size;
  }

  /** Waits for every running pass, including passes they trigger. */
  async drain(): Promise<void> {
    await this.queue.drain();
  }

  /** After the last pass: no spare survives a clean stop. */
  dispose(): Promise<void> {
    return this.spares.dispose();
  }

  stop(): void {
    this.netDirHandle.retire();
    this.burst.flush();
    for (const timer of this.retryTimers.values()) clearTimeout(timer);
    this.retryTimers.clear();
  }

  forget(name: string): void {
    const fileKey = `${this.netDirOnDisk}/${name}`;
    this.spares.drop(fileKey);
    this.deps.readiness.delete(name);
    this.targets.remove(name);
    this.lastProblem.delete(name);
    this.firstEvent.delete(name);
    this.wentAway(fileKey);
  }

  /** True while the reconciler keeps what it wrote to `fileKey` (a path on disk). */
  remembers(fileKey: string): boolean {
    return this.lastWritten.has(fileKey);
  }

  /** `fileKey` is no config any more: what is kept for it goes once it has been gone for long. */
  private wentAway(fileKey: string): void {
    this.dropMemoryOf(this.gone.went(fileKey));
  }

  private dropMemoryOf(expired: string[]): void {
    for (const fileKey of expired) {
      this.lastWritten.delete(fileKey);
      this.upgraded.delete(fileKey);
      this.fights.forget(fileKey);
    }
  }

  // A pass is a few async frames deep, not more: during a storm up to 128 are suspended at once
  // while their writes run on the pool, long enough to outlive a scavenge, and each frame, promise
  // and closure they hold is then copied and promoted (measured: see the README's performance notes).
  private async pass(name: string): Promise<void> {
    try {
      if (!this.deps.isActive()) return;
      const lease = this.netDirHandle.acquire();
      try {
        const writing = this.passIn(lease.dir, name);
        if (writing !== undefined) await writing;
      } finally {
        this.netDirHandle.release(lease);
      }
    } catch (err) {
      if (isMissing(err)) return; // net.d is gone: the daemon re-arms and rescans
      throw err;
    } finally {
      this.deps.onPassDone?.();
    }
  }

  /** The pass's synchronous part; what it returns, if anything, is the write under way. */
  private passIn(netDir: Dir, name: string): Promise<void> | undefined {
    const { config, readiness } = this.deps;
    const original = parkedLinkOriginal(name);
    if (original !== undefined) return this.passParked(netDir, name, original);
    if (!isConfigName(name, config.suffixes)) {
      this.notOurs(netDir, name);
      return undefined;
    }
    // Read first: for a regular file (nearly every pass) that one call is all the I/O before planning.
    const read = readEntry(netDir, name, config.maxConfigBytes, true);
    if (read.kind === 'missing') {
      if (netDir.hasUndecodable(name)) {
        // Readiness must not say chained while the runtime may load a file we cannot even open.
        if (config.scope === 'primary' && name !== this.primaryName(netDir)) readiness.set(name, 'out-of-scope');
        else this.problem(name, 'error', 'its name is not valid UTF-8: cni-chainer cannot open it by name; rename it');
        return undefined;
      }
      this.forget(name);
      // The runtime may now load another file: in primary scope that one needs a look, against a
      // listing without the file that is gone.
      if (config.scope === 'primary') {
        this.primaryThisTurn.forget(netDir.disk);
        this.scan();
      }
      return undefined;
    }
    if (read.kind === 'not-regular') {
      // Directories, FIFOs and devices are never configs: libcni skips them too.
      this.forget(name);
      return undefined;
    }
    if (config.scope === 'primary' && name !== this.primaryName(netDir)) {
      readiness.set(name, 'out-of-scope');
      return undefined;
    }
    if (read.kind === 'symlink') return this.passLinked(netDir, name);
    return this.patch(netDir, name, { dir: netDir, name }, read);
  }

  /**
   * A converted `.conf` symlink, parked under a hidden name (names.ts parkedLinkName): the conflist made
   * from its target follows the target. When the primary has put a new `X.conf` in place meanwhile,
   * that one is what counts, and the parked link goes.
   */
  private passParked(netDir: Dir, parked: string, original: string): Promise<void> | undefined {
    const link = netDir.lstat(parked);
    if (link === undefined || !link.isSymbolicLink()) {
      this.forget(parked);
      return undefined;
    }
    if (netDir.lstat(original) !== undefined) {
      this.targets.remove(parked);
      netDir.unlinkExisting([parked]);
      return undefined;
    }
    return this.passLinked(netDir, parked);
  }

  /** A config that is a symlink: its target is patched where it lives, opened inside the root. */
  private async passLinked(netDir: Dir, name: string): Promise<void> {
    const { config } = this.deps;
    const linkText = netDir.readlink(name);
    const target = openLinkTarget(this.deps.root, config.netDir, name, this.targets, name);
    if (!target.ok) {
      this.problem(name, target.status, target.detail);
      if (target.retrySoon) this.retryLater(name, TRANSIENT_RETRY_MS);
      return;
    }
    try {
      await this.patch(netDir, name, { dir: target.dir, name: target.name, linkText }, readEntry(target.dir, target.name, config.maxConfigBytes, true));
    } finally {
      target.dir.close();
    }
  }

  /** A name the runtime may load that CNI_CONF_SUFFIXES leaves out: a status if it is a file or link. */
  private notOurs(netDir: Dir, name: string): void {
    let link: Stats | undefined;
    try {
      link = netDir.lstat(name);
    } catch (err) {
      if (errnoCode(err) !== 'ENOTDIR') throw err;
    }
    if (link === undefined || (!link.isFile() && !link.isSymbolicLink())) {
      this.forget(name);
      return;
    }
    this.targets.remove(name);
    this.deps.readiness.set(name, 'unmanaged', `the runtime may load it, but CNI_CONF_SUFFIXES (${this.deps.config.suffixes.join(',')}) leaves it out`);
  }

  private async patch(netDir: Dir, name: string, source: Source, read: EntryRead): Promise<void> {
    const since = this.firstEvent.get(name) ?? process.hrtime.bigint();
    this.firstEvent.delete(name);
    const { plugin, config } = this.deps;
    switch (read.kind) {
      case 'missing':
        return; // removed meanwhile: its own event follows
      case 'symlink':
        // The target was swapped for a link after we resolved it: resolve again shortly.
        this.problem(name, 'dangling', `symlink target changed while it was being read`);
        this.retryLater(name, TRANSIENT_RETRY_MS);
        return;
      case 'not-regular':
        this.problem(name, 'not-regular', `${source.linkText === undefined ? 'not' : 'symlink target is not'} a regular file`);
        return;
      case 'too-large':
        this.problem(name, 'too-large', `${read.size} bytes, over MAX_CONFIG_BYTES (${config.maxConfigBytes})`);
        return;
    }
    // The content and its patched copy count against the bytes in flight until the write is done.
    const content = read.bytes;
    const fileKey = `${source.dir.disk}/${source.name}`;
    this.gone.cameBack(fileKey);
    const held = 2 * content.length;
    this.inFlight.hold(held);
    try {
      const digest = sha256(content);
      if (this.lastWritten.get(fileKey) === digest) {
        this.chainedOrSettling(name, fileKey); // the event of our own write
        return;
      }

      const plan = planPatch(content, plugin);
      // A regular file in net.d leads nowhere else (a meta-plugin's pass says where it delegates).
      if (source.linkText === undefined && source.pinned !== true && plan.action !== 'delegates') this.targets.remove(name);
      if (plan.action === 'invalid') {
        // Half-written or broken: leave it as it is; the write that completes it brings another event.
        if (this.problem(name, 'invalid', `${plan.reason} [sha256 ${digest.slice(0, 12)}]`)) this.deps.metrics.parseErrors.inc();
        return;
      }
      if (plan.action === 'refuse') {
        this.problem(name, 'error', plan.reason);
        return;
      }
      if (plan.action === 'delegates') {
        if (source.pinned === true) this.problem(name, 'error', 'Multus delegates to another meta-plugin config: nothing to chain');
        else await this.passDelegate(netDir, name, plan.delegation);
        return;
      }
      if (plan.action === 'none') {
        this.chained(name);
        return;
      }
      // Never chain without the plugin's binary (plugin-binary.ts): the pod would fail, or start
      // unmeshed. The reinstall that brings it back rescans.
      const noBinary = this.deps.binary.problem();
      if (noBinary !== undefined) {
        this.problem(name, 'no-binary', noBinary);
        return;
      }
      // The primary rewrote a file we had patched: the case a spare is for (spares.ts).
      const rewrittenAfterOurPatch = this.lastWritten.has(fileKey);
      if (this.fightBackoff(name, fileKey, rewrittenAfterOurPatch)) return;

      const owner = { mode: read.stat.mode & 0o7777, uid: read.stat.uid, gid: read.stat.gid, xattrs: read.xattrs };
      // Named only for a single-plugin config: path.extname on every pass made it one more function
      // for V8 to optimise during a storm (12 ms of Turbofan, --trace-opt).
      const destName = plan.upgraded ? conflistName(parkedLinkOriginal(name) ?? name) : name;
      if (destName !== name) {
        // Multus reads its delegate by path at every ADD: a converted .conf would be a missing file.
        const pinnedBy = source.pinned === true ? name : this.metaPinning(netDir, source);
        if (pinnedBy !== undefined) {
          this.problem(name, 'error', `${pinnedBy} (a meta-plugin) reads this single-plugin config by path: converting it to a .conflist would break it; make the primary write a conflist`);
          return;
        }
        await this.upgrade(netDir, name, destName, source, fileKey, content, plan.bytes, owner);
        return;
      }
      const spare = this.spares.take(fileKey, source.dir, digest, plan.bytes);
      const options = { ...owner, expect: content, expectHash: contentHashOfDigest(digest) };
      const result = spare !== undefined ? await landTemp(source.dir, spare, source.name, options, plan.bytes) : await writeFileAtomic(source.dir, source.name, plan.bytes, options);
      if (result === 'stale') {
        // A newer write landed while we patched: never overwrite it; look again.
        this.deps.metrics.staleWrites.inc();
        this.queue.trigger(name);
        return;
      }
      this.lastWritten.set(fileKey, sha256(plan.bytes));
      this.fights.wrote(fileKey);
      this.deps.metrics.patchLatency.observe(Number(process.hrtime.bigint() - since) / 1e9);
      this.deps.metrics.patches.inc();
      const target = source.linkText === undefined && source.pinned !== true ? undefined : this.deps.root.fromDisk(fileKey);
      if (target !== undefined) this.deps.onTargetPatched?.(target);
      // One line per file at debug; at info, one summary per burst (a storm of 1,000 configs would
      // otherwise cost 1,000 synchronous log writes on the hot path).
      this.deps.log.debug({ file: name, target, spare: spare !== undefined }, 'chained plugin into config');
      this.burst.add(name);
      if (source.linkText !== undefined && source.dir.disk !== netDir.disk) {
        // The runtime watches net.d only: re-create the link so it sees the change.
        touchSymlink(netDir, name, source.linkText);
      }
      this.chainedOrSettling(name, fileKey);
      // Only in net.d, where every reader ignores hidden temp names (libcni goes by extension); a link
      // target's directory belongs to whoever made the link, and may be read by anything.
      if (rewrittenAfterOurPatch && source.dir.disk === netDir.disk && this.deps.isActive()) {
        this.spares.prepareSoon(fileKey, this.deps.root.fromDisk(source.dir.disk), source.dir.disk, source.name, content, digest, plan.bytes, owner);
      }
    } finally {
      this.inFlight.release(held);
    }
  }

  /**
   * A meta-plugin config (Multus) is never chained itself: the config it delegates to by path is,
   * where it lives, and the meta config's status is that delegate's (meta-plugin.ts).
   */
  private async passDelegate(netDir: Dir, name: string, delegation: Exclude<Delegation, { kind: 'embedded' }>): Promise<void> {
    const { config, root } = this.deps;
    if (delegation.kind !== 'path') {
      this.targets.remove(name);
      if (delegation.kind === 'none') this.problem(name, 'invalid', 'a meta-plugin config with neither clusterNetwork nor delegates');
      else {
        this.problem(
          name,
          'error',
          `Multus delegates to the network ${JSON.stringify(delegation.name)} by name (a NetworkAttachmentDefinition or a config in Multus' confDir), which cni-chainer cannot see: set clusterNetwork to the primary config's path`,
        );
      }
      return;
    }
    const target = openDelegate(root, delegation.path, this.targets, name);
    if (!target.ok) {
      this.problem(name, target.status, `Multus delegates to ${delegation.path}: ${target.detail}`);
      if (target.retrySoon) this.retryLater(name, TRANSIENT_RETRY_MS);
      return;
    }
    try {
      await this.patch(netDir, name, { dir: target.dir, name: target.name, pinned: true }, readEntry(target.dir, target.name, config.maxConfigBytes, true));
    } finally {
      target.dir.close();
    }
  }

  /**
   * The meta-plugin config in net.d that reads `source` by path, if any. Looked up only when a
   * single-plugin config is about to be converted (rare), so it may list and read net.d.
   */
  private metaPinning(netDir: Dir, source: Source): string | undefined {
    const hostPath = this.deps.root.fromDisk(`${source.dir.disk}/${source.name}`);
    for (const name of libcniOrder(netDir.list())) {
      if (name === source.name && source.dir.disk === netDir.disk) continue;
      const read = readEntry(netDir, name, this.deps.config.maxConfigBytes);
      if (read.kind !== 'file') continue;
      const plan = planPatch(read.bytes, this.deps.plugin);
      if (plan.action !== 'delegates' || plan.delegation.kind !== 'path') continue;
      const resolved = resolveDelegate(this.deps.root, plan.delegation.path);
      if (resolved === hostPath) return name;
    }
    return undefined;
  }

  /**
   * A single-plugin `X.conf` becomes `X.conflist`; the `.conf` goes once the conflist is in place. An
   * existing `X.conflist` is never overwritten, unless it is the one we made from this `.conf` and
   * still holds exactly what we wrote (the primary re-created its `.conf` after our conversion).
   */
  private async upgrade(
    netDir: Dir,
    name: string,
    destName: string,
    source: Source,
    fileKey: string,
    content: Buffer,
    text: Buffer,
    owner: { mode: number; uid: number; gid: number; xattrs: Array<[string, Buffer]> },
  ): Promise<void> {
    const existing = readEntry(netDir, destName, this.deps.config.maxConfigBytes);
    // A parked link is the durable mark of our conversion: its conflist is ours, after a restart too.
    const parked = parkedLinkOriginal(name) !== undefined;
    let expect: Buffer | undefined;
    if (existing.kind !== 'missing') {
      if (parked && existing.kind === 'file' && existing.bytes.equals(text)) return; // already follows the target
      const ours = existing.kind === 'file' && (parked || this.upgraded.get(path.join(netDir.disk, destName)) === sha256(existing.bytes));
      if (!ours) {
        this.problem(name, 'conflict', `${destName} exists too: not converting ${name} over it`);
        return;
      }
      expect = (existing as { bytes: Buffer }).bytes;
    }
    const result = await writeFileAtomic(netDir, destName, text, expect === undefined ? { ...owner, noReplace: true } : { ...owner, expect });
    if (result === 'stale') {
      this.problem(name, 'conflict', `${destName} changed while converting ${name}`);
      this.retryLater(name, TRANSIENT_RETRY_MS);
      return;
    }
    const written = sha256(text);
    const destKey = path.join(netDir.disk, destName);
    this.lastWritten.set(destKey, written);
    this.upgraded.set(destKey, written);
    this.deps.metrics.patches.inc();
    if (parked) {
      this.deps.log.info({ file: destName, link: parkedLinkOriginal(name) }, 'the conflist follows the target of a converted .conf link');
      return;
    }
    let removed: boolean;
    if (source.linkText !== undefined) {
      // A symlinked .conf: the link is kept, parked under a hidden name, never its target touched (it
      // belongs to whoever made the link): the conflist follows the target, and stop puts it back.
      // The target's rewrites are the primary's own, never a revert of ours.
      removed = netDir.readlink(name) === source.linkText;
      if (removed) {
        this.targets.set(parkedLinkName(name), fileKey);
        netDir.rename(name, parkedLinkName(name));
      }
    } else {
      // The .conf is gone once converted: its re-creation is a revert, counted like any other.
      this.lastWritten.set(fileKey, 'converted');
      this.fights.wrote(fileKey);
      removed = await unlinkIfUnchanged(netDir, name, content);
    }
    this.deps.log.info({ file: name, to: destName }, 'upgraded single-plugin config to a chained conflist');
    if (removed) this.forget(name);
    else this.queue.trigger(name); // rewritten meanwhile: convert the newer version
  }

  /**
   * Counts a revert of our patch (once per write of ours; `weWroteIt`: we have written this file
   * before); true when the file is in backoff and must not be written now.
   */
  private fightBackoff(name: string, fileKey: string, weWroteIt: boolean): boolean {
    if (weWroteIt || this.fights.isFighting(fileKey)) {
      const verdict = this.fights.reverted(fileKey);
      if (verdict.fightStarted) {
        this.deps.metrics.fights.inc();
        this.deps.log.warn(
          { file: name, backoffMs: verdict.backoffMs },
          `another writer reverts the plugin within milliseconds of every write (${FIGHT_CAUSE}); backing off`,
        );
      }
    }
    const left = this.fights.backoffLeft(fileKey);
    if (left === 0) return false;
    this.deps.log.debug({ file: name, backoffMs: left }, 'backing off');
    this.deps.metrics.backoffs.inc();
    this.deps.readiness.set(name, 'backoff', `patch reverted within milliseconds of each write (${FIGHT_CAUSE}); next try in ${left} ms`);
    this.retryLater(name, left);
    return true;
  }

  private retryLater(name: string, ms: number): void {
    clearTimeout(this.retryTimers.get(name));
    const timer = setTimeout(() => {
      this.retryTimers.delete(name);
      this.trigger(name);
    }, ms);
    timer.unref();
    this.retryTimers.set(name, timer);
  }

  /**
   * Chained, unless the file is in a fight and our write is too young to tell whether it holds: then
   * not ready, and a look once it has held long enough (fight-detector.ts `unsettled`).
   */
  private chainedOrSettling(name: string, fileKey: string): void {
    if (!this.fights.unsettled(fileKey)) {
      this.chained(name);
      return;
    }
    this.deps.readiness.set(name, 'backoff', `patch written in a fight (${FIGHT_CAUSE}); checking that it holds`);
    this.retryLater(name, this.fights.settleMs + 1);
  }

  private chained(name: string): void {
    this.deps.readiness.set(name, 'chained');
    this.lastProblem.delete(name);
  }

  /** Sets a problem status; logs it only when it differs from the last one logged. True if new. */
  private problem(name: string, status: ConfigStatus, detail: string): boolean {
    this.deps.readiness.set(name, status, detail);
    const key = `${status}: ${detail}`;
    if (this.lastProblem.get(name) === key) return false;
    this.lastProblem.set(name, key);
    this.deps.log.warn({ file: name, status, detail }, 'config left unchanged');
    return true;
  }

  private failed(name: string, error: unknown): void {
    const err = error as NodeJS.ErrnoException;
    const code = err.code ?? 'UNKNOWN';
    this.deps.metrics.writeErrors.inc({ code });
    this.deps.readiness.set(name, 'error', `${code}: ${err.message}`);
    // The old file is still in place; the next event or resync tries again (sooner when the cause is
    // passing, such as running out of file descriptors).
    this.deps.log.error({ file: name, code, path: err.path, err: err.message }, 'patching config failed');
    if (TRANSIENT.has(code)) this.retryLater(name, TRANSIENT_RETRY_MS);
  }

  private primaryName(netDir: Dir): string | undefined {
    // One listing per turn serves every pass of it: a scan in primary scope asks once per config, and
    // a listing (with an lstat per name) each time made it quadratic (measured: 3,000 configs held
    // the first scan for 19 s). The listing follows every event handled this turn; a change after it
    // brings its own event, handled in a later turn, and a file gone meanwhile drops it (passIn).
    return this.primaryThisTurn.get(netDir.disk, () => {
      // Only regular files and symlinks count: libcni skips directories (and so must the scope). A
      // file whose name is not UTF-8 counts too: libcni loads it, though we cannot open it.
      const names = netDir.list().filter((n) => {
        if (!isConfigName(n, this.deps.config.suffixes)) return false;
        const st = netDir.lstat(n);
        return st === undefined ? netDir.hasUndecodable(n) : st.isFile() || st.isSymbolicLink();
      });
      return libcniOrder(names)[0];
    });
  }
}
