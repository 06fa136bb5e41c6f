// Crash-safe file replacement: a temp file in the target's directory, written, fsynced, given the old
// file's mode and owner, swapped in with one rename, and the directory fsynced. At every instant the
// path holds either the old or the new version, and a failure leaves no temp file behind.
//
// A writer racing with us (the primary CNI rewriting the file while we patch it) must never lose its
// newer write to our patch of an older copy. With `expect`, the swap is renameat2(RENAME_EXCHANGE):
// afterwards the temp name holds exactly what we replaced, so if that is not what we read, a newer
// write landed in between and we swap it straight back and report 'stale'.
//
// The fsyncs (and the unlink of a swapped-out old version) run on libuv's thread pool, so that during a
// storm the event loop keeps dispatching other files' patches and their fsyncs share journal commits.
import { closeSync, constants, fchmodSync, fchownSync, fsync, openSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { tempNameFor } from '../cni/names.js';
import { addon, IN } from '../watch/addon.js';
import { fsyncDir } from './dir-sync.js';
import { errnoCode } from './errno.js';

const fsyncAsync = promisify(fsync);

export interface AtomicWriteOptions {
  mode: number;
  uid?: number;
  gid?: number;
  /**
   * What must still be at the path for the write to land: the content read before patching.
   * Undefined replaces whatever is there.
   */
  expect?: Buffer;
}

export type WriteResult = 'written' | 'stale';

// Filesystems without renameat2 flags (some network ones) answer EINVAL: fall back to rename(2) with a
// content re-check just before it, which narrows the race to microseconds instead of closing it.
const UNSUPPORTED = new Set(['EINVAL', 'ENOSYS', 'EOPNOTSUPP']);
let exchangeSupported = true;

/** True when the file's bytes are exactly `expected` (false when it does not exist). */
export function contentIs(file: string, expected: Buffer): boolean {
  try {
    return readFileSync(file).equals(expected);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return false;
    throw err;
  }
}

type Landing = 'renamed' | 'exchanged' | 'stale';

const MAX_GIVE_BACK_ROUNDS = 64;

/**
 * We swapped a newer write (now at `tmp`) out for our patch (`ours`, now at `file`): swap it back. If
 * yet another write replaced our patch in between, that one is the newest and goes back instead,
 * and so on; each round needs a write to land in the microseconds between two renames, so this ends
 * as soon as the writer pauses. Should it never pause, the newest write seen is renamed into place.
 */
function giveBack(tmp: string, file: string, ours: Buffer): void {
  let sending = readFileSync(tmp);
  let expectedBack = ours;
  for (let round = 0; round < MAX_GIVE_BACK_ROUNDS; round++) {
    addon.rename2(tmp, file, IN.RENAME_EXCHANGE);
    const got = readFileSync(tmp);
    if (got.equals(expectedBack)) return; // the newest write is at `file`; `tmp` holds a superseded one
    // `got` replaced what was at `file` after it was put there: it is newer, so it goes back next.
    expectedBack = sending;
    sending = got;
  }
  renameSync(tmp, file);
}

function landReplacing(tmp: string, file: string, expected: Buffer, ours: Buffer): Landing {
  if (exchangeSupported) {
    try {
      addon.rename2(tmp, file, IN.RENAME_EXCHANGE);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return 'stale'; // removed since we read it
      if (!UNSUPPORTED.has(errnoCode(err) ?? '')) throw err;
      exchangeSupported = false;
    }
    if (exchangeSupported) {
      // What we swapped out is exactly what was there at the swap: it must be what we read.
      if (contentIs(tmp, expected)) return 'exchanged';
      giveBack(tmp, file, ours);
      return 'stale';
    }
  }
  if (!contentIs(file, expected)) return 'stale';
  renameSync(tmp, file);
  return 'renamed';
}

export async function writeFileAtomic(file: string, data: string | Buffer, options: AtomicWriteOptions): Promise<WriteResult> {
  const dir = path.dirname(file);
  const tmp = path.join(dir, tempNameFor(path.basename(file)));
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  let tmpExists = false;
  try {
    // Creating and filling a small file is page-cache work: done inline, it saves the event loop
    // four round trips through the thread pool. Only the fsync, which waits for the disk, goes there.
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    tmpExists = true;
    try {
      for (let offset = 0; offset < bytes.length; ) offset += writeSync(fd, bytes, offset, bytes.length - offset);
      fchmodSync(fd, options.mode);
      const { uid, gid } = options;
      if (uid !== undefined && gid !== undefined && (uid !== process.getuid?.() || gid !== process.getgid?.())) fchownSync(fd, uid, gid);
      await fsyncAsync(fd);
    } finally {
      closeSync(fd);
    }
    let landing: Landing;
    if (options.expect === undefined) {
      renameSync(tmp, file);
      landing = 'renamed';
    } else {
      landing = landReplacing(tmp, file, options.expect, bytes);
    }
    if (landing === 'stale') return 'stale';
    tmpExists = false;
    // The old version, now under the temp name, goes while the directory sync is under way.
    await Promise.all([landing === 'exchanged' ? unlink(tmp) : undefined, fsyncDir(dir)]);
    return 'written';
  } finally {
    if (tmpExists) await unlink(tmp).catch(() => {}); // already gone: nothing is left behind either way
  }
}

/** Removes `file` only if it still holds `expected`; true when it did. */
export async function unlinkIfUnchanged(file: string, expected: Buffer): Promise<boolean> {
  if (!contentIs(file, expected)) return false;
  unlinkSync(file);
  await fsyncDir(path.dirname(file));
  return true;
}

/**
 * Re-creates a symlink with the same target through a rename, so that watchers of its directory (the
 * container runtime watches only net.d) see an event even though the file changed elsewhere.
 */
export function touchSymlink(link: string, target: string): void {
  const tmp = path.join(path.dirname(link), tempNameFor(path.basename(link)));
  symlinkSync(target, tmp);
  try {
    renameSync(tmp, link);
  } catch (err) {
    unlinkSync(tmp);
    throw err;
  }
}
