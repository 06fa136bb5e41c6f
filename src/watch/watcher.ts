// The one event model the daemon consumes, whatever watches the directories.
//
// Readiness differs by backend, and that difference is the reason the native one exists:
// - native: `watch(dir)` has called inotify_add_watch() before it returns. Nothing written after that
//   call can be missed, so a scan started next is race-free by construction.
// - parcel: `watch(dir)` is ready only once its promise resolves (@parcel/watcher subscribes on a
//   background thread); awaiting it gives the same guarantee, later.

export type WatchBackendName = 'native' | 'parcel';

export type WatchEventKind =
  | 'create' // a name appeared (a regular file may still be being written)
  | 'modify' // content changed, the writer may still hold it open
  | 'write-closed' // a writer closed the file: its content is complete
  | 'moved-in' // renamed into the directory: complete by construction
  | 'moved-out' // renamed away from the directory
  | 'delete'
  | 'attrib' // mode, owner, times or link count changed: only on a watch that asks for it
  | 'overflow' // the kernel dropped events: anything may have changed
  | 'dir-gone'; // the watched directory itself was deleted, moved or unmounted

export interface WatchEvent {
  kind: WatchEventKind;
  /** The watched directory the event belongs to; '' for overflow. */
  dir: string;
  /** Entry name inside `dir`; '' when the event is about `dir` itself. */
  name: string;
  /** Pairs a moved-out with its moved-in (inotify's cookie); 0 when unknown. */
  cookie: number;
  /** True when the entry is a directory, as far as the backend knows. */
  isDir: boolean;
}

/**
 * One read of events, in columns: event i is `kind(i)` of `name(i)` in `dir(i)`. No object per event:
 * a file of a storm brings about thirteen (the writer's temp file and ours, created, written, closed,
 * renamed, exchanged, removed), and an object each, routed one by one, cost the event loop about as
 * much as the file's read and plan (measured: docs/performance.md). Valid during the listener's call
 * only: a backend may reuse it for its next read, so a consumer that keeps an event takes it with
 * eventAt(). Iterating it yields event objects, new ones each time, for consumers that are not on
 * the hot path.
 */
export interface WatchEvents extends Iterable<WatchEvent> {
  readonly length: number;
  kind(i: number): WatchEventKind;
  dir(i: number): string;
  name(i: number): string;
  cookie(i: number): number;
  isDir(i: number): boolean;
}

/** Event `i` of `events` as an object of its own. */
export function eventAt(events: WatchEvents, i: number): WatchEvent {
  return { kind: events.kind(i), dir: events.dir(i), name: events.name(i), cookie: events.cookie(i), isDir: events.isDir(i) };
}

/** Each event of `events` as an object of its own. */
export function* eachEvent(events: WatchEvents): IterableIterator<WatchEvent> {
  for (let i = 0; i < events.length; i++) yield eventAt(events, i);
}

/** Events held as objects: a backend that reports few (parcel), an overflow, tests. */
export class EventList implements WatchEvents {
  constructor(readonly list: readonly WatchEvent[]) {}

  get length(): number {
    return this.list.length;
  }

  kind(i: number): WatchEventKind {
    return this.list[i]!.kind;
  }

  dir(i: number): string {
    return this.list[i]!.dir;
  }

  name(i: number): string {
    return this.list[i]!.name;
  }

  cookie(i: number): number {
    return this.list[i]!.cookie;
  }

  isDir(i: number): boolean {
    return this.list[i]!.isDir;
  }

  [Symbol.iterator](): Iterator<WatchEvent> {
    return this.list[Symbol.iterator]();
  }
}

export type WatchListener = (events: WatchEvents) => void;
export type WatchErrorListener = (error: Error) => void;

/** What a backend can do, declared, so that callers ask for a capability, never for a backend's name. */
export interface WatcherCapabilities {
  /**
   * A watch covers the whole tree below the directory (@parcel/watcher's subscriptions are recursive):
   * watching the host root's ancestors of net.d would crawl the node.
   */
  readonly recursive: boolean;
  /**
   * `watch(dir, { attributes: true })` also reports metadata changes ('attrib'), in one queue with every
   * other event of every watch: an event of one directory is never reported after an event of another
   * that happened later (inotify(7): one instance, one queue). What is known about a file then holds
   * until its directory's next event (daemon/node/plugin-binary.ts).
   */
  readonly orderedAttributes: boolean;
}

export interface WatchOptions {
  /** Report mode, owner, times and link count changes too ('attrib'). */
  attributes?: boolean;
}

export interface Watcher {
  readonly backend: WatchBackendName;
  readonly capabilities: WatcherCapabilities;
  /** Starts watching the direct entries of `dir`. Throws/rejects with the errno code on failure. */
  watch(dir: string, options?: WatchOptions): Promise<void>;
  /** Stops watching `dir`; a directory that is already gone is not an error. */
  unwatch(dir: string): Promise<void>;
  isWatching(dir: string): boolean;
  close(): Promise<void>;
}
