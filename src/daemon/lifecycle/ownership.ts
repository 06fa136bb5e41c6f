// Which instance maintains the node. During a DaemonSet upgrade with maxSurge the old and the new pod
// run side by side; the newest writes its id into the owner file, and an instance that is no longer
// the owner neither patches nor cleans up, so the old pod's SIGTERM cannot undo the new pod's work.
// The file is hidden and has no CNI extension, so no runtime ever loads it.
//
// Liveness is a lock, not a heartbeat: the owner holds flock(LOCK_EX) on the owner file it wrote, and
// the kernel drops that lock the moment its holder dies, SIGKILL and OOM kill included (flock(2): the
// lock belongs to the open file description). So an idle node sees no write in net.d at all, which
// matters because containerd and CRI-O reload on every write there and Cilium's watcher re-runs on
// every event. A standby blocks in flock(LOCK_SH) on the owner's file (one pool thread), and takes the
// node back as soon as that returns. Both pods see the same inode through their hostPath mounts, and
// flock works across mount namespaces.
//
// The lock is held on a descriptor opened read-only (flock(2) needs no write access): a descriptor
// open for writing would make an administrator's `mount -o remount,ro` of net.d fail with EBUSY.
import { closeSync, constants, fstatSync, readSync, writeSync } from 'node:fs';
import { tempNameFor } from '../../fs/temp-names.js';
import { randomUuid } from '../../random-uuid.js';
import { withDirSync } from '../../fs/dir.js';
import { errnoCode } from '../../fs/errno.js';
import type { HostRoot } from '../../fs/host-root.js';
import { fsCalls } from '../../native/fs-calls.js';

export const OWNER_FILE_NAME = '.cni-chainer.owner';
/**
 * A standby holds LOCK_SH on this file while it waits to take the node back: the owner that stops
 * sees it (its LOCK_EX is refused) and hands the node over instead of unchaining it.
 */
export const STANDBY_FILE_NAME = '.cni-chainer.standby';
const MAX_OWNER_BYTES = 4096;

export interface OwnerRecord {
  instance: string;
  pid: number;
  startedAt: string;
  /** How the owner says it is alive: by holding flock(LOCK_EX) on this file. */
  liveness: 'flock';
}

export interface Owner {
  instance: string;
  /** True when the owner still runs: it holds the lock. */
  alive: boolean;
  /** The owner file's inode: a standby waits on one lock per inode. */
  ino: number;
}

export class Ownership {
  readonly record: OwnerRecord = { instance: randomUuid(), pid: process.pid, startedAt: new Date().toISOString(), liveness: 'flock' };
  /** The fd of the owner file we wrote, holding LOCK_EX while we own the node. */
  private lockFd: number | undefined;

  constructor(
    private readonly root: HostRoot,
    private readonly netDir: string,
  ) {}

  /** The fd of the standby file, holding LOCK_SH while this instance stands by. */
  private standbyFd: number | undefined;

  /** This instance stands by: say so to the owner, by a shared lock the kernel drops if we die. */
  holdStandbyLock(): void {
    if (this.standbyFd !== undefined) return;
    // Unwritable net.d, or not a file: the owner then sees no standby and cleans up as without one.
    const fd = this.openInNetDir(STANDBY_FILE_NAME, constants.O_RDONLY | constants.O_CREAT, 0o644);
    if (fd === undefined) return;
    try {
      if (fstatSync(fd).isFile() && fsCalls.flock(fd, false)) {
        this.standbyFd = fd;
        return;
      }
    } catch {
      // refused: as above
    }
    closeSync(fd);
  }

  dropStandbyLock(): void {
    if (this.standbyFd === undefined) return;
    closeSync(this.standbyFd);
    this.standbyFd = undefined;
  }

  /** True when another instance stands by on this node (holds the standby file's shared lock). */
  standbyWaiting(): boolean {
    // Our own shared lock would refuse the exclusive one too: only another instance's counts.
    if (this.standbyFd !== undefined) return false;
    const fd = this.openInNetDir(STANDBY_FILE_NAME, constants.O_RDONLY);
    if (fd === undefined) return false;
    try {
      return fstatSync(fd).isFile() && !fsCalls.flock(fd, true);
    } catch {
      return false;
    } finally {
      closeSync(fd);
    }
  }

  /** True while this instance holds its claim's lock. */
  get claimed(): boolean {
    return this.lockFd !== undefined;
  }

  /** The owner file, opened; undefined when there is none (or no net.d: nobody owns the node). */
  private openOwnerFile(): number | undefined {
    return this.openInNetDir(OWNER_FILE_NAME, constants.O_RDONLY);
  }

