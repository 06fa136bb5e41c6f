// The addon's replacements (native/entry_io.h), run in batches. Replacements asked for in one turn of
// the event loop (a storm's passes start together from one read of inotify events) go out together at
// its end. On a disk they are spread over the pool's threads: each works through its share one file
// after another, as the floor's threads do (bench/floor.c), and as many as the pool has keep the
// disk's fsyncs in flight together. On a memory-backed filesystem (tmpfs: fs/memory-backed.ts) no
// step waits on a device: a few run on the event loop itself, in one call, and more are spread over
// as many threads as there are cores.
import type { ReplaceJobWire, ReplaceOutcome } from '../native/addon.js';
import { entryIo } from '../native/entry-io.js';
import type { Done } from '../done.js';
import type { Backing } from './dir.js';
import { availableParallelism } from 'node:os';

/** One replacement of `name` in `dir`: the temp file `tmp` made, filled, fsynced and landed. */
export interface Replacement {
  dirfd: number;
  tmp: string;
  name: string;
  bytes: Buffer;
  mode: number;
  /** -1: as created. */
  uid: number;
  gid: number;
  /** Copied onto the temp file; an optional one the filesystem refuses is skipped. */
  xattrs: Array<{ name: string; value: Buffer; optional: boolean }>;
  landing: (typeof LANDING)[keyof typeof LANDING];
  /** With `exchange`: what the file must still hold for the landing to stand. */
  expect: Buffer | undefined;
}

/** The addon's positional form of a replacement, built here only. */
export function toWire(r: Replacement): ReplaceJobWire {
  return [r.dirfd, r.tmp, r.name, r.bytes, r.mode, r.uid, r.gid, r.xattrs.map((x) => [x.name, x.value, x.optional]), r.landing, r.expect];
}

/** A replacement's `landing` (native/entry_replace.cc): rename over, rename only if absent, or exchange and compare. */
export const LANDING = { rename: 0, noReplace: 1, exchange: 2 } as const;

interface Pending {
  job: ReplaceJobWire;
  done: Done<ReplaceOutcome>;
}

// libuv's pool size, as libuv reads it (UV_THREADPOOL_SIZE, default 4).
const POOL_THREADS = Math.max(1, Math.min(1024, Number(process.env.UV_THREADPOOL_SIZE) || 4));
// A replacement on a memory-backed filesystem is CPU work alone: more batches than cores would only
// make its threads take turns, with a context switch each time.
const CORES = Math.max(1, availableParallelism());

/**
 * Replacements on a memory-backed filesystem (fs/memory-backed.ts) asked for in one turn that run on
 * the event loop itself rather than on the pool: a single change's, or a few. There a replacement is
 * its syscalls alone, and the pool's two hand-offs (a thread woken for it, then the loop woken for its
 * completion) cost the single change more than running them here: measured, the landing came ~25 us
 * sooner (docs/performance.md). A storm's turns ask for tens at once, and those go to the pool, whose
 * threads then write while the loop reads and plans the next files.
 */
export const ON_LOOP_AT_MOST = 4;

let queued: Pending[] = [];
let queuedInMemory: Pending[] = [];

/**
 * Runs `replacement` in a batch with the others asked for in this turn of the event loop, and calls
 * `done` from the batch's completion: on the pool, or (`backing` memory, a few of them) on the loop.
 * A callback, not a promise: during a storm up to 128 writes wait on the pool at once, and what each
 * holds outlives a scavenge (docs/performance.md).
 */
export function replaceEntryThen(replacement: Replacement, backing: Backing, done: Done<ReplaceOutcome>): void {
  const job = toWire(replacement);
  // At the end of this turn (setImmediate runs after the poll phase), not at the next microtask: in a
  // storm, passes bounded by the queue start from the completions of earlier writes, one after
  // another, and a microtask flush sent each of them alone (1.4 files per batch measured, each with
  // its own directory fsync and pool wake-up).
  if (queued.length === 0 && queuedInMemory.length === 0) setImmediate(flush);
  (backing === 'memory' ? queuedInMemory : queued).push({ job, done });
}

