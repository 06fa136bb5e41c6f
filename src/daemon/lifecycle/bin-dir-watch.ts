// The watch on the host's bin dir (DEST_CNI_BIN_DIR): what puts our binaries back when something
// removes them, and what lets a pass trust the plugin binary between two of its events
// (daemon/node/plugin-binary.ts). It reports attribute changes too: a chmod, chown or touch of the
// binary must bring an event.
//
// A watch follows its inode, not the path (inotify(7)): after the bin dir was moved away, exchanged
// or covered by a mount, it would hear nothing of the directory the runtime now reads. So it is
// renewed when its directory goes, and at every resync: the path is resolved inside the host root
// again, the old watch dropped and the new directory watched. Between the two nothing is watched, and
// a pass looks at the binary itself; what changed meanwhile the reinstall that follows sees.
import type { HostRoot } from '../../fs/host-root.js';
import { errnoCode } from '../../fs/errno.js';
import type { Logger } from '../../log.js';
import type { Watcher } from '../../watch/watcher.js';

export class BinDirWatch {
  /** The bin dir on disk as last resolved (the name its events carry); undefined before start. */
  disk: string | undefined;

  constructor(
    private readonly root: HostRoot,
    private readonly binDir: string,
    private readonly watcher: Watcher,
    private readonly log: Logger,
  ) {}

  /** Start: the bin dir resolved (created when missing) inside the root, for the install. */
  ensure(): string {
    this.disk = this.root.ensureDir(this.binDir);
    return this.disk;
  }

  /** Start: watched; a refusal (inotify limits) ends the start. */
  async watch(): Promise<void> {
    await this.watcher.watch(this.disk!, { attributes: true });
  }

  /**
   * Its directory went, or a resync: the path resolved inside the root (made again when missing, as
   * at start: the reinstall that follows needs it) and watched anew. Never throws.
   */
  async renew(): Promise<void> {
    const old = this.disk;
    if (old !== undefined) await this.watcher.unwatch(old);
    try {
      this.disk = this.root.ensureDir(this.binDir);
      await this.watcher.watch(this.disk, { attributes: true });
    } catch (err) {
      this.log.warn({ dir: this.binDir, code: errnoCode(err) }, 'cannot watch the bin dir: the plugin binary is looked at before every write');
    }
  }

  /** Its events come in order with net.d's, attribute changes included, and it is watched now. */
  get trusted(): boolean {
    return this.watcher.capabilities.orderedAttributes && this.disk !== undefined && this.watcher.isWatching(this.disk);
  }
}
