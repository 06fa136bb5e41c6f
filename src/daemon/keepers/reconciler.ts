// Keeps every config in net.d chained: one pass per config name, serialised and coalesced per name,
// a bounded number at once. A pass, with the markers used below (docs/design.md, Events):
//   (1) classify  the name: a parked link, a name CNI_CONF_SUFFIXES leaves out, out of scope, gone,
//                 not a regular file, a symlink (its target is opened inside the host root);
//   (2) read      the file behind it, bounded, from the directory it lives in;
//   (3) decide    our own write's event (by hash: the parcel backend has no rename cookies to tell),
//                 the pure planner's verdict, the binary, the fight rule (fight-detector.ts);
//   (4) write     atomically relative to that directory (fs/atomic-write.ts), only on a change;
//   (5) notify    every stage returns a PassOutcome (pass-outcome.ts), applied in one place by the
//                 keeper's book (config-book.ts): the status on /readyz, a problem logged once, the
//                 retry. The write step (in-place-write.ts) counts its metrics and touches symlinks.
import { planPatch } from '../../cni/conflist.js';
import { delegationProblem } from '../../cni/meta-plugin.js';
import { conflistName, isConfigName, isLibcniName, parkedLinkOriginal } from '../../cni/names.js';
import { ownerOf, readEntry, type EntryRead } from '../../fs/bounded-read.js';
import { sha256 } from '../../fs/content-hash.js';
import { withDirSync, type Dir } from '../../fs/dir.js';
import { SharedDir } from '../../fs/shared-dir.js';
import { isMissing } from '../../fs/errno.js';
import { BytesInFlight } from './bytes-in-flight.js';
import { CoalescingQueue, DEFAULT_PASS_CONCURRENCY, type PassRunner } from './coalescing-queue.js';
import { convertConf, type ConversionContext } from './conf-conversion.js';
import { IN_PLACE_WORDS } from './book-words.js';
import { ConfigBook } from './config-book.js';
import type { ConfigKeeper, KeeperDeps } from './config-keeper.js';
import { findDelegate, findLinked, findParked, notOurs, unreadable, type Found, type Source, type SourceContext } from './config-sources.js';
import { InPlaceWriter } from './in-place-write.js';
import { listMetaDelegates, metaPluginReading } from './meta-delegates.js';
import { CHAINED, GONE, UNCHANGED, problem, quiet, type PassOutcome } from './pass-outcome.js';
import { PrimaryScope } from './primary-scope.js';
import { SymlinkTargets } from './symlink-targets.js';
import { monotonicMs } from '../../monotonic-ms.js';

export class Reconciler implements ConfigKeeper, PassRunner<string> {
  readonly targets: SymlinkTargets;
  private readonly queue: CoalescingQueue;
  /** Per config its status, logged problem and retry; per file written our last write and fight state. */
  private readonly book: ConfigBook;
  private readonly conversion: ConversionContext;
  private readonly sources: SourceContext;
  /** CNI_PATCH_SCOPE=primary: per net.d on disk, the file the runtime loads, as listed in this turn. */
  private readonly primaryScope: PrimaryScope;
  /** Step (4), with the spares and the burst log it keeps. */
  private readonly writer: InPlaceWriter;
  private readonly netDirHandle: SharedDir;
  private readonly inFlight = new BytesInFlight();
  /** Multus configs of net.d delegating by path (name -> path), kept by the passes once a conversion asks (meta-delegates.ts). */
  private metaDelegates: Map<string, string> | undefined;

  constructor(
    private readonly deps: KeeperDeps,
    /** net.d on disk, as the watcher names it. */
    private netDirOnDisk: string,
  ) {
    this.book = new ConfigBook({ ...deps, now: deps.now ?? monotonicMs }, IN_PLACE_WORDS, this);
    // A symlink target no link leads to any more is no config of ours: it goes like a removed one.
    this.targets = new SymlinkTargets(netDirOnDisk, deps.onTargetDir, (target) => this.book.fileWent(target));
    this.writer = new InPlaceWriter(deps, this.book);
    this.primaryScope = new PrimaryScope(deps.config.suffixes);
    this.conversion = { deps, book: this.book, targets: this.targets };
    this.sources = { deps, targets: this.targets };
    this.netDirHandle = new SharedDir(() => deps.root.openDir(deps.config.netDir, this.netDirOnDisk));
    this.queue = new CoalescingQueue(this, DEFAULT_PASS_CONCURRENCY);
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
    this.book.eventArrived(name);
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
    for (const known of this.book.names()) if (!present.has(known)) this.forget(known);
    this.book.expireGone();
    for (const name of present) this.trigger(name);
    return present.size;
  }

