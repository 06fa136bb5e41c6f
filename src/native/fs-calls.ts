// The addon's file syscalls that Node does not expose (native/fs_at.h, native/owner_lock.h): the
// *at calls relative to a directory fd, xattrs, flock.
import { addon, type NativeAddon } from './addon.js';

export type FsCalls = Pick<NativeAddon, 'openat2' | 'renameat2' | 'unlinkat' | 'symlinkat' | 'linkat' | 'readlinkat' | 'xattrs' | 'fsetxattr' | 'flock' | 'flockWait' | 'filesystemType'>;
export const fsCalls: FsCalls = addon;
