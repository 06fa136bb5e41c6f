// Typed access to the C++ addon (native/). Loaded once per process or worker thread.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { keepHiddenClass } from '../hidden-classes.js';

export interface InotifyWatcherHandle {
  /** The watch descriptor of the directory given to the constructor. */
  readonly wd: number;
  readonly closed: boolean;
  addWatch(path: string, mask: number): number;
  removeWatch(wd: number): void;
  close(): void;
  ref(): void;
  unref(): void;
}

/** inotify(7) event masks. */
export interface InotifyMasks {
  readonly [name: string]: number;
  IN_MODIFY: number;
  IN_ATTRIB: number;
  IN_CLOSE_WRITE: number;
  IN_CLOSE_NOWRITE: number;
  IN_OPEN: number;
  IN_MOVED_FROM: number;
  IN_MOVED_TO: number;
  IN_CREATE: number;
  IN_DELETE: number;
  IN_DELETE_SELF: number;
  IN_MOVE_SELF: number;
  IN_MASK_ADD: number;
  IN_ALL_EVENTS: number;
  IN_UNMOUNT: number;
  IN_Q_OVERFLOW: number;
  IN_IGNORED: number;
  IN_ONLYDIR: number;
  IN_ISDIR: number;
}

/** Flags of the *at syscalls the addon wraps: renameat2(2), openat2(2), unlinkat(2), open(2). */
export interface SyscallFlags {
  readonly [name: string]: number;
  RENAME_NOREPLACE: number;
  RENAME_EXCHANGE: number;
  RESOLVE_IN_ROOT: number;
  RESOLVE_BENEATH: number;
  RESOLVE_NO_MAGICLINKS: number;
  RESOLVE_NO_SYMLINKS: number;
  RESOLVE_NO_XDEV: number;
  AT_FDCWD: number;
  AT_REMOVEDIR: number;
  O_PATH: number;
}

/**
 * What readEntryAt found, in the `out` column the caller passes (native/entry_io.h), by its first slot.
 * The slots after it: mode, uid, gid, size, mtimeMs, and the length of a file's bytes.
 */
export const READ_KIND = { missing: 0, symlink: 1, notRegular: 2, tooLarge: 3, xattrsTooLarge: 4, file: 5 } as const;

/** Slots of readEntryAt's `out` column. */
export const READ_SLOTS = 7;

/**
 * One replacement as the addon reads it (native/entry_replace.cc), positional because the C++ side
 * reads it by index; built in one place from a named Replacement (fs/replace-batches.ts).
 */
export type ReplaceJobWire = [
  dirfd: number,
  tmp: string,
  name: string,
  bytes: Buffer,
  mode: number,
  uid: number,
  gid: number,
  xattrs: Array<[name: string, value: Buffer, optional: boolean]>,
  landing: number,
  expect: Buffer | undefined,
];

/** How a replacement landed: renamed over, exchanged, stale (a newer write was there), swapped (a newer write was swapped out and must go back), or unsupported (no RENAME_EXCHANGE). */
export type ReplaceOutcome = 'renamed' | 'exchanged' | 'stale' | 'swapped' | 'unsupported';

