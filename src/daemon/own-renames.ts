// The agent's own writes land by renaming (or exchanging) one of its temp files with a config. Both
// halves of such a rename share a cookie and arrive in the same batch, so the events that say "a
// config was replaced" can be recognised as our own without a single syscall, and cost no pass.
import { isOwnTempName } from '../cni/names.js';
import type { WatchEvent } from '../watch/watcher.js';

/** Cookies of the renames in `events` that have one of this process's temp names on either side. */
export function ownRenameCookies(events: readonly WatchEvent[]): Set<number> {
  const cookies = new Set<number>();
  for (const event of events) {
    if (event.cookie !== 0 && (event.kind === 'moved-in' || event.kind === 'moved-out') && isOwnTempName(event.name)) {
      cookies.add(event.cookie);
    }
  }
  return cookies;
}

/** True for the config side of one of our own renames: nothing changed that we did not write. */
export function isOwnRename(event: WatchEvent, ownCookies: ReadonlySet<number>): boolean {
  return (event.kind === 'moved-in' || event.kind === 'moved-out') && event.cookie !== 0 && ownCookies.has(event.cookie) && !isOwnTempName(event.name);
}
