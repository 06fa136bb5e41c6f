// Puts back the `.conf` symlinks that conversion parked (cni/names.ts parkedLinkName), exactly as they
// were, and removes the conflists made from their targets: after stop or uninstall the runtime loads
// the primary's own link again, and whatever its target says from then on reaches the runtime.
import { conflistName, parkedLinkOriginal } from '../../cni/names.js';
import { withDirSync } from '../../fs/dir.js';
import { isMissing } from '../../fs/errno.js';
import type { HostRoot } from '../../fs/host-root.js';
import type { Logger } from '../../log.js';
import { SYSCALL } from '../../native/addon.js';
import { parkedLinkSuperseded } from '../keepers/parked-link.js';

/** Restores every parked link of net.d; returns the conflists it removed (they were ours). */
export function restoreParkedLinks(root: HostRoot, netDir: string, pluginType: string, maxBytes: number, log: Logger): string[] {
  const removed: string[] = [];
  try {
    withDirSync(root.openDir(netDir), (dir) => {
      for (const name of dir.list()) {
        const original = parkedLinkOriginal(name);
        if (original === undefined || dir.lstat(name)?.isSymbolicLink() !== true) continue;
        if (parkedLinkSuperseded(dir, original, pluginType, maxBytes) !== undefined) {
          // The primary's new `.conf` or own conflist stays; the stale link goes.
          dir.unlinkExisting([name]);
          continue;
        }
        const conflist = conflistName(original);
        // The link back first (it sorts before the conflist, so the runtime loads it from now on),
        // then the conflist made from its target.
        dir.rename(name, original, SYSCALL.RENAME_NOREPLACE);
        if (conflist !== original) removed.push(...dir.unlinkExisting([conflist]));
        log.info({ file: original, removed: conflist }, 'put back a converted .conf link');
      }
    });
  } catch (err) {
    if (!isMissing(err)) throw err;
  }
  return removed;
}
