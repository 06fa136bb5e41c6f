// Step (4) of an in-place pass (reconciler.ts): the decided bytes written atomically where the file
// lives (fs/atomic-write.ts), through a spare when one is ready (spares.ts), and what a write changes
// beside the file: the book's record of it, the metrics, one log line per burst, the symlink in net.d
// re-created so that the runtime sees its target change.
import { writeBytesThen } from '../../fs/atomic-write.js';
import { landTemp } from '../../fs/stepwise-write.js';
import type { AtomicWriteOptions, WriteResult } from '../../fs/write-options.js';
import type { FileOwner } from '../../fs/bounded-read.js';
import { contentHashOfDigest, sha256 } from '../../fs/content-hash.js';
import type { Dir } from '../../fs/dir.js';
import { touchSymlink } from '../../fs/touch-symlink.js';
import { BurstLog } from './burst-log.js';
import type { BytesInFlight } from './bytes-in-flight.js';
import type { ConfigBook } from './config-book.js';
import type { KeeperDeps } from './config-keeper.js';
import type { Source } from './config-sources.js';
import { AGAIN, type PassOutcome } from './pass-outcome.js';
import { Spares } from './spares.js';
import { promised, tellWhenSettled, type Done } from '../../done.js';

/** One decided write: what a pass's decision returns when the file needs one. */
export interface PatchJob {
  kind: 'write';
  /** net.d, open for this pass. */
  netDir: Dir;
  /** The config's name in net.d. */
  name: string;
  /** The file written: in net.d, a symlink's target or a Multus delegate. */
  source: Source;
  fileKey: string;
  /** What was read, and its sha256: the write lands only over exactly these bytes. */
  content: Buffer;
  digest: string;
  bytes: Buffer;
  owner: FileOwner;
  /** When the first event of this pass arrived (the patch latency metric). */
  since: bigint;
  /** The primary rewrote a file we had patched: the case a spare is for. */
  rewrite: boolean;
  /**
   * The file is in a fight (fight-detector.ts): the book keeps the digest of what we write, so that
   * the pass of our own write's event tells it from the other writer's and holds readiness until it
   * has held. Outside a fight a pass that reads our write plans it and finds it chained, which
   * needs no digest: a storm's writes are then hashed once each, not twice.
   */
  fighting: boolean;
  /** Bytes the pass holds, counted against the bound until the write is done (bytes-in-flight.ts). */
  held: number;
}

export class InPlaceWriter {
  private readonly spares: Spares;
  private readonly burst: BurstLog;

  constructor(
    private readonly deps: KeeperDeps,
    private readonly book: ConfigBook,
    /** The reconciler's bound: a job's bytes count against it until its write is done. */
    private readonly inFlight: BytesInFlight,
  ) {
    this.spares = new Spares(deps.root);
    this.burst = new BurstLog((count, sample) => deps.log.info({ count, files: sample }, 'chained plugin into configs'));
  }

  // Callbacks, not promises: during a storm up to 128 writes wait on the pool at once, and every
  // promise, frame and closure they hold outlives a scavenge and is promoted (docs/performance.md).
  /** Writes `job`, then tells `done` the pass's outcome (or, with none, the error that stopped it). */
  write(job: PatchJob, done: Done<PassOutcome>): void {
    this.inFlight.hold(job.held);
    // A file outside net.d is recorded before it is chained (chained-targets.ts).
    const { source, fileKey } = job;
    const target = source.linkText === undefined && source.metaDelegate !== true ? undefined : this.deps.root.fromDisk(fileKey);
    const recording = target === undefined ? undefined : this.deps.recordTarget?.(target);
    if (recording === undefined) this.land(job, target, done);
    else recording.then(() => this.land(job, target, done), (err: unknown) => this.over(job, done, err));
  }

  /** write() as a promise of the outcome: for the passes that wait on more than the write. */
  written(job: PatchJob): Promise<PassOutcome> {
    return promised((done) => this.write(job, done));
  }

  private land(job: PatchJob, target: string | undefined, done: Done<PassOutcome>): void {
    const { source, fileKey, content, digest, bytes, owner } = job;
    const spare = this.spares.take(fileKey, source.dir, digest, bytes);
    // A literal, not a spread of `owner`: V8 defined the spread's properties through its slow path for
    // every write of a storm (a perf profile of the main thread put ~6 µs a file there, its own
    // overhead included).
    const options: AtomicWriteOptions = { mode: owner.mode, uid: owner.uid, gid: owner.gid, xattrs: owner.xattrs, expect: content, expectHash: contentHashOfDigest(digest) };
    const finish = (error: unknown, result?: WriteResult): void => {
      if (result === undefined) return this.over(job, done, error);
      let outcome: PassOutcome;
      try {
        outcome = this.landed(job, target, spare !== undefined, result);
      } catch (err) {
        return this.over(job, done, err);
      }
      this.over(job, done, undefined, outcome);
    };
    if (spare === undefined) writeBytesThen(source.dir, source.name, bytes, options, finish);
    else tellWhenSettled(landTemp(source.dir, spare, source.name, options, bytes), finish);
  }

  /** The write is done: its bytes no longer count, and the pass hears how it ended. */
  private over(job: PatchJob, done: Done<PassOutcome>, error: unknown, outcome?: PassOutcome): void {
    this.inFlight.release(job.held);
    done(error, outcome);
  }

  private landed(job: PatchJob, target: string | undefined, usedSpare: boolean, result: WriteResult): PassOutcome {
    const { netDir, name, source, fileKey, content, digest, bytes, owner, since, rewrite, fighting } = job;
    if (result === 'stale') {
      // A newer write landed while we patched: never overwrite it; look again.
      this.deps.metrics.staleWrites.inc();
      return AGAIN;
    }
    this.book.wrote(fileKey, fighting ? sha256(bytes) : undefined);
    this.deps.metrics.patchLatency.observe(Number(process.hrtime.bigint() - since) / 1e9);
    this.deps.metrics.patches.inc();
    // One line per file at debug; at info, one summary per burst (a storm of 1,000 configs would
    // otherwise cost 1,000 synchronous log writes on the hot path).
    this.deps.log.debug({ file: name, target, spare: usedSpare }, 'chained plugin into config');
    this.burst.add(name);
    if (source.linkText !== undefined && source.dir.disk !== netDir.disk) {
      // The runtime watches net.d only: re-create the link so it sees the change.
      touchSymlink(netDir, name, source.linkText);
    }
    // Only in net.d, where every reader ignores hidden temp names (libcni goes by extension); a link
    // target's directory belongs to whoever made the link, and may be read by anything.
    if (rewrite && source.dir.disk === netDir.disk && this.deps.isActive()) {
      this.spares.prepareSoon(fileKey, this.deps.root.fromDisk(source.dir.disk), source.dir.disk, source.name, content, digest, bytes, owner);
    }
    return { kind: 'written', fileKey };
  }

  /** The config is gone: so is its spare. */
  dropSpare(fileKey: string): void {
    this.spares.drop(fileKey);
  }

  /** Stop: the burst's line is written now. */
  flush(): void {
    this.burst.flush();
  }

  /** After the last pass: no spare survives a clean stop. */
  dispose(): Promise<void> {
    return this.spares.dispose();
  }
}
