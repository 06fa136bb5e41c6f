// The plugin binaries go into the host's CNI bin dir before any config names them: CRI-O skips a
// config whose plugin binary is missing, and containerd fails every new pod on it.
//
// A binary can be tens of megabytes and is re-checked at every resync: it is compared by size and
// modification time first (our copies carry the source's mtime), then by a streamed hash, and copied
// streaming, so neither memory nor the event loop ever holds a whole binary.
//
// Each installed binary has a spare: a hard link under a hidden name in the bin dir (no space of its
// own, never executed: runtimes run a plugin by its name). Another installer of the same plugin
// (linkerd's own, stopping beside this agent in a switch) removes the binary while configs still name
// it; a rename of the spare puts it back in one metadata operation, where a new copy would take a
// write and an fsync, and every pod ADD meanwhile would fail.
import { closeSync, constants, fstatSync, openSync, read, readdirSync, statSync, write, type Stats } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { writeFileAtomic } from '../../fs/atomic-write.js';
import { withDir, withDirSync, type Dir } from '../../fs/dir.js';
import { SYSCALL } from '../../native/addon.js';
import { errnoCode } from '../../fs/errno.js';
import type { HostRoot } from '../../fs/host-root.js';

const readAsync = promisify(read);
const writeAsync = promisify(write);
const CHUNK = 256 * 1024;

export interface InstalledBinary {
  name: string;
  written: boolean; // false: an identical copy was already there
}

/** The hidden name of a binary's spare hard link. */
export function spareName(name: string): string {
  return `.${name}.cni-chainer-spare`;
}

/** The spare of `name` is a hard link of it: made (or made again) when it is not. */
function ensureSpare(dir: Dir, name: string): void {
  const spare = spareName(name);
  const binary = dir.lstat(name);
  const current = dir.lstat(spare);
  if (binary === undefined || !binary.isFile() || (current !== undefined && current.ino === binary.ino)) return;
  if (current !== undefined) dir.unlink(spare);
  dir.link(name, spare);
}

/**
 * Puts `name` back from its spare at once, when it is missing (a rename that never replaces what
 * another writer put there meanwhile). True when it did.
 */
export function restoreFromSpare(root: HostRoot, binDir: string, name: string): boolean {
  try {
    return withDirSync(root.openDir(binDir), (dir) => {
      if (dir.lstat(name) !== undefined || dir.lstat(spareName(name))?.isFile() !== true) return false;
      dir.rename(spareName(name), name, SYSCALL.RENAME_NOREPLACE);
      return true;
    });
  } catch {
    // Gone meanwhile, or put back by someone else: the reinstall looks.
    return false;
  }
}

/** Regular files of the container's bin dir (links followed), by name. */
export function binaryNames(sourceDir: string): string[] {
  return readdirSync(sourceDir).filter((name) => statSync(path.join(sourceDir, name)).isFile());
}

/** Streams `fd` from its start through `each`, one chunk at a time. */
async function streamFd(fd: number, each: (chunk: Buffer) => void | Promise<void>): Promise<void> {
  const buffer = Buffer.allocUnsafe(CHUNK);
  for (let position = 0; ; ) {
    const { bytesRead } = await readAsync(fd, buffer, 0, CHUNK, position);
    if (bytesRead === 0) return;
    await each(buffer.subarray(0, bytesRead));
    position += bytesRead;
  }
}

async function hashFd(fd: number): Promise<string> {
  // Only for a binary of the same size but another mtime (rare): the crypto module loads then, not at
  // every start (see fs/content-hash.ts).
  const { createHash } = await import('node:crypto');
  const hash = createHash('sha256');
  await streamFd(fd, (chunk) => void hash.update(chunk));
  return hash.digest('hex');
}

async function sameBinary(source: string, sourceStat: Stats, dir: Dir, name: string): Promise<boolean> {
  let fd: number;
  try {
    fd = dir.openEntry(name, constants.O_RDONLY);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' || code === 'ELOOP') return false; // missing, or a symlink: replace it
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size !== sourceStat.size) return false;
    // A copy that lost its execute bits fails every pod as surely as a missing one (`check` counts it
    // missing). A chmod brings no event we watch for (IN_ATTRIB would wake us for every touch in
    // net.d), so the resync's check is what finds it.
    if ((st.mode & 0o7777) !== (sourceStat.mode & 0o7777)) return false;
    if (st.mtimeMs === sourceStat.mtimeMs) return true;
    const sourceFd = openSync(source, constants.O_RDONLY);
    try {
      return (await hashFd(sourceFd)) === (await hashFd(fd));
    } finally {
      closeSync(sourceFd);
    }
  } finally {
    closeSync(fd);
  }
}

/** Copies every binary atomically, mode and mtime kept; identical copies are left alone. */
export async function installBinaries(sourceDir: string, root: HostRoot, binDir: string): Promise<InstalledBinary[]> {
  return withDir(root.openDir(binDir), async (dir) => {
    const installed: InstalledBinary[] = [];
    for (const name of binaryNames(sourceDir)) {
      const source = path.join(sourceDir, name);
      const sourceStat = statSync(source);
      const same = await sameBinary(source, sourceStat, dir, name);
      if (!same) {
        const copy = async (fd: number): Promise<void> => {
          const sourceFd = openSync(source, constants.O_RDONLY);
          try {
            await streamFd(sourceFd, async (chunk) => {
              for (let offset = 0; offset < chunk.length; ) offset += (await writeAsync(fd, chunk, offset, chunk.length - offset)).bytesWritten;
            });
          } finally {
            closeSync(sourceFd);
          }
        };
        await writeFileAtomic(dir, name, copy, { mode: sourceStat.mode & 0o7777, mtime: sourceStat.mtime });
      }
      // Before the caller records the binary as installed: a new link changes its ctime.
      ensureSpare(dir, name);
      installed.push({ name, written: !same });
    }
    return installed;
  });
}

/** Removes the binaries and their spares; the names of the binaries that were there. */
export async function removeBinaries(root: HostRoot, binDir: string, names: readonly string[]): Promise<string[]> {
  return withDir(root.openDir(binDir), (dir) => {
    dir.unlinkExisting(names.map(spareName));
    return dir.unlinkExisting(names);
  });
}

/** Removes the spares only: the binaries stay for whoever chains the plugin now. */
export function removeSpares(root: HostRoot, binDir: string, names: readonly string[]): void {
  try {
    withDirSync(root.openDir(binDir), (dir) => dir.unlinkExisting(names.map(spareName)));
  } catch {
    // No bin dir: no spares either.
  }
}
