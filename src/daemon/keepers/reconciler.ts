// Keeps every config in net.d chained: one pass per config name, serialised and coalesced per name,
// a bounded number at once. A pass, with the markers used below (docs/design.md, Events):
//   (1) classify  the name: a parked link, a name CNI_CONF_SUFFIXES leaves out, out of scope, gone,
//                 not a regular file, a symlink (its target is opened inside the host root);
//   (2) read      the file behind it, bounded, from the directory it lives in;
//   (3) decide    our own write's event (by hash: the parcel backend has no rename cookies to tell),
//                 the pure planner's verdict, the binary, the fight rule (fight-detector.ts);
//   (4) write     atomically relative to that directory (fs/atomic-write.ts), only on a change;
//   (5) notify    the records (records.ts), readiness, metrics and logs; a symlink is re-created in
//                 net.d so that the runtime sees its target change.
import { planPatch } from '../../cni/conflist.js';
import { delegationProblem } from '../../cni/meta-plugin.js';
import { conflistName, isConfigName, isLibcniName, parkedLinkOriginal } from '../../cni/names.js';
import { landTemp, touchSymlink, writeFileAtomic } from '../../fs/atomic-write.js';
import { ownerOf, readEntry, type EntryRead } from '../../fs/bounded-read.js';
import { contentHashOfDigest, sha256 } from '../../fs/content-hash.js';
import { withDirSync, type Dir } from '../../fs/dir.js';
import { SharedDir } from '../../fs/shared-dir.js';
import { isMissing } from '../../fs/errno.js';
import { BurstLog } from './burst-log.js';
import { BytesInFlight } from './bytes-in-flight.js';
import { CoalescingQueue, DEFAULT_PASS_CONCURRENCY } from './coalescing-queue.js';
import type { KeeperDeps } from './config-keeper.js';
import { DEFAULT_FIGHT_POLICY, FightDetector } from './fight-detector.js';
import { GonePaths } from './gone-paths.js';
import { convertConf, listMetaDelegates, metaPluginReading, type ConversionContext, type Source } from './conf-conversion.js';
import { PrimaryScope } from './primary-scope.js';
import { notOurs, passDelegate, passLinked, passParked, type SourceContext } from './config-sources.js';
import { ConfigStatuses, TRANSIENT_RETRY_MS } from './config-statuses.js';
import { Records } from './records.js';
import { Spares } from './spares.js';
import { SymlinkTargets } from './symlink-targets.js';
import { monotonicMs } from '../../monotonic-ms.js';

export type ReconcilerDeps = KeeperDeps;

export class Reconciler {
  readonly targets: SymlinkTargets;
  readonly fights: FightDetector;
  private readonly queue: CoalescingQueue;
  /** What was written per file, and what is pending per config name (records.ts). */
  private readonly records = new Records();
  private readonly statuses: ConfigStatuses;
  private readonly conversion: ConversionContext;
  private readonly sources: SourceContext;
  /** CNI_PATCH_SCOPE=primary: per net.d on disk, the file the runtime loads, as listed in this turn. */
  private readonly primaryScope: PrimaryScope;
  /** Configs gone from disk whose file records are kept a while (gone-paths.ts). */
  private readonly gone: GonePaths;
  private readonly spares: Spares;
  private readonly netDirHandle: SharedDir;
  private readonly inFlight = new BytesInFlight();
  /**
   * Meta-plugin configs of net.d that delegate by path (name → path as written), kept from the
   * passes; undefined until a conversion needs them after a scan (conf-conversion.ts listMetaDelegates).
   */
  private metaDelegates: Map<string, string> | undefined;
  private readonly burst = new BurstLog((count, sample) => this.deps.log.info({ count, files: sample }, 'chained plugin into configs'));

