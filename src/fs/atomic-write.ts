// Crash-safe file replacement relative to a directory fd (fs/dir.ts): a temp file in the target's
// directory, written, given the old file's mode, owner and xattrs (POSIX ACLs and SELinux labels are
// xattrs), fsynced, swapped in with one rename, and the directory fsynced. At every instant the name
// holds either the old or the new version, and a failure leaves no temp file behind.
//
// A writer racing with us (the primary CNI rewriting the file while we patch it) must never lose its
// newer write to our patch of an older copy. With `expect`, the swap is renameat2(RENAME_EXCHANGE):
// afterwards the temp name holds exactly what we replaced, so if that is not what we read, a newer
// write landed in between and we swap it straight back and report 'stale'. The temp name carries the
// hash of what we expected to replace: should we die between the exchange and the give-back, the
// sweep at the next start finds a temp whose content is not that hash and puts it back
// (daemon/lifecycle/temp-sweep.ts).
//
// A write of bytes is one call into the addon (native/entry_io.h) that runs the whole sequence (create,
// fill, chmod, chown, xattrs, fsync, exchange, compare, unlink) on libuv's thread pool: during a storm
// the event loop only plans patches and hands them out, and the pool's threads write many files at
// once, so their fsyncs share journal commits; each batch ends with one fsync of the directory, which
// makes all its renames durable (fs/replace-batches.ts). A streamed copy (a Filler: the plugin
// binary) and a prepared spare (landTemp) keep the step-by-step path below, with the shared directory
// fsync of fs/dir-sync.ts.
import { closeSync, constants, fchmodSync, fchownSync, fsync, futimesSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { tempNameFor } from './temp-names.js';
import { SYSCALL } from '../native/addon.js';
import { fsCalls } from '../native/fs-calls.js';
import { readEntry } from './bounded-read.js';
import { contentHash } from './content-hash.js';
import type { Dir } from './dir.js';
import { fsyncDir } from './dir-sync.js';
import type { ReplaceOutcome } from '../native/addon.js';
import { LANDING, replaceEntryThen } from './replace-batches.js';
import { errnoCode } from './errno.js';
import { promised, tellWhenSettled, type Done } from '../done.js';

const fsyncAsync = promisify(fsync);

export interface AtomicWriteOptions {
  mode: number;
  uid?: number;
  gid?: number;
  /** Extended attributes to give the new file (the old file's, read with it). */
  xattrs?: ReadonlyArray<[string, Buffer]>;
  /** Replace only while the file still holds exactly these bytes (the content read before patching). */
  expect?: Buffer;
  /** Create only: never replace an existing entry ('stale' if one appeared). */
  noReplace?: boolean;
  /** Modification time to give the new file (copied binaries keep their source's, to compare cheaply). */
  mtime?: Date;
  /** contentHash(expect), when the caller has it already (it names the temp file). */
  expectHash?: string;
}

/** Fills the temp file itself (a streamed copy), instead of a buffer held in memory. */
export type Filler = (fd: number) => Promise<void>;

export type WriteResult = 'written' | 'stale';

// Filesystems without renameat2 flags (some network ones) answer EINVAL: fall back to rename(2) with a
// content re-check just before it, which narrows the race to microseconds instead of closing it.
export const UNSUPPORTED = new Set(['EINVAL', 'ENOSYS', 'EOPNOTSUPP']);
let exchangeSupported = true;

// Labels a process may be refused without anything being lost that the primary relies on: SELinux and
// trusted.* need privileges a filesystem or policy may not grant; user.* and ACLs must be kept.
const OPTIONAL_XATTR = /^(security|trusted)\./;

/** True when entry `name` holds exactly `expected` (false when it does not exist or is not a file). */
export function entryHolds(dir: Dir, name: string, expected: Buffer): boolean {
  const read = readEntry(dir, name, expected.length);
  return read.kind === 'file' && read.bytes.equals(expected);
}

// What a give-back reads of a version it swapped out is bounded like every other read: a file raced
// into net.d may be of any size. A larger version is never "the one we expect" (no config we write
// is that large), and it still goes back by rename, unread.
const GIVE_BACK_MAX_BYTES = 16 << 20;

/** The bytes at `name`, or undefined when it holds more than GIVE_BACK_MAX_BYTES. */
function readBack(dir: Dir, name: string): Buffer | undefined {
  const read = readEntry(dir, name, GIVE_BACK_MAX_BYTES);
  if (read.kind === 'too-large') return undefined;
  if (read.kind !== 'file') throw Object.assign(new Error(`${name} is not a regular file after the exchange`), { code: 'EIO' });
  return read.bytes;
}

/** How a step-by-step landing ended (the pool's replacements report a ReplaceOutcome). */
type StepwiseLanding = 'renamed' | 'exchanged' | 'stale';

const MAX_GIVE_BACK_ROUNDS = 64;

/**
 * We swapped a newer write (now at `tmp`) out for our patch (`ours`, now at `name`): swap it back. If
 * yet another write replaced our patch in between, that one is the newest and goes back instead,
 * and so on; each round needs a write to land in the microseconds between two renames, so this ends
 * as soon as the writer pauses. Should it never pause, the newest write seen is renamed into place.
 */
function giveBack(dir: Dir, tmp: string, name: string, ours: Buffer): void {
  let sending = readBack(dir, tmp);
  let expectedBack: Buffer | undefined = ours;
  for (let round = 0; round < MAX_GIVE_BACK_ROUNDS; round++) {
    dir.rename(tmp, name, SYSCALL.RENAME_EXCHANGE);
    const got = readBack(dir, tmp);
    if (got !== undefined && expectedBack !== undefined && got.equals(expectedBack)) {
      dir.unlink(tmp); // a superseded version: ours, or an older write of the primary's
      return;
    }
    // `got` replaced what was at `name` after it was put there: it is newer, so it goes back next.
    expectedBack = sending;
    sending = got;
  }
  dir.rename(tmp, name);
}

function landReplacing(dir: Dir, tmp: string, name: string, expected: Buffer, ours: Buffer): StepwiseLanding {
  if (exchangeSupported) {
    try {
      dir.rename(tmp, name, SYSCALL.RENAME_EXCHANGE);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return 'stale'; // removed since we read it
      if (!UNSUPPORTED.has(errnoCode(err) ?? '')) throw err;
      exchangeSupported = false;
    }
    if (exchangeSupported) {
      // What we swapped out is exactly what was there at the swap: it must be what we read.
      if (entryHolds(dir, tmp, expected)) return 'exchanged';
      giveBack(dir, tmp, name, ours);
      return 'stale';
    }
  }
  if (!entryHolds(dir, name, expected)) return 'stale';
  dir.rename(tmp, name);
  return 'renamed';
}

function setXattrs(fd: number, xattrs: ReadonlyArray<[string, Buffer]>): void {
  for (const [key, value] of xattrs) {
    try {
      fsCalls.fsetxattr(fd, key, value);
    } catch (err) {
      if (!OPTIONAL_XATTR.test(key)) throw err;
    }
  }
}

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

/** The temp name for a write of `name`: it carries the hash of the content it expects to replace. */
function tempFor(name: string, options: AtomicWriteOptions): string {
  return tempNameFor(name, options.expect === undefined ? 'new' : (options.expectHash ?? contentHash(options.expect)));
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
  const { expect } = options;
  const landing = options.noReplace === true ? LANDING.noReplace : expect === undefined ? LANDING.rename : exchangeSupported ? LANDING.exchange : undefined;
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
      exchangeSupported = false;
      return landTemp(dir, tmp, name, options, bytes);
  }
  return 'written'; // the batch fsynced the directory after the landing (native/entry_io.h)
}

