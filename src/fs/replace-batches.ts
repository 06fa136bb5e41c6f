// The addon's replacements (native/entry_io.h) handed to libuv's pool in batches. Replacements asked
// for in one turn of the event loop (a storm's passes start together from one read of inotify events)
// go out together at its end, spread over the pool's threads: each thread works through its share one
// file after another, as the floor's threads do (bench/floor.c). Fewer, larger work items wake fewer
// threads; as many as the pool has keep the disk's fsyncs in flight together.
import type { ReplaceJobWire, ReplaceOutcome } from '../native/addon.js';
import { entryIo } from '../native/entry-io.js';
import type { Done } from '../done.js';

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

let queued: Pending[] = [];

/**
 * Runs `replacement` on the pool, in a batch with the others asked for in this turn of the event loop,
 * and calls `done` from the batch's completion. A callback, not a promise: during a storm up to 128
 * writes wait on the pool at once, and what each holds outlives a scavenge (docs/performance.md).
 */
export function replaceEntryThen(replacement: Replacement, done: Done<ReplaceOutcome>): void {
  const job = toWire(replacement);
  // At the end of this turn (setImmediate runs after the poll phase), not at the next microtask: in a
  // storm, passes bounded by the queue start from the completions of earlier writes, one after
  // another, and a microtask flush sent each of them alone (1.4 files per batch measured, each with
  // its own directory fsync and pool wake-up).
  if (queued.length === 0) setImmediate(flush);
  queued.push({ job, done });
}

/**
 * Sends the replacements asked for so far in this turn now, rather than at its end: for a caller that
 * knows nothing more will join them (the event router, once a read of inotify events is handled). A
 * single change then goes to the pool ~10 µs sooner (docs/performance.md); the turn's setImmediate
 * finds nothing left.
 */
export function flushReplacements(): void {
  if (queued.length > 0) flush();
}

/** `items` split into one batch per pool thread (fewer when there are fewer items), in order. */
export function perPoolThread<T>(items: readonly T[]): T[][] {
  const batches: T[][] = [];
  if (items.length === 0) return batches;
  const perBatch = Math.ceil(items.length / Math.min(POOL_THREADS, items.length));
  for (let at = 0; at < items.length; at += perBatch) batches.push(items.slice(at, at + perBatch));
  return batches;
}

function flush(): void {
  const pending = queued;
  queued = [];
  for (const batch of perPoolThread(pending)) {
    let results: Promise<Array<ReplaceOutcome | Error>>;
    try {
      results = entryIo.replaceEntriesAt(batch.map((p) => p.job));
    } catch (err) {
      for (const p of batch) tell(p, err); // bad arguments: nothing was queued
      continue;
    }
    results.then(
      (each) => each.forEach((result, k) => (typeof result === 'string' ? tell(batch[k]!, undefined, result) : tell(batch[k]!, result))),
      (err: unknown) => batch.forEach((p) => tell(p, err)),
    );
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
