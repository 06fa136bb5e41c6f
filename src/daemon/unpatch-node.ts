// Takes our plugin out of every config on the node (targets of symlinks included), atomically, never
// over a newer write. Used by the daemon's shutdown and by `cni-chainer uninstall`.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { planUnpatch } from '../cni/conflist.js';
import { touchSymlink, writeFileAtomic } from '../fs/atomic-write.js';
import type { HostRoot } from '../fs/host-root.js';
import type { Logger } from '../log.js';
import { listNodeConfigs, type NodeConfig } from './node-configs.js';
import { errnoCode } from '../fs/errno.js';

const ATTEMPTS = 5;
// Shutdown has a deadline (terminationGracePeriodSeconds): fsyncs of many files run side by side.
const CONCURRENCY = 16;

async function unpatchOne(config: NodeConfig, netDirOnDisk: string, pluginType: string, log: Logger): Promise<boolean> {
  if (config.file === undefined) return false;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    let content: Buffer;
    try {
      content = readFileSync(config.file);
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return false;
      throw err;
    }
    const plan = planUnpatch(content.toString('utf8'), pluginType);
    if (plan.action !== 'write') return false;
    const st = statSync(config.file);
    const result = await writeFileAtomic(config.file, plan.text, { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, expect: content });
    if (result === 'stale') continue; // rewritten meanwhile: look at the newer version
    if (config.symlink !== undefined && path.dirname(config.file) !== netDirOnDisk) {
      touchSymlink(path.join(netDirOnDisk, config.name), config.symlink.text);
    }
    log.info({ file: config.name, target: config.symlink?.target }, 'removed plugin from config');
    return true;
  }
  log.warn({ file: config.name }, 'config kept changing while removing the plugin; left as it is');
  return false;
}

/** Returns the names of the configs that were rewritten. */
export async function unpatchNode(
  root: HostRoot,
  netDir: string,
  suffixes: readonly string[],
  pluginType: string,
  log: Logger,
): Promise<string[]> {
  const configs = listNodeConfigs(root, netDir, suffixes) ?? [];
  const netDirOnDisk = root.dirOnDisk(netDir);
  const done: string[] = [];
  const queue = [...configs];
  const workers = Array.from({ length: Math.min(CONCURRENCY, queue.length) }, async () => {
    for (let config = queue.shift(); config !== undefined; config = queue.shift()) {
      try {
        if (await unpatchOne(config, netDirOnDisk, pluginType, log)) done.push(config.name);
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        log.error({ file: config.name, code: e.code, err: e.message }, 'removing plugin from config failed');
      }
    }
  });
  await Promise.all(workers);
  return done;
}
