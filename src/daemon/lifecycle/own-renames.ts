// The agent's own writes land by renaming (or exchanging) one of its temp files with a config. Both
// halves of such a rename carry one cookie, and the temp-file half names a temp of this process, so
// the config half can be recognised as our own write without a syscall and costs no pass.
//
// The halves are adjacent in the kernel's queue, but a read of the inotify fd can end between them:
// the cookies seen on our temp names are remembered across reads (bounded; cookies are unique per
// rename). For rename(tmp → config) the temp half comes first, so a split costs nothing. For the
// second rename of an exchange the config half comes first: split there, it costs one pass, which
// finds the config chained (or, in a fight, our own content by its hash) and writes nothing.
import { isOwnTempName } from '../../fs/temp-names.js';
import type { WatchEventKind, WatchEvents } from '../../watch/watcher.js';

// Cookies are kept in two generations of up to this many each: a full current generation becomes the
// previous one, and the one before is dropped whole. That remembers the last 4,096 to 8,192 renames at
// no cost per rename (evicting the oldest cookie one at a time cost an iterator per rename in a storm).
const GENERATION = 4096;

function isRename(kind: WatchEventKind, cookie: number): boolean {
  return (kind === 'moved-in' || kind === 'moved-out') && cookie !== 0;
}

export class OwnRenames {
  // Newest first. Rotated in an array's elements, not in two fields: V8 treats a field written once as
  // constant, and the first rotation (a few storms in) rewrote both, which threw away the optimized code
  // of the event loop's hottest functions mid-storm (--trace-deopt: "dependent field type constness
  // changed"; docs/performance.md). An element store carries no such assumption.
  private readonly generations: [current: Set<number>, previous: Set<number>] = [new Set(), new Set()];

  /** Notes the cookies of `events` that have one of our temp names on one side. */
  observe(events: WatchEvents): void {
    const generations = this.generations;
    for (let i = 0; i < events.length; i++) {
      const cookie = events.cookie(i);
      if (!isRename(events.kind(i), cookie) || !isOwnTempName(events.name(i))) continue;
      if (generations[0].size >= GENERATION) {
        generations[1] = generations[0];
        generations[0] = new Set();
      }
      generations[0].add(cookie);
    }
  }

  /** True for the config side of one of our own renames: nothing changed that we did not write. */
  isOwn(kind: WatchEventKind, name: string, cookie: number): boolean {
    return isRename(kind, cookie) && (this.generations[0].has(cookie) || this.generations[1].has(cookie)) && !isOwnTempName(name);
  }
}
