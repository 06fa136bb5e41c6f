// The host's root as mounted in the container: host paths map to disk paths below it. Directories are
// opened by the kernel inside it (openat2 RESOLVE_IN_ROOT from an fd on the root: an absolute link
// means the host's root, `..` stops there, and a component swapped mid-lookup cannot escape), and
// every write then happens relative to such a directory fd (fs/dir.ts). resolveInRoot follows the same
// rules in userland: it tells which host path a symlinked config ends at, for watching and reports,
// and it is the confinement itself only on kernels without openat2.
import { closeSync, constants, fstatSync, lstatSync, openSync, readlinkSync, type Stats } from 'node:fs';
import path from 'node:path';
import { SYSCALL } from '../native/addon.js';
import { fsCalls } from '../native/fs-calls.js';
import { Dir, kernelHasOpenat2, withDirSync } from './dir.js';
import { errnoCode, isMissing } from './errno.js';
import { MountedHostPaths } from './mounted-host-paths.js';
import { resolveInRoot, type Entry, type Resolution } from './resolve-in-root.js';

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NONBLOCK;

export class HostRoot {
  private rootFd: number | undefined;
  private mountedPaths: MountedHostPaths | undefined;

  constructor(readonly dir: string) {}

  /** Which host paths this container can see (fs/mounted-host-paths.ts); read once. */
  get mounts(): MountedHostPaths {
    this.mountedPaths ??= new MountedHostPaths(this.dir);
    return this.mountedPaths;
  }

  /** True when directories are resolved by the kernel (openat2); false: the userland fallback. */
  get kernelConfined(): boolean {
    return kernelHasOpenat2();
  }

  /**
   * Opens the directory at `hostPath` inside the root. Throws ENOENT/ENOTDIR/ELOOP like open(2) when it
   * does not resolve to a directory inside the root.
   */
  openDir(hostPath: string, disk?: string): Dir {
    if (this.kernelConfined) {
      const fd = this.openInRoot(hostPath, DIR_FLAGS);
      // The disk path only names the directory (logs, shared fsyncs): a caller that knows it saves
      // the userland lookup; the confinement is the kernel's either way.
      if (disk !== undefined) return new Dir(fd, disk);
      const resolved = this.resolve(hostPath);
      return new Dir(fd, this.toDisk(resolved.ok ? resolved.path : hostPath));
    }
    const resolved = this.resolve(hostPath);
    if (!resolved.ok) throw Object.assign(new Error(`${resolved.code}: cannot resolve ${hostPath} inside the host root`), { code: resolved.code, path: hostPath });
    const resolvedDisk = this.toDisk(resolved.path);
    return new Dir(openSync(resolvedDisk, DIR_FLAGS | constants.O_NOFOLLOW), resolvedDisk);
  }

  /**
   * lstat of the entry at `hostPath` as the kernel resolves it inside the root (its last component
   * not followed); undefined when it does not resolve to an entry. Throws what open(2) throws else.
   * One openat2 of the whole path (O_PATH), one fstat and one close: half of what opening the parent
   * as a Dir and lstat-ing the entry in it costs (the plugin binary's look, daemon/node/plugin-binary.ts).
   */
  lstat(hostPath: string): Stats | undefined {
    if (!this.kernelConfined) return withDirSync(this.openDir(path.posix.dirname(hostPath)), (dir) => dir.lstat(path.posix.basename(hostPath)));
    let fd: number;
    try {
      fd = this.openInRoot(hostPath, SYSCALL.O_PATH | constants.O_NOFOLLOW);
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    try {
      return fstatSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  /** openat2 of `hostPath` from the root's fd, resolved by the kernel inside the root. */
  private openInRoot(hostPath: string, flags: number): number {
    this.rootFd ??= openSync(this.dir, DIR_FLAGS);
    const relative = hostPath === '/' ? '.' : hostPath.slice(1);
    return fsCalls.openat2(this.rootFd, relative, flags, 0, SYSCALL.RESOLVE_IN_ROOT | SYSCALL.RESOLVE_NO_MAGICLINKS);
  }

  /** `/etc/cni/net.d` -> `<prefix>/etc/cni/net.d`. */
  toDisk(hostPath: string): string {
    const joined = path.join(this.dir, hostPath);
    return joined.length > 1 && joined.endsWith('/') ? joined.slice(0, -1) : joined;
  }

  /** `<prefix>/etc/x` -> `/etc/x`, for logs and reports. */
  fromDisk(diskPath: string): string {
    return `/${path.relative(this.dir, diskPath)}`;
  }

  /** The disk-backed lookup resolveInRoot needs: lstat and readlink below the root, nothing else. */
  readonly lookup = (hostPath: string): Entry => {
    const disk = this.toDisk(hostPath);
    try {
      const st = lstatSync(disk);
      if (st.isSymbolicLink()) return { kind: 'symlink', target: readlinkSync(disk) };
      if (st.isFile()) return { kind: 'file' };
      if (st.isDirectory()) return { kind: 'dir' };
      return { kind: 'other' };
    } catch (err) {
      if (isMissing(err)) return { kind: 'missing' };
      throw err;
    }
  };

  /** The disk path of a directory inside the root, created (inside the root) when missing. */
  ensureDir(hostPath: string): string {
    // One missing level at a time, each created inside its parent as the kernel resolved it inside
    // the root: an absolute symlink on the way (/opt/cni/bin -> /x) means the host's /x, never the
    // container's.
    for (let level = 0; level < 64; level++) {
      const disk = this.dirOnDisk(hostPath);
      if (disk !== undefined) return disk;
      const resolved = this.resolve(hostPath);
      if (resolved.ok || resolved.code !== 'ENOENT') break;
      const parent = this.openDir(path.posix.dirname(resolved.path));
      try {
        parent.mkdir(path.posix.basename(resolved.path));
      } catch (err) {
        if (errnoCode(err) !== 'EEXIST') throw err;
      } finally {
        parent.close();
      }
    }
    throw Object.assign(new Error(`${hostPath} is not a directory inside the host root`), { code: 'ENOTDIR' });
  }

  /**
   * A directory's disk path with the symlinks on its way resolved inside the root: some hosts make
   * /etc/cni/net.d itself a link (to /var/lib/...), which must mean the host's /var/lib, never the
   * container's. Undefined when it does not resolve to a directory inside the root: the plain path
   * would let the container's own resolution follow an absolute link out of the root.
   */
  dirOnDisk(hostPath: string): string | undefined {
    const resolved = this.resolve(hostPath);
    return resolved.ok && resolved.kind === 'dir' ? this.toDisk(resolved.path) : undefined;
  }

  resolve(hostPath: string): Resolution {
    return resolveInRoot(hostPath, this.lookup);
  }
}
