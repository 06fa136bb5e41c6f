// What a pass of the in-place keeper decides (in-place-pass.ts), as data: an outcome to record, or an
// effect on the files for the keeper's executor to carry out (reconciler.ts, runPass), whose end is
// an outcome too. The planning stages never write, unlink or record themselves.
//
// A decision is a value, not a promise, on the storm's path: a storm's passes wait on the pool 128 at
// once, and a promise and frame each would outlive a scavenge and be promoted (docs/performance.md).
// Only what waits on more than one write (a conversion, a file opened outside net.d) is a promise.
import type { FileOwner } from '../../fs/bounded-read.js';
import type { Dir } from '../../fs/dir.js';
import type { Source } from './config-sources.js';
import type { PassOutcome } from './pass-outcome.js';

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

/** One decided removal: a stale parked link, or the leftover of linkerd-cni's interface mode. */
export interface UnlinkJob {
  kind: 'unlink';
  dir: Dir;
  name: string;
  /** Removed only while it still holds exactly these bytes; undefined: whatever it is now (a link of ours). */
  expect: Buffer | undefined;
  /** The outcome once it is removed (a changed file is left, and its own event brings a pass). */
  then: PassOutcome;
}

/** What a pass's synchronous part comes to. */
export type Decision = PassOutcome | PatchJob | UnlinkJob | Promise<PassOutcome>;
