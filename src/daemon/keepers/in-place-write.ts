// Step (4) of an in-place pass (reconciler.ts): the decided bytes written atomically where the file
// lives (fs/atomic-write.ts), through a spare when one is ready (spares.ts), and what a write changes
// beside the file: the book's record of it, the metrics, one log line per burst, the symlink in net.d
// re-created so that the runtime sees its target change.
import { landTemp, writeFileAtomic, type WriteResult } from '../../fs/atomic-write.js';
import type { FileOwner } from '../../fs/bounded-read.js';
import { contentHashOfDigest, sha256 } from '../../fs/content-hash.js';
import type { Dir } from '../../fs/dir.js';
import { touchSymlink } from '../../fs/touch-symlink.js';
import { BurstLog } from './burst-log.js';
import type { ConfigBook } from './config-book.js';
import type { KeeperDeps } from './config-keeper.js';
import type { Source } from './config-sources.js';
import { AGAIN, type PassOutcome } from './pass-outcome.js';
import { Spares } from './spares.js';

/** One decided write. */
export interface PatchJob {
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
}

export class InPlaceWriter {
  private readonly spares: Spares;
  private readonly burst: BurstLog;

  constructor(
    private readonly deps: KeeperDeps,
    private readonly book: ConfigBook,
  ) {
    this.spares = new Spares(deps.root);
    this.burst = new BurstLog((count, sample) => deps.log.info({ count, files: sample }, 'chained plugin into configs'));
  }

  // Not an async function: during a storm up to 128 writes wait on the pool at once, and each
  // suspended frame outlives a scavenge and is promoted (docs/performance.md). A write is one
  // continuation on the landing's promise instead.
  write(job: PatchJob): Promise<PassOutcome> {
    // A file outside net.d is recorded before it is chained (chained-targets.ts).
    const { source, fileKey } = job;
    const target = source.linkText === undefined && source.metaDelegate !== true ? undefined : this.deps.root.fromDisk(fileKey);
    const recording = target === undefined ? undefined : this.deps.recordTarget?.(target);
    return recording === undefined ? this.land(job, target) : recording.then(() => this.land(job, target));
  }

  private land(job: PatchJob, target: string | undefined): Promise<PassOutcome> {
    const { source, fileKey, content, digest, bytes, owner } = job;
    const spare = this.spares.take(fileKey, source.dir, digest, bytes);
    const options = { ...owner, expect: content, expectHash: contentHashOfDigest(digest) };
    const landing = spare !== undefined ? landTemp(source.dir, spare, source.name, options, bytes) : writeFileAtomic(source.dir, source.name, bytes, options);
    return landing.then((result) => this.landed(job, target, spare !== undefined, result));
  }

  private landed(job: PatchJob, target: string | undefined, usedSpare: boolean, result: WriteResult): PassOutcome {
    const { netDir, name, source, fileKey, content, digest, bytes, owner, since, rewrite } = job;
    if (result === 'stale') {
      // A newer write landed while we patched: never overwrite it; look again.
      this.deps.metrics.staleWrites.inc();
      return AGAIN;
    }
    this.book.wrote(fileKey, sha256(bytes));
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