  constructor(
    private readonly deps: ReconcilerDeps,
    /** net.d on disk, as the watcher names it. */
    private netDirOnDisk: string,
  ) {
    const now = deps.now ?? monotonicMs;
    this.fights = new FightDetector(DEFAULT_FIGHT_POLICY, now);
    this.gone = new GonePaths(this.fights.policy.calmMs, now);
    // A symlink target no link leads to any more is no config of ours: it goes like a removed one.
    this.targets = new SymlinkTargets(netDirOnDisk, deps.onTargetDir, (target) => this.noLongerAConfig(target));
    this.spares = new Spares(deps.root);
    this.primaryScope = new PrimaryScope(deps.config.suffixes);
    this.statuses = new ConfigStatuses(deps, this.records, this.fights, (name) => this.trigger(name));
    this.conversion = {
      deps,
      records: this.records,
      statuses: this.statuses,
      targets: this.targets,
      fights: this.fights,
      forget: (name) => this.forget(name),
      retrigger: (name) => this.queue.trigger(name),
    };
    this.sources = {
      deps,
      targets: this.targets,
      statuses: this.statuses,
      forget: (name) => this.forget(name),
      patch: (netDir, name, source, read) => this.patch(netDir, name, source, read),
    };
    this.netDirHandle = new SharedDir(() => deps.root.openDir(deps.config.netDir, this.netDirOnDisk));
    this.queue = new CoalescingQueue(
      (name) => this.pass(name),
      (name, error) => this.statuses.failed(name, error),
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
    const record = this.records.config(name);
    record.firstEvent ??= process.hrtime.bigint();
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
    this.metaDelegates = undefined;
    const present = new Set(names.filter((n) => this.concerns(n) || parkedLinkOriginal(n) !== undefined));
    for (const known of this.statuses.names()) if (!present.has(known)) this.forget(known);
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

  /** Every config status dropped: net.d was re-armed or lost, and the next scan sets them again. */
  clearStatuses(): void {
    this.statuses.clear();
  }

  stop(): void {
    this.netDirHandle.retire();
    this.burst.flush();
    this.records.cancelRetries();
  }

  forget(name: string): void {
    const fileKey = `${this.netDirOnDisk}/${name}`;
    this.metaDelegates?.delete(name);
    this.spares.drop(fileKey);
    this.statuses.forget(name);
    this.targets.remove(name);
    this.records.dropConfig(name);
    this.noLongerAConfig(fileKey);
  }

  /** True while the reconciler keeps what it wrote to `fileKey` (a path on disk). */
  remembers(fileKey: string): boolean {
    return this.records.file(fileKey) !== undefined;
  }

  /** `fileKey` is no config any more: what is kept for it goes once it has been gone for long. */
  private noLongerAConfig(fileKey: string): void {
    this.dropMemoryOf(this.gone.went(fileKey));
  }

  private dropMemoryOf(expired: string[]): void {
    for (const fileKey of expired) {
      this.records.dropFile(fileKey);
      this.fights.forget(fileKey);
    }
  }

  // A pass is a few async frames deep, not more: during a storm up to 128 are suspended at once
  // while their writes run on the pool, long enough to outlive a scavenge, and each frame, promise
  // and closure they hold is then copied and promoted (measured: docs/performance.md).
  private async pass(name: string): Promise<void> {
    try {
      if (!this.deps.isActive()) return;
      const lease = this.netDirHandle.acquire();
      try {
        const writing = this.startPass(lease.dir, name);
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
  private startPass(netDir: Dir, name: string): Promise<void> | undefined {
    const { config } = this.deps;
    // (1) classify
    const original = parkedLinkOriginal(name);
    if (original !== undefined) return passParked(this.sources, netDir, name, original);
    if (!isConfigName(name, config.suffixes)) {
      notOurs(this.sources, netDir, name);
      return undefined;
    }
    // (2) read first: for a regular file (nearly every pass) that one call is all the I/O before planning.
    const read = readEntry(netDir, name, config.maxConfigBytes, { xattrs: true });
    if (read.kind === 'missing') {
      if (netDir.hasUndecodable(name)) {
        // Readiness must not say chained while the runtime may load a file we cannot even open.
        if (config.scope === 'primary' && name !== this.primaryScope.loadedName(netDir)) this.statuses.quiet(name, 'out-of-scope');
        else this.statuses.problem(name, 'error', 'its name is not valid UTF-8: cni-chainer cannot open it by name; rename it');
        return undefined;
      }
      this.forget(name);
      // The runtime may now load another file: in primary scope that one needs a look, against a
      // listing without the file that is gone.
      if (config.scope === 'primary') {
        this.primaryScope.forget(netDir);
        this.scan();
      }
      return undefined;
    }
    if (read.kind === 'not-regular') {
      // Directories, FIFOs and devices are never configs: libcni skips them too.
      this.forget(name);
      return undefined;
    }
    if (config.scope === 'primary' && name !== this.primaryScope.loadedName(netDir)) {
      this.statuses.quiet(name, 'out-of-scope');
      return undefined;
    }
    if (read.kind === 'symlink') return passLinked(this.sources, netDir, name);
    return this.patch(netDir, name, { dir: netDir, name }, read);
  }




  private async patch(netDir: Dir, name: string, source: Source, read: EntryRead): Promise<void> {
    const pending = this.records.peekConfig(name);
    const since = pending?.firstEvent ?? process.hrtime.bigint();
    if (pending !== undefined) {
      pending.firstEvent = undefined;
      this.records.tidy(name, pending);
    }
    const { plugin, config } = this.deps;
    switch (read.kind) {
      case 'missing':
        return; // removed meanwhile: its own event follows
      case 'symlink':
        // The target was swapped for a link after we resolved it: resolve again shortly.
        this.statuses.problem(name, 'dangling', `symlink target changed while it was being read`);
        this.statuses.retryLater(name, TRANSIENT_RETRY_MS);
        return;
      case 'not-regular':
        this.statuses.problem(name, 'not-regular', `${source.linkText === undefined ? 'not' : 'symlink target is not'} a regular file`);
        return;
      case 'too-large':
        // Extended attributes the agent cannot copy whole would be lost by a rewrite: left as it is.
        if (read.xattrsOver === true) this.statuses.problem(name, 'too-large', 'its extended attributes are over the 64 KiB cni-chainer reads and copies');
        else this.statuses.problem(name, 'too-large', `${read.size} bytes, over MAX_CONFIG_BYTES (${config.maxConfigBytes})`);
        return;
    }
    // (3) decide. The content and its patched copy count against the bytes in flight until the write is done.
    const content = read.bytes;
    const fileKey = `${source.dir.disk}/${source.name}`;
    this.gone.cameBack(fileKey);
    // Xattrs count too: a read holds their values until the write has copied them.
    let held = 2 * content.length;
    for (const [, value] of read.xattrs) held += value.length;
    this.inFlight.hold(held);
    try {
      const digest = sha256(content);
      if (this.records.holdsOurWrite(fileKey, digest)) {
        this.statuses.chainedOrSettling(name, fileKey); // the event of our own write
        return;
      }

      const plan = planPatch(content, plugin);
      if (this.metaDelegates !== undefined && source.metaDelegate !== true && source.dir.disk === netDir.disk) {
        if (plan.action === 'delegates' && plan.delegation.kind === 'path') this.metaDelegates.set(name, plan.delegation.path);
        else this.metaDelegates.delete(name);
      }
      // A regular file in net.d leads nowhere else (a meta-plugin's pass says where it delegates).
      if (source.linkText === undefined && source.metaDelegate !== true && plan.action !== 'delegates') this.targets.remove(name);
      if (plan.action === 'invalid') {
        // Half-written or broken: leave it as it is; the write that completes it brings another event.
        if (this.statuses.problem(name, 'invalid', `${plan.reason} [sha256 ${digest.slice(0, 12)}]`)) this.deps.metrics.parseErrors.inc();
        return;
      }
      if (plan.action === 'refuse') {
        this.statuses.problem(name, 'error', plan.reason);
        return;
      }
      if (plan.action === 'delegates') {
        if (source.metaDelegate === true) this.statuses.problem(name, 'error', delegationProblem.nested);
        else await passDelegate(this.sources, netDir, name, plan.delegation);
        return;
      }
      if (plan.action === 'none') {
        this.statuses.chained(name);
        return;
      }
      // Never chain without the plugin's binary (plugin-binary.ts): the pod would fail, or start
      // unmeshed. The reinstall that brings it back rescans.
      const noBinary = this.deps.binary.problem();
      if (noBinary !== undefined) {
        this.statuses.problem(name, 'no-binary', noBinary);
        return;
      }
      // The primary rewrote a file we had patched: the case a spare is for (spares.ts).
      const rewrittenAfterOurPatch = this.records.file(fileKey) !== undefined;
      if (this.statuses.fightBackoff(name, fileKey, rewrittenAfterOurPatch)) return;

      const owner = ownerOf(read);
      // A single-plugin config becomes a conflist of the same stem; any other keeps its name.
      const destName = plan.upgraded ? conflistName(parkedLinkOriginal(name) ?? name) : name;
      if (plan.upgraded && destName === name) {
        // libcni matches `.conf` case-sensitively: the runtime never loads `X.CONF`, and a conversion
        // would turn it into the `.conflist` it loads first. Left as it is, and harmless as it is.
        this.statuses.quiet(name, 'not-loaded', 'a single-plugin config the runtime does not load (libcni matches .conf, .conflist and .json case-sensitively): left as it is');
        return;
      }
      if (destName !== name) {
        // Multus reads its delegate by path at every ADD: a converted .conf would be a missing file.
        this.metaDelegates ??= listMetaDelegates(this.deps, netDir);
        const readBy = source.metaDelegate === true ? name : metaPluginReading(this.deps, this.metaDelegates, netDir, source);
        if (readBy !== undefined) {
          this.statuses.problem(name, 'error', `${readBy} (a meta-plugin) reads this single-plugin config by path: converting it to a .conflist would break it; make the primary write a conflist`);
          return;
        }
        await convertConf(this.conversion, netDir, name, destName, source, fileKey, content, plan.bytes, owner);
        return;
      }
      // (4) write. A file outside net.d is recorded before it is chained (chained-targets.ts).
      const target = source.linkText === undefined && source.metaDelegate !== true ? undefined : this.deps.root.fromDisk(fileKey);
      if (target !== undefined) await this.deps.recordTarget?.(target);
      const spare = this.spares.take(fileKey, source.dir, digest, plan.bytes);
      const options = { ...owner, expect: content, expectHash: contentHashOfDigest(digest) };
      const result = spare !== undefined ? await landTemp(source.dir, spare, source.name, options, plan.bytes) : await writeFileAtomic(source.dir, source.name, plan.bytes, options);
      if (result === 'stale') {
        // A newer write landed while we patched: never overwrite it; look again.
        this.deps.metrics.staleWrites.inc();
        this.queue.trigger(name);
        return;
      }
      // (5) notify
      this.records.wrote(fileKey, sha256(plan.bytes));
      this.fights.wrote(fileKey);
      this.deps.metrics.patchLatency.observe(Number(process.hrtime.bigint() - since) / 1e9);
      this.deps.metrics.patches.inc();
      // One line per file at debug; at info, one summary per burst (a storm of 1,000 configs would
      // otherwise cost 1,000 synchronous log writes on the hot path).
      this.deps.log.debug({ file: name, target, spare: spare !== undefined }, 'chained plugin into config');
      this.burst.add(name);
      if (source.linkText !== undefined && source.dir.disk !== netDir.disk) {
        // The runtime watches net.d only: re-create the link so it sees the change.
        touchSymlink(netDir, name, source.linkText);
      }
      this.statuses.chainedOrSettling(name, fileKey);
      // Only in net.d, where every reader ignores hidden temp names (libcni goes by extension); a link
      // target's directory belongs to whoever made the link, and may be read by anything.
      if (rewrittenAfterOurPatch && source.dir.disk === netDir.disk && this.deps.isActive()) {
        this.spares.prepareSoon(fileKey, this.deps.root.fromDisk(source.dir.disk), source.dir.disk, source.name, content, digest, plan.bytes, owner);
      }
    } finally {
      this.inFlight.release(held);
    }
  }


}
