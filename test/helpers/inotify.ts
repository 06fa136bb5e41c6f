// The addon's watcher with one object per event, for tests that look at raw inotify events. The
// agent itself reads the columns (src/watch/native.ts); this is a test's convenience, not an API.
import { InotifyColumns, type InotifyWatcherHandle } from '../../src/native/inotify.js';

export interface RawInotifyEvent {
  wd: number;
  mask: number;
  cookie: number;
  name: string;
}

/** `new InotifyWatcher(path, mask, onEvents)`, with `onEvents` getting an object per event. */
export const InotifyWatcher = function InotifyWatcher(path: string, mask: number, onEvents: (events: RawInotifyEvent[], error?: NodeJS.ErrnoException) => void): InotifyWatcherHandle {
  if (typeof onEvents !== 'function') throw new TypeError('onEvents must be a function');
  return new InotifyColumns(path, mask, (names, fields, error) => {
    const events: RawInotifyEvent[] = new Array(names.length);
    for (let i = 0; i < names.length; i++) events[i] = { wd: fields[3 * i]!, mask: fields[3 * i + 1]! >>> 0, cookie: fields[3 * i + 2]! >>> 0, name: names[i]! };
    onEvents(events, error);
  });
} as unknown as new (path: string, mask: number, onEvents: (events: RawInotifyEvent[], error?: NodeJS.ErrnoException) => void) => InotifyWatcherHandle;
