// Step (4) of an in-place pass (reconciler.ts), the executor of a PatchJob (pass-effects.ts): the
// decided bytes written atomically where the file lives (fs/atomic-write.ts), from a spare when one
// is ready (spares.ts), and the file effects a landing brings: the symlink in net.d re-created so that
// the runtime sees its target change, and a spare prepared for the next rewrite. What the write means
// to the book (its record, metrics and log lines) goes back as data in the outcome (pass-outcome.ts,
// Landed), which the book applies.
import { writeBytesThen } from '../../fs/atomic-write.js';
import type { AtomicWriteOptions, WriteResult } from '../../fs/write-options.js';
import { contentHashOfDigest, sha256 } from '../../fs/content-hash.js';
import { touchSymlink } from '../../fs/touch-symlink.js';
import type { BytesInFlight } from './bytes-in-flight.js';
import type { KeeperDeps } from './config-keeper.js';
import type { PatchJob } from './pass-effects.js';
import { STALE_WRITE, type PassOutcome } from './pass-outcome.js';
import { Spares } from './spares.js';
import type { Done } from '../../done.js';

export class InPlaceWriter {
  private readonly spares: Spares;

  constructor(
    private readonly deps: KeeperDeps,
    /** The reconciler's bound: a job's bytes count against it until its write is done. */
    private readonly inFlight: BytesInFlight,
  ) {
    this.spares = new Spares(deps.root);
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

  private land(job: PatchJob, target: string | undefined, done: Done<PassOutcome>): void {
    const { source, fileKey, content, digest, bytes, owner } = job;
    const spare = this.spares.take(fileKey, source.dir, digest, bytes);
    // A literal, not a spread of `owner`: V8 defined the spread's properties through its slow path for
    // every write of a storm (a perf profile of the main thread put ~6 µs a file there, its own
    // overhead included).
    const options: AtomicWriteOptions = { mode: owner.mode, uid: owner.uid, gid: owner.gid, xattrs: owner.xattrs, expect: content, expectHash: contentHashOfDigest(digest), prepared: spare };
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
    writeBytesThen(source.dir, source.name, bytes, options, finish);
  }

  /** The write is done: its bytes no longer count, and the pass hears how it ended. */
  private over(job: PatchJob, done: Done<PassOutcome>, error: unknown, outcome?: PassOutcome): void {
    this.inFlight.release(job.held);
    done(error, outcome);
  }

  private landed(job: PatchJob, target: string | undefined, usedSpare: boolean, result: WriteResult): PassOutcome {
    const { netDir, name, source, fileKey, content, digest, bytes, owner, since, rewrite, fighting } = job;
    // A newer write landed while we patched: never overwrite it; look again.
    if (result === 'stale') return STALE_WRITE;
    if (source.linkText !== undefined && source.dir.disk !== netDir.disk) {
      // The runtime watches net.d only: re-create the link so it sees the change.
      touchSymlink(netDir, name, source.linkText);
    }
    // Only in net.d, where every reader ignores hidden temp names (libcni goes by extension); a link
    // target's directory belongs to whoever made the link, and may be read by anything.
    if (rewrite && source.dir.disk === netDir.disk && this.deps.isActive()) {
      this.spares.prepareSoon(fileKey, this.deps.root.fromDisk(source.dir.disk), source.dir.disk, source.name, content, digest, bytes, owner);
    }
    return { kind: 'written', fileKey, landed: { name, digest: fighting ? sha256(bytes) : undefined, since, target, spare: usedSpare } };
  }

  /** The config is gone: so is its spare. */
  dropSpare(fileKey: string): void {
    this.spares.drop(fileKey);
  }

  /** After the last pass: no spare survives a clean stop. */
  dispose(): Promise<void> {
    return this.spares.dispose();
  }
}
