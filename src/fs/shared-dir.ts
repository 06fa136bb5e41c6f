// One open directory shared by the passes of a burst. Opening net.d inside the host root is an
// openat2(RESOLVE_IN_ROOT) walk of every component; during a storm thousands of passes a second need
// it, in waves (up to 128 at once, their writes batched), so they share one fd. Between two waves the
// count of users drops to zero again and again, and each drop would cost an openat2 and a close: the
// first drop arms a timer, which closes the fd IDLE_CLOSE_MS later if no pass uses it then. Not longer: an fd held
// while idle keeps a deleted net.d's inode alive, and the kernel sends its IN_DELETE_SELF only once it
// is closed (inotify(7)). The native backend hears of the removal from net.d's parent at once anyway;
// the parcel backend watches no ancestor of an existing net.d, and hears of it IDLE_CLOSE_MS late at
// most. A retired handle (net.d re-created or its path re-resolved) takes no new users and is closed when its
// last user is done: never while a pass may still write relative to it (a closed fd number is reused
// by the next open, and a write would land in whatever directory that is).
import type { Dir } from './dir.js';

/** How long an unused shared fd stays open (the one timer of a burst: armed when the last pass ends). */
export const IDLE_CLOSE_MS = 50;

/** One pass's use of the shared directory. */
export interface Lease {
  readonly dir: Dir;
}

interface Handle extends Lease {
  users: number;
}

export class SharedDir {
  private current: Handle | undefined;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(private readonly open: () => Dir) {}

  /**
   * The directory for one pass (opened now unless it is open already); throws what open throws.
   * Every acquire is matched by one release, when the pass is done with the fd. (A pair of calls
   * rather than a `use(fn)` wrapper: during a storm each wrapper is one more suspended async frame
   * per file, which outlives scavenges and is promoted.)
   */
  acquire(): Lease {
    const handle = (this.current ??= { dir: this.open(), users: 0 });
    handle.users++;
    return handle;
  }

  release(lease: Lease): void {
    const handle = lease as Handle;
    handle.users--;
    if (handle.users > 0) return;
    if (this.current !== handle) handle.dir.close(); // retired: its last user is done
    else this.idleTimer ??= setTimeout(() => this.closeIdle(), IDLE_CLOSE_MS).unref();
  }

  /** Uses from now on open the directory again; an idle fd is closed now. */
  retire(): void {
    const handle = this.current;
    this.current = undefined;
    clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    if (handle !== undefined && handle.users === 0) handle.dir.close();
  }

  private closeIdle(): void {
    this.idleTimer = undefined;
    const handle = this.current;
    // In use again: the release that ends this use arms the timer anew.
    if (handle === undefined || handle.users > 0) return;
    this.current = undefined;
    handle.dir.close();
  }
}