  /** Waits for every running pass, including passes they trigger. */
  async drain(): Promise<void> {
    await this.queue.drain();
  }

  /** After the last pass: no spare survives a clean stop. */
  dispose(): Promise<void> {
    return this.writer.dispose();
  }

  /** Every config status dropped: net.d was re-armed or lost, and the next scan sets them again. */
  clearStatuses(): void {
    this.book.clear();
  }

  stop(): void {
    this.netDirHandle.retire();
    this.writer.flush();
    this.book.stop();
  }

  /** No config by this name any more: everything kept for it goes (its file's memory after a while). */
  forget(name: string): void {
    const fileKey = `${this.netDirOnDisk}/${name}`;
    this.metaDelegates?.delete(name);
    this.writer.dropSpare(fileKey);
    this.targets.remove(name);
    this.book.forgetConfig(name);
    this.book.fileWent(fileKey);
  }

  /** True while the reconciler keeps what it wrote to `fileKey` (a path on disk). */
  remembers(fileKey: string): boolean {
    return this.book.wroteBefore(fileKey);
  }

  /** The queue's: a pass threw (a write failed); the book reports it and retries a passing cause. */
  passFailed(name: string, error: unknown): void {
    this.book.failed(name, error);
  }

  /** The queue's: room for another pass while those running hold less than the bound (bytes-in-flight.ts). */
  hasRoom(): boolean {
    return this.inFlight.hasRoom;
  }

