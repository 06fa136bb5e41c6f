// renameat2(RENAME_EXCHANGE) as a compare-and-swap, and the one give-back both write paths share.
//
// A writer racing with us (the primary CNI rewriting the file while we patch it) must never lose its
// newer write to our patch of an older copy. After the exchange the temp name holds exactly what we
// replaced: if that is not what we read, a newer write landed in between, and it goes straight back
// (giveBack). The addon's batch compares on its thread (native/entry_replace.cc, step 4) and reports
// 'swapped'; the step-by-step path compares here (landReplacing); both give back through giveBack.
import { SYSCALL } from '../native/addon.js';
import { readEntry } from './bounded-read.js';
import type { Dir } from './dir.js';
import { errnoCode } from './errno.js';

// Filesystems without renameat2 flags (some network ones) answer EINVAL: fall back to rename(2) with a
// content re-check just before it, which narrows the race to microseconds instead of closing it.
export const UNSUPPORTED = new Set(['EINVAL', 'ENOSYS', 'EOPNOTSUPP']);

// Whether this node's filesystem takes RENAME_EXCHANGE: learnt from the first refusal, for the process.
let exchangeWorks = true;

export function exchangeSupported(): boolean {
  return exchangeWorks;
}

export function exchangeRefused(): void {
  exchangeWorks = false;
}

/** True when entry `name` holds exactly `expected` (false when it does not exist or is not a file). */
export function entryHolds(dir: Dir, name: string, expected: Buffer): boolean {
  const read = readEntry(dir, name, expected.length);
  return read.kind === 'file' && read.bytes.equals(expected);
}

// What a give-back reads of a version it swapped out is bounded like every other read: a file raced
// into net.d may be of any size. A larger version is never "the one we expect" (no config we write
// is that large), and it still goes back by rename, unread.
const GIVE_BACK_MAX_BYTES = 16 << 20;

/** The bytes at `name`, or undefined when it holds more than GIVE_BACK_MAX_BYTES. */
function readBack(dir: Dir, name: string): Buffer | undefined {
  const read = readEntry(dir, name, GIVE_BACK_MAX_BYTES);
  if (read.kind === 'too-large') return undefined;
  if (read.kind !== 'file') throw Object.assign(new Error(`${name} is not a regular file after the exchange`), { code: 'EIO' });
  return read.bytes;
}

const MAX_GIVE_BACK_ROUNDS = 64;

/**
 * We swapped a newer write (now at `tmp`) out for our patch (`ours`, now at `name`): swap it back. If
 * yet another write replaced our patch in between, that one is the newest and goes back instead,
 * and so on; each round needs a write to land in the microseconds between two renames, so this ends
 * as soon as the writer pauses. Should it never pause, the newest write seen is renamed into place.
 */
export function giveBack(dir: Dir, tmp: string, name: string, ours: Buffer): void {
  let sending = readBack(dir, tmp);
  let expectedBack: Buffer | undefined = ours;
  for (let round = 0; round < MAX_GIVE_BACK_ROUNDS; round++) {
    dir.rename(tmp, name, SYSCALL.RENAME_EXCHANGE);
    const got = readBack(dir, tmp);
    if (got !== undefined && expectedBack !== undefined && got.equals(expectedBack)) {
      dir.unlink(tmp); // a superseded version: ours, or an older write of the primary's
      return;
    }
    // `got` replaced what was at `name` after it was put there: it is newer, so it goes back next.
    expectedBack = sending;
    sending = got;
  }
  dir.rename(tmp, name);
}

/** How a step-by-step landing over an expected version ended. */
export type ReplacingLanding = 'renamed' | 'exchanged' | 'stale';

/** The temp file `tmp` (holding `ours`) swapped in for `name` only if `name` still holds `expected`. */
export function landReplacing(dir: Dir, tmp: string, name: string, expected: Buffer, ours: Buffer): ReplacingLanding {
  if (exchangeWorks) {
    try {
      dir.rename(tmp, name, SYSCALL.RENAME_EXCHANGE);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return 'stale'; // removed since we read it
      if (!UNSUPPORTED.has(errnoCode(err) ?? '')) throw err;
      exchangeWorks = false;
    }
    if (exchangeWorks) {
      // What we swapped out is exactly what was there at the swap: it must be what we read.
      if (entryHolds(dir, tmp, expected)) return 'exchanged';
      giveBack(dir, tmp, name, ours);
      return 'stale';
    }
  }
  if (!entryHolds(dir, name, expected)) return 'stale';
  dir.rename(tmp, name);
  return 'renamed';
}
