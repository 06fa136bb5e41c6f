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
    // Column by column, as the agent's router reads them: in a storm this process shares the machine's
    // cores with the agent, and an object per event would take CPU from it.
    this.watcher = new NativeWatcher((events) => {
      const now = process.hrtime.bigint();
      for (let i = 0; i < events.length; i++) {
        const kind = events.kind(i);
        if (kind === 'overflow') this.overflowed = true;
        if (kind === 'moved-out') this.movedOut.set(events.cookie(i), events.name(i));
        if (kind !== 'moved-in') continue;
        const cookie = events.cookie(i);
        const name = events.name(i);
        const from = this.movedOut.get(cookie);
        this.movedOut.delete(cookie);
        if (from === undefined || !isTempName(from) || isTempName(name)) continue;
        const list = this.landings.get(name) ?? [];
        list.push(now);
        this.landings.set(name, list);
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
