// Crash-safe file replacement relative to a directory fd (fs/dir.ts): a temp file in the target's
// directory, written, given the old file's mode, owner and xattrs (POSIX ACLs and SELinux labels are
// xattrs), fsynced, swapped in with one rename, and the directory fsynced. At every instant the name
// holds either the old or the new version, and a failure leaves no temp file behind.
//
// A writer racing with us (the primary CNI rewriting the file while we patch it) must never lose its
// newer write to our patch of an older copy. With `expect`, the swap is renameat2(RENAME_EXCHANGE)
// used as a compare-and-swap, and a newer write swapped out goes straight back (fs/exchange.ts),
// reported as 'stale'. The temp name carries the
// hash of what we expected to replace: should we die between the exchange and the give-back, the
// sweep at the next start finds a temp whose content is not that hash and puts it back
// (daemon/lifecycle/temp-sweep.ts).
//
// A write of bytes is one call into the addon (native/entry_io.h) that runs the whole sequence (create,
// fill, chmod, chown, xattrs, fsync, exchange, compare, unlink) on libuv's thread pool: during a storm
// the event loop only plans patches and hands them out, and the pool's threads write many files at
// once, so their fsyncs share journal commits; each batch ends with one fsync of the directory, which
// makes all its renames durable (fs/replace-batches.ts). A streamed copy (a Filler: the plugin
// binary), a prepared spare and a filesystem without RENAME_EXCHANGE take the step-by-step path
// (fs/stepwise-write.ts), with the shared directory fsync of fs/dir-sync.ts.
import type { ReplaceOutcome } from '../native/addon.js';
import { promised, tellWhenSettled, type Done } from '../done.js';
import type { Dir } from './dir.js';
import { exchangeRefused, exchangeSupported, giveBack } from './exchange.js';
import { LANDING, replaceEntryThen } from './replace-batches.js';
import { createTemp, landTemp } from './stepwise-write.js';
import { OPTIONAL_XATTR, ownerIds, tempFor, type AtomicWriteOptions, type Filler, type WriteResult } from './write-options.js';

// Not async itself: bytes (nearly every write) go straight to writeBytes, one async frame fewer for a
// storm's suspended passes (daemon/keepers/reconciler.ts, runPass).
export function writeFileAtomic(dir: Dir, name: string, data: string | Buffer | Filler, options: AtomicWriteOptions): Promise<WriteResult> {
  const bytes = typeof data === 'string' ? Buffer.from(data) : typeof data === 'function' ? undefined : data;
  if (options.expect !== undefined && bytes === undefined) return Promise.reject(new TypeError('writeFileAtomic: expect needs the data as bytes'));
  if (bytes !== undefined && options.mtime === undefined) return writeBytes(dir, name, bytes, options);
  return writeInSteps(dir, name, data, options, bytes);
}

async function writeInSteps(dir: Dir, name: string, data: string | Buffer | Filler, options: AtomicWriteOptions, bytes: Buffer | undefined): Promise<WriteResult> {
  const tmp = await createTemp(dir, name, data, options);
  return landTemp(dir, tmp, name, options, bytes);
}

/** writeFileAtomic of bytes: one native call, directory fsync included. */
function writeBytes(dir: Dir, name: string, bytes: Buffer, options: AtomicWriteOptions): Promise<WriteResult> {
  return promised((done) => writeBytesThen(dir, name, bytes, options, done));
}

/**
 * writeFileAtomic of bytes, telling `done` once (never synchronously on success). A callback, not a
 * promise: a storm's writes wait on the pool together, and each promise and frame they hold would
 * outlive a scavenge and be promoted (docs/performance.md).
 */
export function writeBytesThen(dir: Dir, name: string, bytes: Buffer, options: AtomicWriteOptions, done: Done<WriteResult>): void {
  const { expect, prepared } = options;
  if (prepared !== undefined) {
    // Made and fsynced beforehand: steps (3) to (5) are left, the same landing and give-back.
    tellWhenSettled(landTemp(dir, prepared, name, options, bytes), done);
    return;
  }
  const landing = options.noReplace === true ? LANDING.noReplace : expect === undefined ? LANDING.rename : exchangeSupported() ? LANDING.exchange : undefined;
  if (landing === undefined) {
    // No RENAME_EXCHANGE here (found out earlier): the step-by-step path re-checks and renames.
    tellWhenSettled(writeInSteps(dir, name, bytes, options, bytes), done);
    return;
  }
  let tmp: string;
  try {
    tmp = tempFor(name, options);
    const ids = ownerIds(options);
    const xattrs = (options.xattrs ?? []).map(([key, value]) => ({ name: key, value, optional: OPTIONAL_XATTR.test(key) }));
    replaceEntryThen({ dirfd: dir.fd, tmp, name, bytes, mode: options.mode, uid: ids.uid, gid: ids.gid, xattrs, landing, expect }, dir.backing, (error, replaced) => {
      if (replaced === undefined) return done(dir.naming(name, error));
      let after: WriteResult | Promise<WriteResult>;
      try {
        after = afterReplace(dir, tmp, name, bytes, options, replaced);
      } catch (err) {
        return done(err);
      }
      if (after instanceof Promise) tellWhenSettled(after, done);
      else done(undefined, after);
    });
  } catch (err) {
    done(err); // bad arguments: nothing was queued
  }
}

/** What a replacement's landing means for the write (native/entry_replace.cc reports it). */
function afterReplace(dir: Dir, tmp: string, name: string, bytes: Buffer, options: AtomicWriteOptions, result: ReplaceOutcome): WriteResult | Promise<WriteResult> {
  switch (result) {
    case 'stale':
      return 'stale';
    case 'swapped':
      giveBack(dir, tmp, name, bytes); // (4) a newer write was swapped out: it goes back
      return 'stale';
    case 'unsupported':
      exchangeRefused();
      return landTemp(dir, tmp, name, options, bytes);
  }
  return 'written'; // the batch fsynced the directory after the landing (native/entry_io.h)
}
