// Replacements go to libuv's pool at the end of the loop turn, together, or at once when the caller
// says the turn has nothing more to add (fs/replace-batches.ts). The real addon and pool: a file lands
// only once its job is on a pool thread.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Dir } from '../../src/fs/dir.js';
import { flushReplacements, LANDING, replaceEntry, type Replacement } from '../../src/fs/replace-batches.js';
import { tempNameFor } from '../../src/fs/temp-names.js';
import { tempDir } from '../helpers/tmp.js';

function replacement(dir: Dir, name: string, text: string): Replacement {
  return { dirfd: dir.fd, tmp: tempNameFor(name), name, bytes: Buffer.from(text), mode: 0o644, uid: -1, gid: -1, xattrs: [], landing: LANDING.rename, expect: undefined };
}

/** Spins on the main thread (no event-loop turn) until `file` exists, or `ms` have passed. */
function appearsWithoutATurn(file: string, ms: number): boolean {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) if (existsSync(file)) return true;
  return false;
}

describe('replacement batches', () => {
  it('sends a turn\'s replacements to the pool only at its end, unless flushed: then at once', async () => {
    const root = tempDir();
    const dir = Dir.open(root);
    try {
      const waiting = replaceEntry(replacement(dir, 'a.conflist', 'a'));
      // Not on the pool yet: the turn has not ended.
      expect(appearsWithoutATurn(path.join(root, 'a.conflist'), 300)).toBe(false);
      await expect(waiting).resolves.toBe('renamed');

      const flushed = replaceEntry(replacement(dir, 'b.conflist', 'b'));
      flushReplacements();
      // On a pool thread now, while this thread has not left the turn.
      expect(appearsWithoutATurn(path.join(root, 'b.conflist'), 5_000)).toBe(true);
      await expect(flushed).resolves.toBe('renamed');
      expect(readFileSync(path.join(root, 'b.conflist'), 'utf8')).toBe('b');
      // The turn's own flush finds nothing left, and a flush of nothing sends nothing.
      flushReplacements();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      dir.close();
    }
  });
});
