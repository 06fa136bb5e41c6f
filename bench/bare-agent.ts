// A reference for the bench, not part of the product: about the least a Node agent on this addon can
// do for a storm. The same inotify watch (the agent's mask), the same one-call read, the same planner
// and the same batched writes on libuv's pool (temp file, fsync, exchange, compare, directory fsync);
// and nothing else: no per-file state, readiness, metrics, logs, fight rule, symlinks, coalescing or
// bound on passes, no promise per file and no object per event. Like the agent, it knows its own
// renames by their inotify cookie and does not read back what it wrote (an earlier version did, which
// doubled its reads and plans and made Node look dearer than it is). The bench runs it like the agent,
// so that the agent's CPU per file can be read against what Node and the addon cost on their own, on
// the same machine in the same run.
import { openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { planPatch } from '../src/cni/conflist.js';
import { isConfigName } from '../src/cni/names.js';
import { isOwnTempName, tempNameFor } from '../src/fs/temp-names.js';
import { loadConfig, requirePlugin } from '../src/config.js';
import { LANDING, perPoolThread, type ReplaceJob } from '../src/fs/replace-batches.js';
import { IN, InotifyColumns } from '../src/native/inotify.js';
import { entryIo } from '../src/native/entry-io.js';
import { exitNow } from '../src/native/exit.js';
import { DIRECTORY_MASK } from '../src/watch/native.js';

const config = loadConfig(process.env);
const plugin = requirePlugin(config);
const netDir = path.join(config.hostRoot, config.netDir);
const dirfd = openSync(netDir, 'r');

// Cookies of this read's renames away from our own temp names: the rename onto the config that
// carries one is our write landing.
const ownCookies = new Set<number>();

// The events in the addon's columns (wd, mask and cookie three by three), read without an object each.
const watcher = new InotifyColumns(netDir, DIRECTORY_MASK, (names, fields) => {
  const jobs: ReplaceJob[] = [];
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
    const read = entryIo.readEntryAt(dirfd, name, config.maxConfigBytes, true);
    if (read.kind !== 'file') continue;
    const content = read.bytes!.subarray(0, read.length);
    const plan = planPatch(content, plugin);
    if (plan.action !== 'write') continue;
    const xattrs = read.xattrs!.map(([key, value]): [string, Buffer, boolean] => [key, value, true]);
    jobs.push([dirfd, tempNameFor(name), name, plan.bytes, read.mode! & 0o7777, -1, -1, xattrs, LANDING.exchange, content]);
  }
  // One work item per pool thread, each working through its share, as the agent's writes go.
  // A stale or swapped landing is left as it is: the bench's writer does not rewrite a file it wrote.
  for (const batch of perPoolThread(jobs)) entryIo.replaceEntriesAt(batch).catch(() => {});
});
void watcher;
writeSync(1, '{"msg":"started"}\n');
process.on('SIGTERM', () => exitNow(0));
