// The host's root as mounted in the container: host paths map to disk paths below it, and symlinks
// inside it are resolved with resolveInRoot so that nothing outside it is ever read or written.
import { lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { isMissing } from './errno.js';
import { resolveInRoot, type Entry, type Resolution } from './resolve-in-root.js';

export class HostRoot {
  constructor(readonly dir: string) {}

  /** `/etc/cni/net.d` → `<prefix>/etc/cni/net.d`. */
  toDisk(hostPath: string): string {
    const joined = path.join(this.dir, hostPath);
    return joined.length > 1 && joined.endsWith('/') ? joined.slice(0, -1) : joined;
  }

  /** `<prefix>/etc/x` → `/etc/x`, for logs and reports. */
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

  /**
   * A directory's disk path with the symlinks on its way resolved inside the root: some hosts make
   * /etc/cni/net.d itself a link (to /var/lib/...), which must mean the host's /var/lib, never the
   * container's. A directory that does not exist (yet) keeps its plain path.
   */
  dirOnDisk(hostPath: string): string {
    const resolved = this.resolve(hostPath);
    return resolved.ok && resolved.kind === 'dir' ? this.toDisk(resolved.path) : this.toDisk(hostPath);
  }

  resolve(hostPath: string): Resolution {
    return resolveInRoot(hostPath, this.lookup);
  }
}
