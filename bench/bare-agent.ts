// A reference for the bench, not part of the product: about the least a Node agent on this addon can
// do for a storm. The same inotify watch, the same one-call read, the same planner, and the same
// batched writes on libuv's pool (temp file, fsync, exchange, compare, directory fsync); and nothing
// else: no per-file state, readiness, metrics, logs, fight rule, symlinks, coalescing or bound on
// passes. The bench runs it like the agent, so that the agent's CPU per file can be read against
// what Node and the addon cost on their own on the same machine in the same run.
import { openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { planPatch } from '../src/cni/conflist.js';
import { isConfigName, tempNameFor } from '../src/cni/names.js';
import { loadConfig, requirePlugin } from '../src/config.js';
import { LANDING, replaceEntry } from '../src/fs/replace-batches.js';
import { addon } from '../src/watch/addon.js';
import { NativeWatcher } from '../src/watch/native.js';

const config = loadConfig(process.env);
const plugin = requirePlugin(config);
const netDir = path.join(config.hostRoot, config.netDir);
const dirfd = openSync(netDir, 'r');

const watcher = new NativeWatcher((events) => {
  for (const event of events) {
    if ((event.kind !== 'moved-in' && event.kind !== 'write-closed') || !isConfigName(event.name, config.suffixes)) continue;
    const read = addon.readEntryAt(dirfd, event.name, config.maxConfigBytes, true);
    if (read.kind !== 'file') continue;
    const content = read.bytes!.subarray(0, read.length);
    const plan = planPatch(content, plugin);
    if (plan.action !== 'write') continue;
    const xattrs = read.xattrs!.map(([key, value]): [string, Buffer, boolean] => [key, value, true]);
    // A stale or swapped landing is left as it is: the bench's writer does not rewrite a file it wrote.
    replaceEntry([dirfd, tempNameFor(event.name), event.name, plan.bytes, read.mode! & 0o7777, -1, -1, xattrs, LANDING.exchange, content]).catch(() => {});
  }
});
watcher.watchSync(netDir);
writeSync(1, '{"msg":"started"}\n');
process.on('SIGTERM', () => addon.exitNow(0));
