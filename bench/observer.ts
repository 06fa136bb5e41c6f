// Records, per file, when an agent's rename of it (from one of its temp names) lands: an inotify
// watch of its own, independent of the agent under test.
import { isTempName } from '../src/fs/temp-names.js';
import { NativeWatcher } from '../src/watch/native.js';

export class Observer {
  private readonly movedOut = new Map<number, string>();
  readonly landings = new Map<string, bigint[]>();
  /** The kernel dropped events of this watch (its queue was full): landings may be missing. */
  overflowed = false;
  private readonly watcher: NativeWatcher;

  constructor(dir: string) {
    this.watcher = new NativeWatcher((events) => {
      const now = process.hrtime.bigint();
      for (const e of events) {
        if (e.kind === 'overflow') this.overflowed = true;
        if (e.kind === 'moved-out') this.movedOut.set(e.cookie, e.name);
        if (e.kind !== 'moved-in') continue;
        const from = this.movedOut.get(e.cookie);
        this.movedOut.delete(e.cookie);
        if (from === undefined || !isTempName(from) || isTempName(e.name)) continue;
        const list = this.landings.get(e.name) ?? [];
        list.push(now);
        this.landings.set(e.name, list);
      }
    });
    this.watcher.watchSync(dir);
  }

  /** The first landing of `name` after `after`. */
  landingAfter(name: string, after: bigint): bigint | undefined {
    return this.landings.get(name)?.find((t) => t > after);
  }

  close(): Promise<void> {
    return this.watcher.close();
  }
}