  /** Entry `name` of net.d, opened; undefined when it cannot be (missing, a link, no net.d). */
  private openInNetDir(name: string, flags: number, mode?: number): number | undefined {
    try {
      // Non-blocking and no-follow (Dir.openEntry): a FIFO or a link to /dev/zero here must not stall us.
      return withDirSync(this.root.openDir(this.netDir), (dir) => dir.openEntry(name, flags, mode));
    } catch {
      return undefined;
    }
  }

  /** The current owner; undefined when there is no (readable, regular) owner file. */
  currentOwner(): Owner | undefined {
    const fd = this.openOwnerFile();
    if (fd === undefined) return undefined;
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.size > MAX_OWNER_BYTES) return undefined;
      const buffer = Buffer.alloc(MAX_OWNER_BYTES);
      const length = readSync(fd, buffer, 0, MAX_OWNER_BYTES, 0);
      let parsed: Partial<OwnerRecord>;
      try {
        parsed = JSON.parse(buffer.subarray(0, length).toString('utf8')) as Partial<OwnerRecord>;
      } catch {
        return undefined; // not JSON: nobody (readable) owns the node
      }
      if (typeof parsed.instance !== 'string') return undefined;
      // Alive only while something holds the exclusive lock, whatever the record says of itself: a
      // shared lock we can take means nobody does. Closing the fd below drops our shared lock at once.
      const alive = parsed.instance === this.record.instance ? this.lockFd !== undefined : !fsCalls.flock(fd, false);
      return { instance: parsed.instance, alive, ino: st.ino };
    } catch {
      return undefined; // unreadable (EIO, a lock refused): nobody readable owns the node
    } finally {
      closeSync(fd);
    }
  }

  /** True when `owner` is another instance that is still alive. */
  isLiveOther(owner: Owner | undefined): boolean {
    return owner !== undefined && owner.instance !== this.record.instance && owner.alive;
  }

  /**
   * Writes our claim: a new owner file, locked before it is renamed into place, so that no standby
   * can ever find it unlocked and take the node from a live owner.
   */
  claim(): void {
    withDirSync(this.root.openDir(this.netDir), (dir) => {
      const temp = tempNameFor(OWNER_FILE_NAME);
      const writer = dir.openEntry(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
      let lock: number | undefined;
      try {
        writeSync(writer, `${JSON.stringify(this.record)}\n`);
        // The lock is taken on a read-only descriptor of the same file, and the writer is closed.
        lock = dir.openEntry(temp, constants.O_RDONLY);
        if (!fsCalls.flock(lock, true)) throw new Error('a new owner file is locked by another process');
        dir.rename(temp, OWNER_FILE_NAME);
      } catch (err) {
        if (lock !== undefined) closeSync(lock);
        try {
          dir.unlink(temp);
        } catch {
          // already gone
        }
        throw err;
      } finally {
        closeSync(writer);
      }
      this.dropLock();
      this.lockFd = lock;
    });
  }

  /**
   * Resolves once the owner that holds the current owner file's lock is gone (or the file changed):
   * a blocking shared lock on a thread of its own (native/owner_lock.cc). Undefined when there is nothing to wait
   * for (no file, or its lock is free already).
   */
  ownerGone(): { ino: number; gone: Promise<void> } | undefined {
    const fd = this.openOwnerFile();
    if (fd === undefined) return undefined;
    const st = fstatSync(fd);
    if (!st.isFile() || fsCalls.flock(fd, false)) {
      closeSync(fd);
      return undefined;
    }
    const gone = fsCalls.flockWait(fd).finally(() => closeSync(fd));
    return { ino: st.ino, gone };
  }

  /** Lets go of our claim's lock (we stood down, or we stop). */
  dropLock(): void {
    if (this.lockFd === undefined) return;
    closeSync(this.lockFd);
    this.lockFd = undefined;
  }

  /** Removes the owner file if it is still ours, then drops the lock. */
  release(): void {
    const owner = this.currentOwner();
    if (owner?.instance === this.record.instance) this.remove();
    else this.removeUnusedStandbyFile();
    this.dropLock();
  }

  /** Nobody stands by (nor do we): the standby file goes too, and net.d holds nothing of ours. */
  private removeUnusedStandbyFile(): void {
    if (this.standbyFd !== undefined || this.standbyWaiting()) return;
    try {
      withDirSync(this.root.openDir(this.netDir), (dir) => dir.unlinkExisting([STANDBY_FILE_NAME]));
    } catch {
      // net.d gone or unwritable: a leftover empty hidden file breaks nothing
    }
  }

  /** Removes the owner file whoever owns it (`uninstall`: the operator's explicit word). */
  remove(): void {
    try {
      withDirSync(this.root.openDir(this.netDir), (dir) => dir.unlink(OWNER_FILE_NAME));
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT' && errnoCode(err) !== 'ENOTDIR') throw err;
    }
    this.removeUnusedStandbyFile();
  }
}
