// A reference for the bench, not part of the product: about the least a Node agent on this addon can
// do for a storm. The same inotify watch (the agent's mask), the same one-call read, the same planner
// and the same batched writes on libuv's pool (temp file, fsync, exchange, compare, directory fsync);
// and nothing else: no per-file state, readiness, metrics, logs, fight rule, symlinks, coalescing or
// bound on passes, no promise per file and no object per event. Like the agent, it knows its own
// renames by their inotify cookie and does not read back what it wrote (which would double its reads
// and plans, and make Node look dearer than it is). The bench runs it like the agent,
// so that the agent's CPU per file can be read against what Node and the addon cost on their own, on
// the same machine in the same run.
//
// It is bundled and started exactly like the agent (scripts/bundle.mjs; `node dist/bench/bare-agent.mjs
// run` with the agent's environment), sets the same V8 flag once its watch is live, and listens on
// HEALTH_PORT with node:http as the agent's health server does: what it holds in memory is what any
// Node agent on this addon holds, and nothing the agent does beyond it.
//
// One design choice of the agent's is deliberately not here: on a memory-backed filesystem (tmpfs,
// where the bench runs) the agent lands a few replacements on the event loop itself, and spreads a
// storm's over as many pool threads as there are cores (fs/replace-batches.ts). The reference keeps
// the design both had before, one batch per pool thread, so that its figures stay comparable from one
// round of measurements to the next, and the ratios show what that choice buys (docs/performance.md).
import { createServer } from 'node:http';
import { openSync, readdirSync, writeSync } from 'node:fs';
import path from 'node:path';
import { planPatch } from '../src/cni/conflist.js';
import { isConfigName } from '../src/cni/names.js';
import { isOwnTempName, tempNameFor } from '../src/fs/temp-names.js';
import { loadConfig, requirePlugin } from '../src/config.js';
import { LANDING, perPoolThread, toWire, type Replacement } from '../src/fs/replace-batches.js';
import { IN, InotifyColumns } from '../src/native/inotify.js';
import { entryIo, READ_KIND, READ_SLOTS } from '../src/native/entry-io.js';
import { exitNow } from '../src/native/exit.js';
import { DIRECTORY_MASK } from '../src/watch/native.js';
import { markByTriggers, optimizeHeapForSize } from '../src/memory-flags.js';

const config = loadConfig(process.env);
const plugin = requirePlugin(config);
const netDir = path.join(config.hostRoot, config.netDir);
const dirfd = openSync(netDir, 'r');

// Cookies of this read's renames away from our own temp names: the rename onto the config that
// carries one is our write landing.
const ownCookies = new Set<number>();

// The read's result column, as the agent's reads reuse theirs (fs/bounded-read.ts).
const found = new Float64Array(READ_SLOTS);

/** The patch of `name`, if it needs one. */
function jobFor(name: string): Replacement | undefined {
  const read: Array<[string, Buffer]> = [];
  const bytes = entryIo.readEntryAt(dirfd, name, config.maxConfigBytes, true, found, read);
  if (found[0] !== READ_KIND.file) return undefined;
  const content = bytes!.subarray(0, found[6]);
  const plan = planPatch(content, plugin);
  if (plan.action !== 'write') return undefined;
  const xattrs = read.map(([key, value]) => ({ name: key, value, optional: true }));
  return { dirfd, tmp: tempNameFor(name), name, bytes: plan.bytes, mode: found[1]! & 0o7777, uid: -1, gid: -1, xattrs, landing: LANDING.exchange, expect: content };
}

// One work item per pool thread, each working through its share, as the agent's writes go. A stale
// or swapped landing is left as it is: the bench's writer does not rewrite a file it wrote.
function write(jobs: Replacement[]): void {
  for (const batch of perPoolThread(jobs)) entryIo.replaceEntriesAt(batch.map(toWire)).catch(() => {});
}

// The events in the addon's columns (wd, mask and cookie three by three), read without an object each.
const watcher = new InotifyColumns(netDir, DIRECTORY_MASK, (names, fields) => {
  const jobs: Replacement[] = [];
  ownCookies.clear();
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    const mask = fields[3 * i + 1]!;
    const cookie = fields[3 * i + 2]! >>> 0;
    if (mask & IN.IN_MOVED_FROM) {
      if (isOwnTempName(name)) ownCookies.add(cookie);
      continue;
    }
    if (!(mask & (IN.IN_MOVED_TO | IN.IN_CLOSE_WRITE)) || !isConfigName(name, config.suffixes)) continue;
    if (mask & IN.IN_MOVED_TO && ownCookies.has(cookie)) continue;
    const job = jobFor(name);
    if (job !== undefined) jobs.push(job);
  }
  write(jobs);
});
// The configs already there, once the watch is live (as the agent's first scan).
const existing: Replacement[] = [];
for (const name of readdirSync(netDir)) {
  const job = isConfigName(name, config.suffixes) ? jobFor(name) : undefined;
  if (job !== undefined) existing.push(job);
}
write(existing);
void watcher;
// As the agent: the heap flag, then the health server, once the watch is live; then, its start done,
// the marking triggers.
await optimizeHeapForSize();
const health = createServer((_req, res) => res.end('ok'));
if (config.healthPort !== 0) await new Promise<void>((resolve) => health.listen(config.healthPort, config.healthHost, resolve));
await markByTriggers();
writeSync(1, '{"msg":"started"}\n');
process.on('SIGTERM', () => exitNow(0));
