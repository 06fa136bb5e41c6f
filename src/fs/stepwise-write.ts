// The step-by-step crash-safe write, in two halves: a complete temp file (createTemp), then its
// landing (landTemp). It serves what the addon's one-call batch cannot: a streamed copy (a Filler:
// the plugin binary), a prepared spare landed later (daemon/keepers/spares.ts), and filesystems
// without RENAME_EXCHANGE. The numbered steps are docs/design.md's, "Writing"; native/entry_replace.cc
// marks the same ones.
import { closeSync, constants, fchmodSync, fchownSync, fsync, futimesSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { SYSCALL } from '../native/addon.js';
import { fsCalls } from '../native/fs-calls.js';
import type { Dir } from './dir.js';
import { fsyncDir } from './dir-sync.js';
import { errnoCode } from './errno.js';
import { entryHolds, landReplacing, type ReplacingLanding } from './exchange.js';
import { OPTIONAL_XATTR, ownerIds, tempFor, type AtomicWriteOptions, type Filler, type WriteResult } from './write-options.js';

const fsyncAsync = promisify(fsync);

function setXattrs(fd: number, xattrs: ReadonlyArray<[string, Buffer]>): void {
  for (const [key, value] of xattrs) {
    try {
      fsCalls.fsetxattr(fd, key, value);
    } catch (err) {
      if (!OPTIONAL_XATTR.test(key)) throw err;
    }
  }
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
    // (3) swapped in with one renameat2, and (4) what was swapped out checked (fs/exchange.ts).
    let landing: ReplacingLanding;
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
