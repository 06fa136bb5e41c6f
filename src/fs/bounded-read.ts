// Reading a file that anybody on the node may have put in our way. Only a regular file is opened (a
// FIFO or a device is reported from lstat: opening a device can have side effects, and reading a FIFO
// blocks), a symlink is never followed (a link to /dev/zero is a link, not a file), and the read stops
// at a bound: nothing in net.d can stall the event loop or exhaust memory (docs/design.md, A
// pass). The whole sequence (lstat, open, fstat, read, xattrs, close) is one call into the addon
// (native/entry_io.h): through Node's fs it was six calls and a Stats object per file.
import { entryIo, READ_KIND, READ_SLOTS } from '../native/entry-io.js';
import type { Dir } from './dir.js';

/** What a read tells of the file besides its bytes. */
export interface EntryStat {
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtimeMs: number;
}

export type EntryRead =
  | { kind: 'file'; bytes: Buffer; stat: EntryStat; xattrs: Array<[string, Buffer]> }
  | { kind: 'missing' }
  | { kind: 'symlink' }
  | { kind: 'not-regular'; stat: EntryStat }
  /** Over maxBytes, or (xattrsOver) extended attributes over what the agent reads and copies. */
  | { kind: 'too-large'; size: number; xattrsOver?: true };

/** What a replacement of a file keeps of it: its mode (permission and set-id bits), owner and xattrs. */
export interface FileOwner {
  mode: number;
  uid: number;
  gid: number;
  xattrs: Array<[string, Buffer]>;
}

/** The owner a rewrite of `read`'s file gives the new version: the same as the old one's. */
export function ownerOf(read: Extract<EntryRead, { kind: 'file' }>): FileOwner {
  return { mode: read.stat.mode & 0o7777, uid: read.stat.uid, gid: read.stat.gid, xattrs: read.xattrs };
}

// readEntryAt's result column, reused by every read: the event loop reads one file at a time.
const found = new Float64Array(READ_SLOTS);

/** Reads at most `maxBytes` of regular file `name` in `dir`, with its extended attributes when asked. */
export function readEntry(dir: Dir, name: string, maxBytes: number, options: { xattrs?: boolean } = {}): EntryRead {
  const xattrs: Array<[string, Buffer]> = [];
  const bytes = dir.call(name, () => entryIo.readEntryAt(dir.fd, name, maxBytes, options.xattrs === true, found, xattrs));
  switch (found[0]) {
    case READ_KIND.missing:
      return { kind: 'missing' };
    case READ_KIND.symlink:
      return { kind: 'symlink' };
    case READ_KIND.tooLarge:
      return { kind: 'too-large', size: found[4]! };
    case READ_KIND.xattrsTooLarge:
      return { kind: 'too-large', size: found[4]!, xattrsOver: true };
  }
  const stat: EntryStat = { mode: found[1]!, uid: found[2]!, gid: found[3]!, size: found[4]!, mtimeMs: found[5]! };
  if (found[0] === READ_KIND.notRegular) return { kind: 'not-regular', stat };
  return { kind: 'file', bytes: bytes!.subarray(0, found[6]!), stat, xattrs };
}
