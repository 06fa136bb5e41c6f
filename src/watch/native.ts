// The `native` backend: the addon's inotify instance, one fd for every watched directory.
import { IN, InotifyColumns, type InotifyWatcherHandle } from '../native/inotify.js';
import { eachEvent, type WatchErrorListener, type WatchEvent, type WatchEventKind, type WatchEvents, type Watcher, type WatchListener, type WatchOptions } from './watcher.js';

// IN_MODIFY is included so a writer that keeps a file open is still noticed (docs/design.md, Events).
export const DIRECTORY_MASK =
  IN.IN_CREATE |
  IN.IN_MODIFY |
  IN.IN_CLOSE_WRITE |
  IN.IN_MOVED_FROM |
  IN.IN_MOVED_TO |
  IN.IN_DELETE |
  IN.IN_DELETE_SELF |
  IN.IN_MOVE_SELF |
  IN.IN_ONLYDIR;

/** Maps one inotify event mask to our event kind; undefined for masks we do not report. */
export function kindOfMask(mask: number): WatchEventKind | undefined {
  if (mask & IN.IN_Q_OVERFLOW) return 'overflow';
  if (mask & (IN.IN_DELETE_SELF | IN.IN_MOVE_SELF | IN.IN_UNMOUNT | IN.IN_IGNORED)) return 'dir-gone';
  if (mask & IN.IN_CLOSE_WRITE) return 'write-closed';
  if (mask & IN.IN_MOVED_TO) return 'moved-in';
  if (mask & IN.IN_MOVED_FROM) return 'moved-out';
  if (mask & IN.IN_CREATE) return 'create';
  if (mask & IN.IN_DELETE) return 'delete';
  if (mask & IN.IN_MODIFY) return 'modify';
  if (mask & IN.IN_ATTRIB) return 'attrib';
  return undefined;
}

export class NativeWatcher implements Watcher {
  readonly backend = 'native' as const;
  readonly capabilities = { recursive: false, orderedAttributes: true };
  private handle: InotifyWatcherHandle | undefined;
  private readonly wdByDir = new Map<string, number>();
  // The paths of each watch descriptor (two paths of one inode, a bind mount say, share one). An array:
  // it is read for every event and changes only when a watch does.
  private readonly dirsByWd = new Map<number, string[]>();
  // A directory that went away produces IN_DELETE_SELF and then IN_IGNORED: report it once.
  private readonly goneWds = new Set<number>();

  constructor(
    private readonly onEvents: WatchListener,
    private readonly onError: WatchErrorListener = () => {},
  ) {}

  /** Synchronous: when this returns the watch is live. */
  watchSync(dir: string, options: WatchOptions = {}): void {
    if (this.wdByDir.has(dir)) return;
    const mask = options.attributes === true ? DIRECTORY_MASK | IN.IN_ATTRIB : DIRECTORY_MASK;
    let wd: number;
    if (this.handle === undefined || this.handle.closed) {
      this.handle = new InotifyColumns(dir, mask, (names, fields, error) => this.deliver(names, fields, error));
      wd = this.handle.wd;
    } else {
      // IN_MASK_ADD: a directory watched again by another path (a bind mount) keeps what either asked
      // for, where a plain inotify_add_watch would replace the first watch's mask (inotify(7)).
      wd = this.handle.addWatch(dir, mask | IN.IN_MASK_ADD);
    }
    this.goneWds.delete(wd);
    this.wdByDir.set(dir, wd);
    // Not among the descriptor's paths yet: every path listed there is in wdByDir too (checked above).
    const dirs = this.dirsByWd.get(wd) ?? [];
    dirs.push(dir);
    this.dirsByWd.set(wd, dirs);
  }

  async watch(dir: string, options?: WatchOptions): Promise<void> {
    this.watchSync(dir, options);
  }

  unwatchSync(dir: string): void {
    const wd = this.wdByDir.get(dir);
    if (wd === undefined) return;
    this.wdByDir.delete(dir);
    const dirs = this.dirsByWd.get(wd)?.filter((d) => d !== dir);
    // Two paths of one inode (a bind mount, say) share a watch descriptor: keep it while either is used.
    if (dirs !== undefined && dirs.length > 0) {
      this.dirsByWd.set(wd, dirs);
      return;
    }
    this.dirsByWd.delete(wd);
    try {
      this.handle?.removeWatch(wd);
    } catch (err) {
      // EINVAL: the kernel already dropped the watch because the directory is gone.
      if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
    }
  }

