// CNI_PATCH_SCOPE=primary: only the config the runtime loads is chained (runtime-load.ts decides
// which). One listing per turn serves every pass of it: a scan in primary scope asks once per
// config, and a listing (with an lstat per name) each time made it quadratic (measured: 3,000
// configs held the first scan for 19 s). The listing follows every event handled this turn; a
// change after it brings its own event, handled in a later turn, and a file gone meanwhile drops
// it (in-place-pass.ts, start).
import { isConfigName } from '../../cni/names.js';
import { loadedConfig, type ConfigEntry } from '../../cni/runtime-load.js';
import type { Dir } from '../../fs/dir.js';
import { TurnMemo } from '../../turn-memo.js';

export class PrimaryScope {
  /** Per net.d on disk, the name the runtime loads, as listed in this turn. */
  private readonly thisTurn = new TurnMemo<string, string | undefined>();

  constructor(private readonly suffixes: readonly string[]) {}

  loadedName(netDir: Dir): string | undefined {
    return this.thisTurn.get(netDir.disk, () => {
      const entries: ConfigEntry[] = [];
      for (const name of netDir.list()) {
        if (!isConfigName(name, this.suffixes)) continue;
        const st = netDir.lstat(name);
        const kind = st === undefined ? (netDir.hasUndecodable(name) ? 'undecodable' : 'other') : st.isFile() ? 'file' : st.isSymbolicLink() ? 'symlink' : 'other';
        entries.push({ name, kind });
      }
      return loadedConfig(entries)?.name;
    });
  }

  /** A config went: the runtime may now load another, against a listing without it. */
  forget(netDir: Dir): void {
    this.thisTurn.forget(netDir.disk);
  }
}
