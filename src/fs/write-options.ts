// What a crash-safe write is asked to do (fs/atomic-write.ts), and what both of its paths, the
// addon's batch and the step-by-step one (fs/stepwise-write.ts), derive from it the same way: the
// temp file's name and the owner to give it.
import { contentHash } from './content-hash.js';
import { tempNameFor } from './temp-names.js';

export interface AtomicWriteOptions {
  mode: number;
  uid?: number;
  gid?: number;
  /** Extended attributes to give the new file (the old file's, read with it). */
  xattrs?: ReadonlyArray<[string, Buffer]>;
  /** Replace only while the file still holds exactly these bytes (the content read before patching). */
  expect?: Buffer;
  /** Create only: never replace an existing entry ('stale' if one appeared). */
  noReplace?: boolean;
  /** Modification time to give the new file (copied binaries keep their source's, to compare cheaply). */
  mtime?: Date;
  /** contentHash(expect), when the caller has it already (it names the temp file). */
  expectHash?: string;
  /**
   * A temp file already made with these bytes and options (createTemp: a spare, daemon/keepers/spares.ts):
   * only its landing is left to do.
   */
  prepared?: string;
}

/** Fills the temp file itself (a streamed copy), instead of a buffer held in memory. */
export type Filler = (fd: number) => Promise<void>;

export type WriteResult = 'written' | 'stale';

// Labels a process may be refused without anything being lost that the primary relies on: SELinux and
// trusted.* need privileges a filesystem or policy may not grant; user.* and ACLs must be kept.
export const OPTIONAL_XATTR = /^(security|trusted)\./;

/** The temp name for a write of `name`: it carries the hash of the content it expects to replace. */
export function tempFor(name: string, options: AtomicWriteOptions): string {
  return tempNameFor(name, options.expect === undefined ? 'new' : (options.expectHash ?? contentHash(options.expect)));
}

// The agent's own identity does not change while it runs.
const OWN_UID = process.getuid?.() ?? -1;
const OWN_GID = process.getgid?.() ?? -1;

/** The owner to give a new file, or -1 for "as created" (the agent's own, which a chown would not change). */
export function ownerIds(options: AtomicWriteOptions): { uid: number; gid: number } {
  const { uid, gid } = options;
  if (uid === undefined || gid === undefined || (uid === OWN_UID && gid === OWN_GID)) return { uid: -1, gid: -1 };
  return { uid, gid };
}