/**
 * Sends the replacements asked for so far in this turn now, rather than at its end: for a caller that
 * knows nothing more will join them (the event router, once a read of inotify events is handled). A
 * single change then goes to the pool ~10 µs sooner (docs/performance.md); the turn's setImmediate
 * finds nothing left.
 */
export function flushReplacements(): void {
  if (queued.length > 0 || queuedInMemory.length > 0) flush();
}

/** `items` split into `batches` batches (fewer when there are fewer items), in order. */
export function inBatches<T>(items: readonly T[], batches: number): T[][] {
  const out: T[][] = [];
  if (items.length === 0) return out;
  const perBatch = Math.ceil(items.length / Math.min(batches, items.length));
  for (let at = 0; at < items.length; at += perBatch) out.push(items.slice(at, at + perBatch));
  return out;
}

/** `items` split into one batch per pool thread (fewer when there are fewer items), in order. */
export function perPoolThread<T>(items: readonly T[]): T[][] {
  return inBatches(items, POOL_THREADS);
}

function flush(): void {
  const onDevice = queued;
  const inMemory = queuedInMemory;
  queued = [];
  queuedInMemory = [];
  // The pool's first, so that its threads work while the loop runs its own. On a device each thread
  // takes a share, and their fsyncs share the journal's commits.
  for (const batch of perPoolThread(onDevice)) sendToPool(batch);
  if (inMemory.length > ON_LOOP_AT_MOST) {
    for (const batch of inBatches(inMemory, Math.min(CORES, POOL_THREADS))) sendToPool(batch);
  } else if (inMemory.length > 0) {
    runOnLoop(inMemory);
  }
}

function sendToPool(batch: Pending[]): void {
  let results: Promise<Array<ReplaceOutcome | Error>>;
  try {
    results = entryIo.replaceEntriesAt(batch.map((p) => p.job));
  } catch (err) {
    for (const p of batch) tell(p, err); // bad arguments: nothing was queued
    return;
  }
  results.then(
    (each) => told(batch, each),
    (err: unknown) => batch.forEach((p) => tell(p, err)),
  );
}

// One call, one batch: its directory fsyncs are shared as on the pool. The landings are done when it
// returns; what their callbacks do next (the book, readiness, the next pass) waits for a timer, so
// that the event loop blocks for a moment first and the core goes to whoever the landings woke, such
// as the container runtime re-reading net.d. Run at once, that bookkeeping held an independent
// observer's wake-up by ~50 µs on the bench's two cores (docs/performance.md); a single change's
// bookkeeping is never urgent.
function runOnLoop(batch: Pending[]): void {
  const jobs: ReplaceJobWire[] = new Array(batch.length);
  for (let k = 0; k < batch.length; k++) jobs[k] = batch[k]!.job;
  let results: Array<ReplaceOutcome | Error>;
  try {
    results = entryIo.replaceEntriesAtNow(jobs);
  } catch (err) {
    for (const p of batch) tell(p, err); // bad arguments: nothing was done
    return;
  }
  setTimeout(() => told(batch, results), 0);
}

function told(batch: Pending[], results: Array<ReplaceOutcome | Error>): void {
  for (let k = 0; k < batch.length; k++) {
    const result = results[k]!;
    if (typeof result === 'string') tell(batch[k]!, undefined, result);
    else tell(batch[k]!, result);
  }
}

// Every replacement of a batch hears how it ended, even when an earlier one's callback throws (a
// defect): that one is reported as uncaught, as a throw in a promise's handler would be.
function tell(p: Pending, error: unknown, result?: ReplaceOutcome): void {
  try {
    p.done(error, result);
  } catch (err) {
    queueMicrotask(() => {
      throw err;
    });
  }
}
