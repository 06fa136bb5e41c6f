// Reading a file that anybody on the node may have put in our way. The open never blocks (a FIFO opens
// at once with O_NONBLOCK and fstat shows what it is), never follows a symlink (a link to /dev/zero is
// a link, not a file), and the read stops at a bound: nothing in net.d can stall the event loop or
// exhaust memory (DESIGN §3 "Fights and failures").
import { closeSync, constants, fstatSync, readSync, type Stats } from 'node:fs';
import { addon } from '../watch/addon.js';
import type { Dir } from './dir.js';
import { errnoCode } from './errno.js';

export type EntryRead =
  | { kind: 'file'; bytes: Buffer; stat: Stats; xattrs: Array<[string, Buffer]> }
  | { kind: 'missing' }
  | { kind: 'symlink' }
  | { kind: 'not-regular'; stat: Stats }
  | { kind: 'too-large'; size: number };

/** Reads at most `maxBytes` of regular file `name` in `dir`, with its xattrs when asked. */
export function readEntry(dir: Dir, name: string, maxBytes: number, withXattrs = false): EntryRead {
  let fd: number;
  try {
    fd = dir.openEntry(name, constants.O_RDONLY);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') return { kind: 'missing' };
    if (code === 'ELOOP') return { kind: 'symlink' }; // O_NOFOLLOW met a link
    if (code === 'ENXIO' || code === 'ENODEV' || code === 'EISDIR') return { kind: 'not-regular', stat: dir.lstat(name)! };
    throw err;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return { kind: 'not-regular', stat };
    if (stat.size > maxBytes) return { kind: 'too-large', size: stat.size };
    // The file may grow between fstat and read: read one byte past the bound to notice.
    const buffer = Buffer.allocUnsafe(Math.min(stat.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      if (length === buffer.length) {
        if (length > maxBytes) return { kind: 'too-large', size: length };
        break;
      }
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    if (length > maxBytes) return { kind: 'too-large', size: length };
    return { kind: 'file', bytes: buffer.subarray(0, length), stat, xattrs: withXattrs ? addon.xattrs(fd) : [] };
  } finally {
    closeSync(fd);
  }
}
