// Takes our plugin out of every config on the node (targets of symlinks included), atomically, never
// over a newer write. Used by the daemon's shutdown and by `cni-chainer uninstall`.
import path from 'node:path';
import { planUnpatch } from '../cni/conflist.js';
import { touchSymlink, writeFileAtomic } from '../fs/atomic-write.js';
import { readEntry } from '../fs/bounded-read.js';
import { withDir } from '../fs/dir.js';
import type { HostRoot } from '../fs/host-root.js';
import type { Logger } from '../log.js';
import { listNodeConfigs, type NodeConfig } from './node-configs.js';

const ATTEMPTS = 5;
// Shutdown has a deadline (terminationGracePeriodSeconds): fsyncs of many files run side by side.
const CONCURRENCY = 16;

export interface UnpatchResult {
  /** Configs the plugin was removed from. */
  unpatched: string[];
  /** Configs that still hold the plugin: removing it failed, or the file kept changing. */
  failed: string[];
}

/** 'removed', 'absent' (nothing to do), or 'kept' (the plugin is still in the file). */
async function unpatchOne(root: HostRoot, config: NodeConfig, netDir: string, pluginType: string, maxBytes: number, log: Logger): Promise<'removed' | 'absent' | 'kept'> {
  if (config.file === undefined) return 'absent';
  const file = config.file;
  return withDir(root.openDir(path.posix.dirname(file)), async (dir) => {
    const name = path.posix.basename(file);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const read = readEntry(dir, name, maxBytes, true);
      if (read.kind !== 'file') return 'absent';
      const plan = planUnpatch(read.bytes, pluginType);
      if (plan.action !== 'write') return 'absent';
      const st = read.stat;
      const result = await writeFileAtomic(dir, name, plan.bytes, { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, xattrs: read.xattrs, expect: read.bytes });
      if (result === 'stale') continue; // rewritten meanwhile: look at the newer version
      if (config.symlink !== undefined && path.posix.dirname(file) !== netDir) {
        await withDir(root.openDir(netDir), (netDirHandle) => touchSymlink(netDirHandle, config.name, config.symlink!.text));
      }
      log.info({ file: config.name, target: config.symlink?.target }, 'removed plugin from config');
      return 'removed';
    }
    log.warn({ file: config.name }, 'config kept changing while removing the plugin; left as it is');
    return 'kept';
  });
}

/** Removes the plugin from every config of the node; says which configs still hold it. */
export async function unpatchNode(
  root: HostRoot,
  netDir: string,
  suffixes: readonly string[],
  pluginType: string,
  maxBytes: number,
  log: Logger,
  extraFiles: readonly string[] = [],
): Promise<UnpatchResult> {
  const configs = listNodeConfigs(root, netDir, suffixes) ?? [];
  // Former symlink targets the daemon once patched: a retargeted link left them behind, still chained.
  const listed = new Set(configs.map((c) => c.file));
  for (const file of extraFiles) if (!listed.has(file)) configs.push({ name: file, file, libcni: false });
  const result: UnpatchResult = { unpatched: [], failed: [] };
  const queue = [...configs];
  const workers = Array.from({ length: Math.min(CONCURRENCY, queue.length) }, async () => {
    for (let config = queue.shift(); config !== undefined; config = queue.shift()) {
      try {
        const outcome = await unpatchOne(root, config, netDir, pluginType, maxBytes, log);
        if (outcome === 'removed') result.unpatched.push(config.name);
        if (outcome === 'kept') result.failed.push(config.name);
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        if (e.code === 'ENOENT') continue; // its directory is gone: nothing holds the plugin there
        result.failed.push(config.name);
        log.error({ file: config.name, code: e.code, err: e.message }, 'removing plugin from config failed');
      }
    }
  });
  await Promise.all(workers);
  return result;
}