  // The queue's: one pass of config `name`. Its only async frame: during a storm up to 128 passes
  // wait at once while their writes run on the pool, long enough to outlive a scavenge, and every
  // frame, promise and closure they hold is then copied and promoted. The stages below return an
  // outcome, or one promise of it (measured: docs/performance.md).
  async runPass(name: string): Promise<void> {
    try {
      if (!this.deps.isActive()) return;
      const lease = this.netDirHandle.acquire();
      try {
        const outcome = this.startPass(lease.dir, name);
        this.record(name, outcome instanceof Promise ? await outcome : outcome);
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

  /** (5) notify: the one place a pass's outcome is applied. */
  private record(name: string, outcome: PassOutcome): void {
    if (outcome.kind === 'gone') this.forget(name);
    else this.book.apply(name, outcome);
  }

  /** The pass's synchronous part; a promise when a write is under way. */
  private startPass(netDir: Dir, name: string): PassOutcome | Promise<PassOutcome> {
    const { config } = this.deps;
    // (1) classify
    const original = parkedLinkOriginal(name);
    if (original !== undefined) return this.patchFound(netDir, name, findParked(this.sources, netDir, name, original));
    if (!isConfigName(name, config.suffixes)) return notOurs(this.sources, netDir, name);
    // (2) read first: for a regular file (nearly every pass) that one call is all the I/O before planning.
    const read = readEntry(netDir, name, config.maxConfigBytes, { xattrs: true });
    if (read.kind === 'missing') {
      if (netDir.hasUndecodable(name)) {
        // Readiness must not say chained while the runtime may load a file we cannot even open.
        if (config.scope === 'primary' && name !== this.primaryScope.loadedName(netDir)) return quiet('out-of-scope');
        return problem('error', 'its name is not valid UTF-8: cni-chainer cannot open it by name; rename it');
      }
      this.forget(name);
      // The runtime may now load another file: in primary scope that one needs a look, against a
      // listing without the file that is gone.
      if (config.scope === 'primary') {
        this.primaryScope.forget(netDir);
        this.scan();
      }
      return UNCHANGED;
    }
    // Directories, FIFOs and devices are never configs: libcni skips them too.
    if (read.kind === 'not-regular') return GONE;
    if (config.scope === 'primary' && name !== this.primaryScope.loadedName(netDir)) return quiet('out-of-scope');
    if (read.kind === 'symlink') return this.patchFound(netDir, name, findLinked(this.sources, netDir, name));
    return this.patch(netDir, name, { dir: netDir, name }, read);
  }

  /** Steps (2) to (4) for the file found behind a name; a directory opened for it is closed after. */
  private patchFound(netDir: Dir, name: string, found: Found | PassOutcome): PassOutcome | Promise<PassOutcome> {
    if (found.kind !== 'found') return found;
    const { source, read } = found;
    if (source.dir === netDir) return this.patch(netDir, name, source, read);
    // The directory opened for it is closed once the outcome is there, however it ends.
    let patching: PassOutcome | Promise<PassOutcome>;
    try {
      patching = this.patch(netDir, name, source, read);
    } catch (err) {
      source.dir.close();
      throw err;
    }
    if (patching instanceof Promise) return patching.finally(() => source.dir.close());
    source.dir.close();
    return patching;
  }

  /** Steps (2) to (4) for one file: its read checked, the decision, and the write if one is due. */
  private patch(netDir: Dir, name: string, source: Source, read: EntryRead): PassOutcome | Promise<PassOutcome> {
    const since = this.book.takeFirstEvent(name);
    if (read.kind !== 'file') return unreadable(read, source, this.deps.config.maxConfigBytes);
    // The content and its patched copy count against the bytes in flight until the write is done;
    // xattrs too: a read holds their values until the write has copied them.
    let held = 2 * read.bytes.length;
    for (let i = 0; i < read.xattrs.length; i++) held += read.xattrs[i]![1].length;
    return this.inFlight.holdUntil(held, this.decide(netDir, name, source, read, since));
  }

  /** (3) decide, and (4) the write if one is due: the outcome, or a promise of it while writes run. */
  private decide(netDir: Dir, name: string, source: Source, read: EntryRead & { kind: 'file' }, since: bigint): PassOutcome | Promise<PassOutcome> {
    const { plugin } = this.deps;
    const content = read.bytes;
    const fileKey = `${source.dir.disk}/${source.name}`;
    this.book.fileIsThere(fileKey);
    const digest = sha256(content);
    if (this.book.holdsOurWrite(fileKey, digest)) return { kind: 'written', fileKey }; // the event of our own write

    const plan = planPatch(content, plugin);
    if (this.metaDelegates !== undefined && source.metaDelegate !== true && source.dir.disk === netDir.disk) {
      if (plan.action === 'delegates' && plan.delegation.kind === 'path') this.metaDelegates.set(name, plan.delegation.path);
      else this.metaDelegates.delete(name);
    }
    // A regular file in net.d leads nowhere else (a meta-plugin's pass says where it delegates).
    if (source.linkText === undefined && source.metaDelegate !== true && plan.action !== 'delegates') this.targets.remove(name);
    // Half-written or broken: left as it is; the write that completes it brings another event.
    if (plan.action === 'invalid') return problem('invalid', `${plan.reason} [sha256 ${digest.slice(0, 12)}]`);
    if (plan.action === 'refuse') return problem('error', plan.reason);
    if (plan.action === 'delegates') {
      if (source.metaDelegate === true) return problem('error', delegationProblem.nested);
      // Inside the hold (patch): the meta config's bytes stay counted while its delegate is written.
      return this.patchFound(netDir, name, findDelegate(this.sources, name, plan.delegation));
    }
    if (plan.action === 'none') return CHAINED;
    // Never chain without the plugin's binary (plugin-binary.ts): the pod would fail, or start
    // unmeshed. The reinstall that brings it back rescans.
    const noBinary = this.deps.binary.problem();
    if (noBinary !== undefined) return problem('no-binary', noBinary);
    // The primary rewrote a file we had patched: the case a spare is for (spares.ts).
    const rewrittenAfterOurPatch = this.book.wroteBefore(fileKey);
    const backoff = this.book.beforeRewrite(name, fileKey, rewrittenAfterOurPatch);
    if (backoff !== undefined) return backoff;

    const owner = ownerOf(read);
    // A single-plugin config becomes a conflist of the same stem; any other keeps its name.
    const destName = plan.upgraded ? conflistName(parkedLinkOriginal(name) ?? name) : name;
    if (plan.upgraded && destName === name) {
      // libcni matches `.conf` case-sensitively: the runtime never loads `X.CONF`, and a conversion
      // would turn it into the `.conflist` it loads first. Left as it is, and harmless as it is.
      return quiet('not-loaded', 'a single-plugin config the runtime does not load (libcni matches .conf, .conflist and .json case-sensitively): left as it is');
    }
    if (destName !== name) {
      // Multus reads its delegate by path at every ADD: a converted .conf would be a missing file.
      this.metaDelegates ??= listMetaDelegates(this.deps, netDir);
      const readBy = source.metaDelegate === true ? name : metaPluginReading(this.deps, this.metaDelegates, netDir, source);
      if (readBy !== undefined) {
        return problem('error', `${readBy} (a meta-plugin) reads this single-plugin config by path: converting it to a .conflist would break it; make the primary write a conflist`);
      }
      return convertConf(this.conversion, netDir, name, destName, source, fileKey, content, plan.bytes, owner);
    }
    // (4) write
    return this.writer.write({ netDir, name, source, fileKey, content, digest, bytes: plan.bytes, owner, since, rewrite: rewrittenAfterOurPatch });
  }
}
