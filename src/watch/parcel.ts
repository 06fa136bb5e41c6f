// The `parcel` backend: @parcel/watcher, the portable fallback and the benchmark's peer.
// It reports create/update/delete only, recursively and batched, so every create or update is treated
// as a complete write; a half-written file simply fails to parse and is retried on its next event.
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as Parcel from '@parcel/watcher';
import { EventList, type WatchErrorListener, type WatchEvent, type Watcher, type WatchListener } from './watcher.js';

// Loaded on first use only: its native module costs memory on every node that runs the default backend.
let parcelModule: typeof Parcel | undefined;
function parcel(): typeof Parcel {
  parcelModule ??= createRequire(import.meta.url)('@parcel/watcher') as typeof Parcel;
  return parcelModule;
}

export class ParcelWatcher implements Watcher {
  readonly backend = 'parcel' as const;
  // Its subscriptions cover the whole tree below a directory.
  // No attribute changes, and its events reach us per subscription, in no order across directories.
  readonly capabilities = { recursive: true, orderedAttributes: false };
  private readonly subscriptions = new Map<string, Parcel.AsyncSubscription>();

  constructor(
    private readonly onEvents: WatchListener,
    private readonly onError: WatchErrorListener = () => {},
  ) {}

  async watch(dir: string): Promise<void> {
    if (this.subscriptions.has(dir)) return;
    const subscription = await parcel().subscribe(dir, (error, events) => {
      if (error) {
        // Whatever failed, events may be lost: the daemon answers an overflow with a full rescan.
        this.onEvents(new EventList([{ kind: 'overflow', dir: '', name: '', cookie: 0, isDir: false }]));
        this.onError(error);
        return;
      }
      const translated: WatchEvent[] = [];
      for (const event of events) {
        if (event.path === dir) {
          if (event.type === 'delete') translated.push({ kind: 'dir-gone', dir, name: '', cookie: 0, isDir: true });
          continue;
        }
        // Subscriptions are recursive; only the directory's own entries matter here.
        if (path.dirname(event.path) !== dir) continue;
        const kind = event.type === 'delete' ? 'delete' : 'write-closed';
        translated.push({ kind, dir, name: path.basename(event.path), cookie: 0, isDir: false });
      }
      if (translated.length > 0) this.onEvents(new EventList(translated));
    });
    this.subscriptions.set(dir, subscription);
  }

  async unwatch(dir: string): Promise<void> {
    const subscription = this.subscriptions.get(dir);
    if (subscription === undefined) return;
    this.subscriptions.delete(dir);
    await subscription.unsubscribe().catch(() => {});
  }

  isWatching(dir: string): boolean {
    return this.subscriptions.has(dir);
  }

  async close(): Promise<void> {
    const all = [...this.subscriptions.keys()];
    await Promise.all(all.map((dir) => this.unwatch(dir)));
  }
}
