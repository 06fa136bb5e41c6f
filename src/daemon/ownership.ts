// Which instance maintains the node. During a DaemonSet upgrade with maxSurge the old and the new pod
// run side by side; the newest writes its id into the owner file, and an instance that is no longer
// the owner neither patches nor cleans up, so the old pod's SIGTERM cannot undo the new pod's work.
// The file is hidden and has no CNI extension, so no runtime ever loads it.
//
// The owner renews the file's heartbeat (a rewrite every HEARTBEAT_MS). An instance that stood down
// takes the node back when the owner file is removed (the newer pod's clean exit) or its heartbeat is
// older than STALE_AFTER_MS (the newer pod was killed): a rollback never leaves a node unmaintained.
import { closeSync, constants, futimesSync } from 'node:fs';
import { writeFileAtomic } from '../fs/atomic-write.js';
import { randomUuid } from '../random-uuid.js';
import { readEntry } from '../fs/bounded-read.js';
import { withDir, withDirSync } from '../fs/dir.js';
import { errnoCode } from '../fs/errno.js';
import type { HostRoot } from '../fs/host-root.js';

export const OWNER_FILE_NAME = '.cni-chainer.owner';
export const HEARTBEAT_MS = 2_000;
export const STALE_AFTER_MS = 10_000;
const MAX_OWNER_BYTES = 4096;

export interface OwnerRecord {
  instance: string;
  pid: number;
  startedAt: string;
}

export interface Owner {
  instance: string;
  /** When the owner last wrote the file (its mtime). */
  heartbeatAt: number;
}

export class Ownership {
  readonly record: OwnerRecord = { instance: randomUuid(), pid: process.pid, startedAt: new Date().toISOString() };

  constructor(
    private readonly root: HostRoot,
    private readonly netDir: string,
  ) {}

  /** The current owner; undefined when there is no (readable, regular) owner file. */
  currentOwner(): Owner | undefined {
    try {
      return withDirSync(this.root.openDir(this.netDir), (dir) => {
        // Bounded, non-blocking and no-follow: a FIFO or a link to /dev/zero here must not stall us.
        const read = readEntry(dir, OWNER_FILE_NAME, MAX_OWNER_BYTES);
        if (read.kind !== 'file') return undefined;
        const parsed = JSON.parse(read.bytes.toString('utf8')) as Partial<OwnerRecord>;
        return typeof parsed.instance === 'string' ? { instance: parsed.instance, heartbeatAt: read.stat.mtimeMs } : undefined;
      });
    } catch {
      return undefined; // no net.d, or not JSON: nobody (readable) owns the node
    }
  }

  /** True when `owner` is another instance that is still alive (its heartbeat is recent). */
  isLiveOther(owner: Owner | undefined, now = Date.now()): boolean {
    return owner !== undefined && owner.instance !== this.record.instance && now - owner.heartbeatAt < STALE_AFTER_MS;
  }

  /** Writes (or renews) our claim. */
  async claim(): Promise<void> {
    await withDir(this.root.openDir(this.netDir), (dir) => writeFileAtomic(dir, OWNER_FILE_NAME, `${JSON.stringify(this.record)}\n`, { mode: 0o644 }));
  }

  /**
   * The heartbeat: our claim's mtime set to now. A touch, not a rewrite (no temp file, no fsync): the
   * idle agent's only periodic work. Throws when the file is gone (or is a link): the caller claims.
   */
  renew(): void {
    withDirSync(this.root.openDir(this.netDir), (dir) => {
      const fd = dir.openEntry(OWNER_FILE_NAME, constants.O_RDONLY);
      try {
        const now = new Date();
        futimesSync(fd, now, now);
      } finally {
        closeSync(fd);
      }
    });
  }

  /** Removes the owner file if it is still ours. */
  release(): void {
    if (this.currentOwner()?.instance === this.record.instance) this.remove();
  }

  /** Removes the owner file whoever owns it (`uninstall`: the operator's explicit word). */
  remove(): void {
    try {
      withDirSync(this.root.openDir(this.netDir), (dir) => dir.unlink(OWNER_FILE_NAME));
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT' && errnoCode(err) !== 'ENOTDIR') throw err;
    }
  }
}
