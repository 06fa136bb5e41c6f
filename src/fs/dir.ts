// An open directory, and every file operation the agent does relative to it. A directory is resolved
// once (by HostRoot, inside the host root) and every create, exchange, rename, unlink and symlink then
// names an entry of *that* directory inode: a path component swapped for a symlink afterwards cannot
// redirect the operation anywhere else (docs/design.md, Writing).
import { isUtf8 } from 'node:buffer';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, type Stats } from 'node:fs';
import { keepHiddenClass } from '../hidden-classes.js';
import { TurnMemo } from '../turn-memo.js';
import { SYSCALL } from '../native/addon.js';
import { fsCalls } from '../native/fs-calls.js';
import { errnoCode } from './errno.js';
import { isMemoryBacked } from './memory-backed.js';

// Entry names only: RESOLVE_BENEATH refuses `..` and absolute names, RESOLVE_NO_SYMLINKS a link.
const ENTRY_ONLY = SYSCALL.RESOLVE_BENEATH | SYSCALL.RESOLVE_NO_SYMLINKS | SYSCALL.RESOLVE_NO_MAGICLINKS;

let openat2Works: boolean | undefined;

/** False on kernels before 5.6 (openat2 answers ENOSYS): the agent then says so once at start. */
export function kernelHasOpenat2(): boolean {
  if (openat2Works === undefined) {
    try {
      closeSync(fsCalls.openat2(SYSCALL.AT_FDCWD, '/', constants.O_RDONLY | constants.O_DIRECTORY, 0, 0));
      openat2Works = true;
    } catch (err) {
      if (errnoCode(err) !== 'ENOSYS') throw err;
      openat2Works = false;
    }
  }
  return openat2Works;
}

/** Per directory (disk path), the names of its entries that are not UTF-8, as listed in this turn. */
const undecodableThisTurn = new TurnMemo<string, ReadonlySet<string>>();

/** Where a directory's files live: only in memory (tmpfs, ramfs), or on a device that fsync waits for. */
export type Backing = 'memory' | 'device';

export class Dir {
  private closed = false;
  /** Asked once per Dir: an open directory's filesystem never changes. */
  private backingFound: Backing | undefined = undefined;

  /** `fd` is owned by the Dir from now on; `disk` names it in logs and keys shared directory fsyncs. */
  constructor(
    readonly fd: number,
    readonly disk: string,
  ) {}

  /** A directory opened by its path, no containment: for callers that own the whole path (tests). */
  static open(disk: string): Dir {
    return new Dir(openSync(disk, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NONBLOCK), disk);
  }

  /** The magic link to this fd's inode: paths through it stay in this directory, whatever was renamed. */
  private viaFd(name = ''): string {
    return `/proc/self/fd/${this.fd}${name === '' ? '' : `/${name}`}`;
  }

  /**
   * Opens entry `name` without following a symlink and without blocking (a FIFO or a device opens at
   * once, and fstat then tells what it is). Throws ELOOP for a symlink.
   */
  openEntry(name: string, flags: number, mode = 0): number {
    const all = flags | constants.O_NOFOLLOW | constants.O_NONBLOCK;
    return this.call(name, () => (kernelHasOpenat2() ? fsCalls.openat2(this.fd, name, all, mode, ENTRY_ONLY) : openSync(this.viaFd(name), all, mode)));
  }

  /** Whether this directory's filesystem waits on a device (fs/memory-backed.ts). */
  get backing(): Backing {
    return (this.backingFound ??= isMemoryBacked(this.fd) ? 'memory' : 'device');
  }

  /** Runs a syscall on entry `name`; a failure names the entry by its full path, as fs errors do. */
  call<T>(name: string, syscall: () => T): T {
    try {
      return syscall();
    } catch (err) {
      throw this.naming(name, err);
    }
  }

  /** lstat of an entry; undefined when it does not exist. */
  lstat(name: string): Stats | undefined {
    let fd: number;
    try {
      fd = kernelHasOpenat2()
        ? fsCalls.openat2(this.fd, name, SYSCALL.O_PATH | constants.O_NOFOLLOW, 0, ENTRY_ONLY)
        : openSync(this.viaFd(name), SYSCALL.O_PATH | constants.O_NOFOLLOW);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return undefined;
      throw err;
    }
    try {
      return fstatSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  /** `err` naming entry `name` by its full path, as fs errors do. */
  naming(name: string, err: unknown): unknown {
    if (typeof err === 'object' && err !== null) (err as NodeJS.ErrnoException).path = `${this.disk}/${name}`;
    return err;
  }

  rename(from: string, to: string, flags = 0): void {
    this.call(to, () => fsCalls.renameat2(this.fd, from, this.fd, to, flags));
  }

  unlink(name: string): void {
    this.call(name, () => fsCalls.unlinkat(this.fd, name, 0));
  }

  /** Unlinks each of `names` that exists; returns those it removed. */
  unlinkExisting(names: Iterable<string>): string[] {
    const removed: string[] = [];
    for (const name of names) {
      try {
        this.unlink(name);
        removed.push(name);
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT') throw err;
      }
    }
    return removed;
  }

  /** A hard link `to` of entry `from`, both in this directory (never through a symlink). */
  link(from: string, to: string): void {
    this.call(to, () => fsCalls.linkat(this.fd, from, this.fd, to));
  }

  symlink(target: string, name: string): void {
    this.call(name, () => fsCalls.symlinkat(target, this.fd, name));
  }

  readlink(name: string): string {
    return this.call(name, () => fsCalls.readlinkat(this.fd, name));
  }

  /** Creates directory `name` here (mkdirat through the fd's magic link: Node has no mkdirat). */
  mkdir(name: string, mode = 0o755): void {
    this.call(name, () => mkdirSync(this.viaFd(name), { mode }));
  }

  list(): string[] {
    return readdirSync(this.viaFd());
  }

  /**
   * True when an entry of this directory is named by bytes that are not UTF-8 and decode to `name`.
   * Names reach JavaScript decoded (readdir, inotify), each invalid sequence as U+FFFD, so such an
   * entry cannot be opened by the name the agent has; libcni, which takes names as bytes, loads it
   * all the same. Only a name with U+FFFD in it can be one.
   */
  hasUndecodable(name: string): boolean {
    if (!name.includes('\uFFFD')) return false;
    // One listing per directory serves every pass of this event-loop turn (each pass may hold its own
    // Dir of it): a scan of thousands of such names would otherwise list the directory once per name
    // (measured: 5,000 of them held the first scan for 21 s). An entry created later brings its own
    // event, handled in a later turn, which lists again.
    const names = undecodableThisTurn.get(this.disk, () => {
      const found = new Set<string>();
      for (const raw of readdirSync(this.viaFd(), { encoding: 'buffer' })) if (!isUtf8(raw)) found.add(raw.toString('utf8'));
      return found;
    });
    return names.has(name);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}

// Every Dir is closed and collected between two storms: keep the hidden class (hidden-classes.ts). It
// is never opened, and never closed.
keepHiddenClass(new Dir(-1, ''));

/** Runs `fn` with `dir`, closing it afterwards whatever happens. */
export function withDirSync<T>(dir: Dir, fn: (dir: Dir) => T): T {
  try {
    return fn(dir);
  } finally {
    dir.close();
  }
}

/** withDirSync for asynchronous work: the directory stays open until `fn` settles. */
export async function withDir<T>(dir: Dir, fn: (dir: Dir) => Promise<T> | T): Promise<T> {
  try {
    return await fn(dir);
  } finally {
    dir.close();
  }
}