// The agent's own identity does not change while it runs.
const OWN_UID = process.getuid?.() ?? -1;
const OWN_GID = process.getgid?.() ?? -1;

/** The owner to give a new file, or -1 for "as created" (the agent's own, which a chown would not change). */
function ownerIds(options: AtomicWriteOptions): { uid: number; gid: number } {
  const { uid, gid } = options;
  if (uid === undefined || gid === undefined || (uid === OWN_UID && gid === OWN_GID)) return { uid: -1, gid: -1 };
  return { uid, gid };
}

/**
 * The first half of a write: a complete, fsynced temp file beside `name`, not yet in place. Its name
 * carries the hash of `options.expect`, the content it will replace (see fs/temp-names.ts). On failure no
 * temp file is left.
 */
export async function createTemp(dir: Dir, name: string, data: string | Buffer | Filler, options: AtomicWriteOptions): Promise<string> {
  const bytes = typeof data === 'string' ? Buffer.from(data) : typeof data === 'function' ? undefined : data;
  const tmp = tempFor(name, options);
  // Creating and filling a small file is page-cache work: done inline, it saves the event loop
  // four round trips through the thread pool. Only the fsync, which waits for the disk, goes there.
  // The numbered steps are docs/design.md's, "Writing"; native/entry_replace.cc marks the same ones.
  // (1) a temp file beside the target, in the target's directory fd.
  const fd = dir.openEntry(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  try {
    // (2) the bytes, the old file's mode, owner and xattrs, fsynced.
    if (bytes !== undefined) for (let offset = 0; offset < bytes.length; ) offset += writeSync(fd, bytes, offset, bytes.length - offset);
    else await (data as Filler)(fd);
    fchmodSync(fd, options.mode);
    if (options.mtime !== undefined) futimesSync(fd, options.mtime, options.mtime);
    const { uid, gid } = ownerIds(options);
    if (uid !== -1) fchownSync(fd, uid, gid);
    // After the mode: a POSIX ACL (system.posix_acl_access) then sets the group bits it implies.
    if (options.xattrs !== undefined && options.xattrs.length > 0) setXattrs(fd, options.xattrs);
    await fsyncAsync(fd);
  } catch (err) {
    closeSync(fd);
    removeQuietly(dir, tmp);
    throw err;
  }
  closeSync(fd);
  return tmp;
}

function removeQuietly(dir: Dir, tmp: string): void {
  try {
    dir.unlink(tmp);
  } catch {
    // gone already (given back, or never created): nothing is left behind either way
  }
}

/**
 * The second half: the temp file `tmp` (complete and fsynced, see createTemp) swapped in for `name`,
 * under the same rules as writeFileAtomic, then the directory fsynced. The temp name is gone
 * afterwards, whatever the outcome.
 */
export async function landTemp(dir: Dir, tmp: string, name: string, options: AtomicWriteOptions, bytes: Buffer | undefined): Promise<WriteResult> {
  let tmpExists = true;
  try {
    // (3) swapped in with one renameat2, and (4) what was swapped out checked (landReplacing).
    let landing: StepwiseLanding;
    if (options.noReplace === true) {
      try {
        dir.rename(tmp, name, SYSCALL.RENAME_NOREPLACE);
      } catch (err) {
        if (errnoCode(err) === 'EEXIST') return 'stale';
        throw err;
      }
      landing = 'renamed';
    } else if (options.expect === undefined) {
      dir.rename(tmp, name);
      landing = 'renamed';
    } else {
      landing = landReplacing(dir, tmp, name, options.expect, bytes!);
    }
    if (landing === 'stale') return 'stale';
    tmpExists = landing === 'exchanged';
    // The old version, now under the temp name, goes before the directory sync, which covers both.
    if (tmpExists) {
      dir.unlink(tmp);
      tmpExists = false;
    }
    // (5) the directory fsynced.
    await fsyncDir(dir);
    return 'written';
  } finally {
    if (tmpExists) removeQuietly(dir, tmp);
  }
}

/** Removes entry `name` only if it still holds `expected`; true when it did. */
export async function unlinkIfUnchanged(dir: Dir, name: string, expected: Buffer): Promise<boolean> {
  if (!entryHolds(dir, name, expected)) return false;
  dir.unlink(name);
  await fsyncDir(dir);
  return true;
}
