// Temp files that outlived the process that made them (SIGKILL, OOM kill, node crash). Every temp
// name carries the target's name hash and the hash of the content it expected to displace
// (fs/temp-names.ts), which tells the three cases apart:
//  - an unlanded write: the temp holds our new version (for a patch, one that unpatches to exactly
//    the expected content): removed;
//  - an exchange that landed: the temp holds the displaced version and it is the expected one:
//    removed;
//  - an exchange that displaced a *newer* write of the primary (we died before giving it back): the
//    temp holds content that is neither. If the target still holds our patch, the newer write is put
//    back (and then patched like any other write); if the primary has written again since, its
//    latest version wins and the temp is removed.
// Runs at start, before the first scan, and at every resync for temps older than a live writer's.
import { planUnpatch } from '../../cni/conflist.js';
import { nameHash, parseTempName, isOwnTempName } from '../../fs/temp-names.js';
import { contentHash } from '../../fs/content-hash.js';
import { readEntry } from '../../fs/bounded-read.js';
import type { Dir } from '../../fs/dir.js';
import { errnoCode } from '../../fs/errno.js';

export interface SweepResult {
  removed: string[];
  /** Targets whose displaced newer write was put back. */
  restored: string[];
}

export interface SweepOptions {
  pluginType: string;
  maxBytes: number;
  /** Only temps whose mtime is at least this old (another live instance may be mid-write). */
  minAgeMs: number;
  now?: number;
}

function unpatchedHash(bytes: Buffer, pluginType: string): string {
  const plan = planUnpatch(bytes, pluginType);
  return contentHash(plan.action === 'write' ? plan.bytes : bytes);
}

export function sweepTemps(dir: Dir, options: SweepOptions): SweepResult {
  const result: SweepResult = { removed: [], restored: [] };
  const now = options.now ?? Date.now();
  const names = dir.list();
  let byHash: Map<string, string> | undefined;
  for (const name of names) {
    const parts = parseTempName(name);
    if (parts === undefined || isOwnTempName(name)) continue;
    const st = dir.lstat(name);
    if (st === undefined || st.isDirectory() || now - st.mtimeMs < options.minAgeMs) continue;
    const read = st.isFile() ? readEntry(dir, name, options.maxBytes) : undefined;
    if (read?.kind === 'file' && parts.expectHash !== 'new') {
      const displacedAsExpected = contentHash(read.bytes) === parts.expectHash;
      const ourUnlandedPatch = unpatchedHash(read.bytes, options.pluginType) === parts.expectHash;
      if (!displacedAsExpected && !ourUnlandedPatch) {
        byHash ??= new Map(names.filter((n) => parseTempName(n) === undefined).map((n) => [nameHash(n), n]));
        const target = byHash.get(parts.nameHash);
        const current = target === undefined ? undefined : readEntry(dir, target, options.maxBytes);
        // Only over our own patch: anything else there is newer than the stranded write.
        if (target !== undefined && current?.kind === 'file' && planUnpatch(current.bytes, options.pluginType).action === 'write') {
          dir.rename(name, target);
          result.restored.push(target);
          continue;
        }
      }
    }
    try {
      dir.unlink(name);
      result.removed.push(name);
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
    }
  }
  return result;
}
