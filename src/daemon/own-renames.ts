// The agent's own writes land by renaming (or exchanging) one of its temp files with a config. Both
// halves of such a rename carry one cookie, and the temp-file half names a temp of this process, so
// the config half can be recognised as our own write without a syscall and costs no pass.
//
// The halves are adjacent in the kernel's queue, but a read of the inotify fd can end between them:
// the cookies seen on our temp names are remembered across reads (a bounded set; cookies are unique
// per rename). For rename(tmp → config) the temp half comes first, so a split costs nothing. For the
// second rename of an exchange the config half comes first: split there, it costs one pass, which
// finds our own content by hash and writes nothing.
import { isOwnTempName } from '../cni/names.js';
import type { WatchEvent } from '../watch/watcher.js';

const REMEMBERED = 4096;

function isRename(event: WatchEvent): boolean {
  return (event.kind === 'moved-in' || event.kind === 'moved-out') && event.cookie !== 0;
}

export class OwnRenames {
  private readonly cookies = new Set<number>();

  /** Notes the cookies of `events` that have one of our temp names on one side. */
  observe(events: readonly WatchEvent[]): void {
    for (const event of events) {
      if (!isRename(event) || !isOwnTempName(event.name)) continue;
      this.cookies.add(event.cookie);
      if (this.cookies.size > REMEMBERED) this.cookies.delete(this.cookies.values().next().value!);
    }
  }

  /** True for the config side of one of our own renames: nothing changed that we did not write. */
  isOwn(event: WatchEvent): boolean {
    return isRename(event) && this.cookies.has(event.cookie) && !isOwnTempName(event.name);
  }
}
