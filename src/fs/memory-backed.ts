// Whether a directory's filesystem keeps its files in memory only: tmpfs and ramfs. There a write is a
// copy into the page cache and fsync returns at once (mm/shmem.c and fs/ramfs use noop_fsync), so no
// step of a replacement (create, write, xattrs, fsync, exchange, unlink, the directory's fsync) waits
// on a device, and a batch of them costs the syscalls alone: tens of microseconds, less than the two
// thread hand-offs of a trip through libuv's pool (fs/replace-batches.ts). Every other filesystem may
// wait on a disk or a network at any of those steps, and its replacements go to the pool.
//
// Net.d on tmpfs is a real layout: Bottlerocket mounts /etc as a tmpfs filled at boot.
import { fsCalls } from '../native/fs-calls.js';

// statfs(2)'s f_type values (linux/magic.h).
const TMPFS_MAGIC = 0x01021994;
const RAMFS_MAGIC = 0x858458f6;

/** True when the open fd `fd` is on tmpfs or ramfs. */
export function isMemoryBacked(fd: number): boolean {
  const type = fsCalls.filesystemType(fd);
  return type === TMPFS_MAGIC || type === RAMFS_MAGIC;
}
