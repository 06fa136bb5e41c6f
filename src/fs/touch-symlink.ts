// A symlink re-created in place, so that a runtime watching its directory (containerd watches net.d
// only) sees an event for a config whose target changed elsewhere (daemon/keepers/reconciler.ts).
import { SYSCALL } from '../native/addon.js';
import { UNSUPPORTED } from './exchange.js';
import type { Dir } from './dir.js';
import { errnoCode } from './errno.js';
import { tempNameFor } from './temp-names.js';

/**
 * Re-creates symlink `name` (pointing at `target`) so that a runtime watching its directory sees an
 * event and reloads, without ever bringing back a link that was removed or replaced meanwhile: the
 * new link is exchanged with the old one (renameat2(RENAME_EXCHANGE) fails with ENOENT when the name
 * is gone, and then nothing is put back), and whatever was swapped out goes back unless it was the
 * same link.
 */
export function touchSymlink(dir: Dir, name: string, target: string): void {
  const tmp = tempNameFor(name);
  dir.symlink(target, tmp);
  try {
    dir.rename(tmp, name, SYSCALL.RENAME_EXCHANGE);
  } catch (err) {
    dir.unlink(tmp);
    if (errnoCode(err) === 'ENOENT') return; // removed meanwhile: it stays removed
    if (!UNSUPPORTED.has(errnoCode(err) ?? '')) throw err;
    // No RENAME_EXCHANGE here: a re-check narrows the race to microseconds instead of closing it.
    if (readlinkOrUndefined(dir, name) !== target) return;
    dir.symlink(target, tmp);
    dir.rename(tmp, name);
    return;
  }
  if (readlinkOrUndefined(dir, tmp) !== target) dir.rename(tmp, name, SYSCALL.RENAME_EXCHANGE); // a newer entry: back it goes
  dir.unlink(tmp);
}

function readlinkOrUndefined(dir: Dir, name: string): string | undefined {
  try {
    return dir.readlink(name);
  } catch {
    return undefined;
  }
}
