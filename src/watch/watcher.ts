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

export type WatchListener = (events: WatchEvent[]) => void;
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