export interface NativeAddon {
  /** The watcher: inotify_init1 and the first inotify_add_watch in its constructor; events in columns. */
  InotifyWatcher: new (path: string, mask: number, onEvents: EventColumns) => InotifyWatcherHandle;
  /** openat2(2) with O_CLOEXEC added; returns the fd. */
  openat2(dirfd: number, path: string, flags: number, mode: number, resolve: number): number;
  renameat2(olddirfd: number, oldpath: string, newdirfd: number, newpath: string, flags: number): void;
  unlinkat(dirfd: number, path: string, flags: number): void;
  symlinkat(target: string, dirfd: number, path: string): void;
  /** A hard link `newpath` (relative to newdirfd) of the entry `oldpath`; never follows a symlink. */
  linkat(olddirfd: number, oldpath: string, newdirfd: number, newpath: string): void;
  readlinkat(dirfd: number, path: string): string;
  /** Every extended attribute of an open file (POSIX ACLs and SELinux labels are xattrs too). */
  xattrs(fd: number): Array<[string, Buffer]>;
  fsetxattr(fd: number, name: string, value: Buffer): void;
  /**
   * One entry read in one call (native/entry_io.h): lstat, open, fstat, bounded read, xattrs. What it
   * found goes in `out` (READ_KIND, then the stat), each xattr is appended to `xattrsOut`, and a file's
   * bytes are returned.
   */
  readEntryAt(dirfd: number, name: string, maxBytes: number, withXattrs: boolean, out: Float64Array, xattrsOut: Array<[string, Buffer]>): Buffer | undefined;
  /**
   * Temp files created, filled, fsynced and landed, one batch as one work item on libuv's pool
   * (native/entry_io.h); each job's landing or errno error, in order.
   */
  replaceEntriesAt(jobs: ReplaceJobWire[]): Promise<Array<ReplaceOutcome | Error>>;
  /** The same batch run on the calling thread (for a filesystem that never waits on a device: fs/memory-backed.ts). */
  replaceEntriesAtNow(jobs: ReplaceJobWire[]): Array<ReplaceOutcome | Error>;
  /** fstatfs(2)'s f_type of an open fd: the filesystem's magic number. */
  filesystemType(fd: number): number;
  /** SHA-256 in lowercase hex, by the OpenSSL Node links (native/digest.h). */
  sha256(data: Buffer | string): string;
  /** n bytes from getrandom(2). */
  getrandom(n: number): Buffer;
  /** flock(2) with LOCK_NB on an open fd: false when another open file description holds the lock. */
  flock(fd: number, exclusive: boolean): boolean;
  /** A blocking shared flock(2) on a thread of its own (never libuv's pool): settles once no other description holds LOCK_EX. */
  flockWait(fd: number): Promise<void>;
  /** _exit(2): ends the process without Node's teardown (native/exit_now.h says why). */
  exitNow(code: number): never;
  /** glibc's malloc_trim(0): free malloc memory back to the kernel (native/malloc_trim.h). */
  mallocTrim(): boolean;
  /** V8's memory-reducing full collection, now, on this thread (native/memory_pressure.h). */
  collectGarbageForMemory(): void;
  constants: InotifyMasks & SyscallFlags;
}

// The addon is built by node-gyp into <package root>/build/Release. This file runs from src/native
// (tests) or dist/src/native (the CLI), so look upwards for it rather than hard-coding the depth.
function load(): NativeAddon {
  const require = createRequire(import.meta.url);
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'build', 'Release', 'cni_chainer.node');
    if (existsSync(candidate)) return require(candidate) as NativeAddon;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cni-chainer: native addon not built (run `npm ci` or `npx node-gyp rebuild`)');
    dir = parent;
  }
}

/**
 * A read of the inotify fd as the addon hands it over: in columns (native/inotify_watcher.cc says why),
 * the names, and each event's wd, mask and cookie three by three in `fields`.
 */
export type EventColumns = (names: string[], fields: Int32Array, error?: NodeJS.ErrnoException) => void;

export type InotifyColumnsWatcher = new (path: string, mask: number, onEvents: EventColumns) => InotifyWatcherHandle;

/**
 * The addon as loaded. Its concerns have facades of their own: inotify.ts, fs-calls.ts, entry-io.ts,
 * digest.ts and exit.ts. Its constants are two sets, typed apart: inotify's masks (IN) and the
 * syscalls' flags (SYSCALL).
 */
export const addon: NativeAddon = load();
// Every Buffer the addon makes (a read's bytes, an xattr's value) has one hidden class: Node sets its
// prototype after V8 made it. None lives between two storms; keep one, empty (hidden-classes.ts).
keepHiddenClass(addon.getrandom(0));
/** inotify's event masks. */
export const IN: InotifyMasks = addon.constants;
/** The rename, resolve, at and open flags of the addon's syscalls. */
export const SYSCALL: SyscallFlags = addon.constants;
/** The addon's watcher, its events in columns. */
export const InotifyColumns = addon.InotifyWatcher as unknown as InotifyColumnsWatcher;
