// One open directory shared by the passes that run at the same time. Opening net.d inside the host
// root is an openat2(RESOLVE_IN_ROOT) walk of every component; during a storm thousands of passes a
// second need it, and they overlap (up to 128 at once), so they share one fd. It is closed as soon as
// the last of them is done: an fd held while idle would keep a deleted net.d's inode alive, and the
// kernel would not send its IN_DELETE_SELF until it is closed (inotify(7)). The native backend also
// hears of it from net.d's parent; the parcel backend watches no ancestor of an existing net.d. A
// retired handle (net.d re-created or its path re-resolved) takes no new users and is closed when its
// last user is done: never while a pass may still write relative to it (a closed fd number is reused
// by the next open, and a write would land in whatever directory that is).
import type { Dir } from './dir.js';

/** One pass's use of the shared directory. */
export interface Lease {
  readonly dir: Dir;
}

interface Handle extends Lease {
  users: number;
}

export class SharedDir {
  private current: Handle | undefined;

  constructor(private readonly open: () => Dir) {}

  /**
   * The directory for one pass (opened now unless a running pass has it open); throws what open
   * throws. Every acquire is matched by one release, when the pass is done with the fd. (A pair of
   * calls rather than a `use(fn)` wrapper: during a storm each wrapper is one more suspended async
   * frame per file, which outlives scavenges and is promoted.)
   */
  acquire(): Lease {
    const handle = (this.current ??= { dir: this.open(), users: 0 });
    handle.users++;
    return handle;
  }

  release(lease: Lease): void {
    const handle = lease as Handle;
    handle.users--;
    if (handle.users === 0) {
      if (this.current === handle) this.current = undefined;
      handle.dir.close();
    }
  }

  /** Uses from now on open the directory again. */
  retire(): void {
    this.current = undefined;
  }
}