  async unwatch(dir: string): Promise<void> {
    this.unwatchSync(dir);
  }

  isWatching(dir: string): boolean {
    return this.wdByDir.has(dir);
  }

  async close(): Promise<void> {
    this.handle?.close();
    this.wdByDir.clear();
    this.dirsByWd.clear();
  }

  /** Lets a short-lived process (a test, the benchmark's observer) exit while watching. */
  unref(): void {
    this.handle?.unref();
  }

  // A read's events in columns (watcher.ts, WatchEvents), reused from one read to the next: the
  // addon's columns give each event's name, mask and cookie; the translation adds its kind and
  // directory. A read inside a listener's call (none is expected) gets columns of its own.
  private readonly columns = new NativeEvents();
  private delivering = false;

  private deliver(names: string[], fields: Int32Array, error?: NodeJS.ErrnoException): void {
    const outermost = !this.delivering;
    const columns = outermost ? this.columns : new NativeEvents();
    columns.start(names, fields);
    for (let i = 0; i < names.length; i++) this.translate(i, fields[3 * i]!, fields[3 * i + 1]! >>> 0, columns);
    this.delivering = true;
    try {
      if (columns.length > 0) this.onEvents(columns);
    } finally {
      if (outermost) this.delivering = false;
      columns.start(NO_NAMES, NO_FIELDS); // no read's names are kept past the call
    }
    if (error !== undefined) this.onError(error);
  }

  private translate(at: number, wd: number, mask: number, out: NativeEvents): void {
    const kind = kindOfMask(mask);
    if (kind === undefined) return;
    if (kind === 'overflow') {
      out.add(kind, '', at);
      return;
    }
    const dirs = this.dirsByWd.get(wd);
    if (dirs === undefined) return; // a watch we removed ourselves: its IN_IGNORED is expected
    if (kind === 'dir-gone') {
      if (mask & IN.IN_IGNORED) {
        // The kernel has dropped the watch: forget it so the wd can be reused safely.
        this.dirsByWd.delete(wd);
        for (const dir of dirs) this.wdByDir.delete(dir);
      }
      if (this.goneWds.has(wd)) return;
      this.goneWds.add(wd);
    }
    // One event per path of the watch (two paths of one inode, a bind mount, share it).
    for (let k = 0; k < dirs.length; k++) out.add(kind, dirs[k]!, at);
  }
}

const NO_NAMES: string[] = [];
const NO_FIELDS = new Int32Array(0);

/**
 * A read of inotify events as the router reads them: the addon's names and fields, and per event its
 * kind, directory and index into those (an event of a watch with two paths appears twice).
 */
class NativeEvents implements WatchEvents {
  length = 0;
  private names: string[] = NO_NAMES;
  private fields: Int32Array = NO_FIELDS;
  private readonly kinds: WatchEventKind[] = [];
  private readonly dirs: string[] = [];
  private readonly at: number[] = [];

  start(names: string[], fields: Int32Array): void {
    this.names = names;
    this.fields = fields;
    this.length = 0;
  }

  add(kind: WatchEventKind, dir: string, at: number): void {
    const i = this.length++;
    this.kinds[i] = kind;
    this.dirs[i] = dir;
    this.at[i] = at;
  }

  kind(i: number): WatchEventKind {
    return this.kinds[i]!;
  }

  dir(i: number): string {
    return this.dirs[i]!;
  }

  name(i: number): string {
    return this.kinds[i] === 'overflow' ? '' : this.names[this.at[i]!]!;
  }

  cookie(i: number): number {
    return this.kinds[i] === 'overflow' ? 0 : this.fields[3 * this.at[i]! + 2]! >>> 0;
  }

  isDir(i: number): boolean {
    return this.kinds[i] !== 'overflow' && (this.fields[3 * this.at[i]! + 1]! & IN.IN_ISDIR) !== 0;
  }

  [Symbol.iterator](): Iterator<WatchEvent> {
    return eachEvent(this);
  }
}
