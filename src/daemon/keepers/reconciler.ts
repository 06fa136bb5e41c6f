// Keeps every config in net.d chained: one pass per config name, serialised and coalesced per name,
// a bounded number at once. A pass (docs/design.md, Events), steps (1) to (3) in in-place-pass.ts:
//   (1) classify  the name: a parked link, a name CNI_CONF_SUFFIXES leaves out, out of scope, gone,
//                 not a regular file, a symlink (its target is opened inside the host root);
//   (2) read      the file behind it, bounded, from the directory it lives in;
//   (3) decide    our own write's event (by hash: the parcel backend has no rename cookies to tell),
//                 the pure planner's verdict, the binary, the fight rule (fight-detector.ts);
//                 (1) to (3) decide as data (pass-effects.ts): no write, removal, log line or
//                 metric of theirs, only the bookkeeping of what they looked at (where a link
//                 leads, the fight rule's state, which Multus config reads which file);
//   (4) execute   the executor (pass-executor.ts) carries out the decided write, atomically relative
//                 to the file's directory and only on a change (in-place-write.ts), or removal;
//   (5) record    the outcome (pass-outcome.ts) is applied in one place, record(): what is kept for
//                 a config that is gone, then the keeper's book (config-book.ts): the status on
//                 /readyz, the record of a landed write, a problem logged once, metrics, the retry.
import { isConfigName, isLibcniName, parkedLinkOriginal } from '../../cni/names.js';
import { withDirSync } from '../../fs/dir.js';
import { SharedDir, type Lease } from '../../fs/shared-dir.js';
import { isMissing } from '../../fs/errno.js';
import { BytesInFlight } from './bytes-in-flight.js';
import { CoalescingQueue, DEFAULT_PASS_CONCURRENCY, type PassEnded, type PassRunner } from '../shared/coalescing-queue.js';
import { IN_PLACE_WORDS } from './book-words.js';
import { ConfigBook } from './config-book.js';
import type { ConfigKeeper, KeeperDeps } from './config-keeper.js';
import { InPlacePass } from './in-place-pass.js';
import type { Decision } from './pass-effects.js';
import { PassExecutor } from './pass-executor.js';
import { InPlaceWriter } from './in-place-write.js';
import { MetaDelegates } from './meta-delegates.js';
import { GONE, UNCHANGED, type PassOutcome } from './pass-outcome.js';
import { SymlinkTargets } from './symlink-targets.js';
import { monotonicMs } from '../../monotonic-ms.js';

export class Reconciler implements ConfigKeeper, PassRunner<string> {
  readonly targets: SymlinkTargets;
  private readonly queue: CoalescingQueue;
  /** Per config its status, logged problem and retry; per file written our last write and fight state. */
  private readonly book: ConfigBook;
  /** Steps (1) to (3). */
  private readonly pass: InPlacePass;
  /** Step (4): the writer (with the spares it keeps) and the executor that runs it. */
  private readonly writer: InPlaceWriter;
  private readonly executor: PassExecutor;
  private readonly netDirHandle: SharedDir;
  private readonly inFlight = new BytesInFlight();
  /** Multus configs of net.d delegating by path, kept by the passes once a conversion asks. */
  private readonly metaDelegates: MetaDelegates;

  constructor(
    private readonly deps: KeeperDeps,
    /** net.d on disk, as the watcher names it. */
    private netDirOnDisk: string,
  ) {
    this.book = new ConfigBook({ ...deps, now: deps.now ?? monotonicMs }, IN_PLACE_WORDS, this);
    // A symlink target no link leads to any more is no config of ours: it goes like a removed one.
    this.targets = new SymlinkTargets(netDirOnDisk, deps.onTargetDir, (target) => this.book.fileWent(target));
    this.writer = new InPlaceWriter(deps, this.inFlight);
    this.executor = new PassExecutor(this.writer);
    this.metaDelegates = new MetaDelegates(deps);
    this.pass = new InPlacePass(deps, this.book, this.targets, this.executor, this.inFlight, this.metaDelegates);
    this.netDirHandle = new SharedDir(() => deps.root.openDir(deps.config.netDir, this.netDirOnDisk));
    this.queue = new CoalescingQueue(this, DEFAULT_PASS_CONCURRENCY);
  }

  targetDirGone(dir: string): readonly string[] {
    return this.targets.dropDir(dir);
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
    this.metaDelegates.reset();
    const present = new Set(names.filter((n) => this.concerns(n) || parkedLinkOriginal(n) !== undefined));
    for (const known of this.book.names()) if (!present.has(known)) this.record(known, GONE);
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
    this.book.stop();
  }

  /**
   * (5) record: the one place a pass's outcome is applied. A config that is gone takes with it what
   * the keeper's parts keep for it (its Multus delegation, its spare, where its link led), then the
   * book applies the outcome; a gone primary in primary scope lists net.d again.
   */
  private record(name: string, outcome: PassOutcome): void {
    if (outcome.kind === 'gone') {
      const fileKey = `${this.netDirOnDisk}/${name}`;
      this.metaDelegates.forget(name);
      this.writer.dropSpare(fileKey);
      this.targets.remove(name);
      this.book.fileWent(fileKey);
    }
    this.book.apply(name, outcome);
    if (outcome.kind === 'gone' && outcome.rescan) this.scan();
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

  // The queue's: one pass of config `name`, ended by a call of `ended`. No promise and no async frame
  // on the storm's path: up to 128 passes wait at once while their writes run on the pool, long
  // enough to outlive a scavenge, and every frame, promise and closure they hold is then copied and
  // promoted. Steps (1) to (3) return an outcome, the effect they decided, or (a conversion, a file
  // outside net.d) one promise of an outcome (measured: docs/performance.md).
  runPass(name: string, ended: PassEnded<string>): void {
    if (!this.deps.isActive()) return this.passOver(name, ended, undefined, UNCHANGED);
    let lease: Lease;
    let decision: Decision;
    try {
      lease = this.netDirHandle.acquire();
    } catch (err) {
      return this.passOver(name, ended, err);
    }
    try {
      decision = this.pass.start(lease.dir, name);
    } catch (err) {
      return this.passOver(name, ended, err, undefined, lease);
    }
    if (decision instanceof Promise || decision.kind === 'write' || decision.kind === 'unlink') {
      this.executor.run(decision, (error, outcome) => this.passOver(name, ended, error, outcome, lease));
    } else {
      this.passOver(name, ended, undefined, decision, lease); // an outcome alone: no closure for it
    }
  }

  /** The pass is over: its outcome recorded (or, with none, its error reported). */
  private passOver(name: string, ended: PassEnded<string>, error: unknown, outcome?: PassOutcome, lease?: Lease): void {
    try {
      if (outcome === undefined) {
        if (!isMissing(error)) this.book.failed(name, error); // missing: net.d is gone, the daemon re-arms and rescans
      } else this.record(name, outcome);
    } catch (err) {
      this.book.failed(name, err);
    } finally {
      if (lease !== undefined) this.netDirHandle.release(lease);
      this.deps.onPassDone?.();
      ended(name);
    }
  }
}
