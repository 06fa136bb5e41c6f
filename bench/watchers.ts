// The watchers alone, without the agent: how long after a rename each one delivers its event, in this
// process. The native addon, @parcel/watcher and Node's fs.watch (a bench-only peer: it has no place in
// the product, which needs cookies, IN_CLOSE_WRITE and a synchronous watch).
import { watch } from 'node:fs';
import { NativeWatcher } from '../src/watch/native.js';
import { ParcelWatcher } from '../src/watch/parcel.js';
import { summarize, type Summary } from './stats.js';
import { msSinceRename, type Renamed, type WriterJob } from './floor.js';

type RunWriter = (job: WriterJob) => Promise<Map<string, Renamed>>;

export async function watcherLatency(dir: string, names: string[], intervalMs: number, runWriter: RunWriter): Promise<Record<string, Summary>> {
  const results: Record<string, Summary> = {};
  const watchers: Record<string, (onName: (name: string) => void) => Promise<() => Promise<void>>> = {
    native: async (onName) => {
      const w = new NativeWatcher((events) => {
        for (const e of events) if (e.kind === 'moved-in') onName(e.name);
      });
      w.watchSync(dir);
      return () => w.close();
    },
    parcel: async (onName) => {
      const w = new ParcelWatcher((events) => {
        for (const e of events) onName(e.name);
      });
      await w.watch(dir);
      return () => w.close();
    },
    'fs.watch': async (onName) => {
      const w = watch(dir, (_event, name) => {
        if (name !== null) onName(name);
      });
      return async () => w.close();
    },
  };
  for (const [name, start] of Object.entries(watchers)) {
    const seen = new Map<string, bigint>();
    const stop = await start((file) => {
      if (!seen.has(file)) seen.set(file, process.hrtime.bigint());
    });
    const prefixed = names.map((n) => `${name.replace('.', '-')}-${n}`);
    const renamed = await runWriter({ dir, names: prefixed, intervalMs });
    const deadline = Date.now() + 10_000;
    while (prefixed.some((n) => !seen.has(n)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await stop();
    results[name] = summarize(prefixed.filter((n) => seen.has(n)).map((n) => msSinceRename(renamed.get(n)!, seen.get(n)!)));
  }
  return results;
}
