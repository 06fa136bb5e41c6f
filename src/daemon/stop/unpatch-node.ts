// Takes our plugin out of every config on the node (targets of symlinks included), atomically, never
// over a newer write. Used by the daemon's shutdown and by `cni-chainer uninstall`.
import path from 'node:path';
import { planUnpatch, type UnpatchPlan } from '../../cni/conflist.js';
import { resolveDelegate } from '../shared/delegate-path.js';
import { writeFileAtomic } from '../../fs/atomic-write.js';
import { touchSymlink } from '../../fs/touch-symlink.js';
import { ownerOf, readEntry } from '../../fs/bounded-read.js';
import { withDir } from '../../fs/dir.js';
import type { HostRoot } from '../../fs/host-root.js';
import type { Logger } from '../../log.js';
import { isOwnedCopyName } from '../../cni/names.js';
import { withDirSync } from '../../fs/dir.js';
import { listNodeConfigs, type NodeConfig } from '../node/node-configs.js';
import { restoreParkedLinks } from './parked-links.js';

// Backups other agents make of the configs they push aside, and never restore: Cilium's cni.exclusive
// renames every other config to `<name>.cilium_bak`, and reads them back in its chaining mode. Ours
// (of an in-place patch, or an owned copy) must not outlive us carrying the plugin.
const BACKUP_SUFFIXES = ['.cilium_bak'];

const ATTEMPTS = 5;
// Shutdown has a deadline (terminationGracePeriodSeconds): fsyncs of many files run side by side.
const CONCURRENCY = 16;

export interface UnpatchResult {
  /** Configs the plugin was removed from. */
  unpatched: string[];
  /** Configs that still hold the plugin: removing it failed, or the file kept changing. */
  failed: string[];
}

type Outcome = 'removed' | 'absent' | 'kept';

/**
 * 'removed', 'absent' (nothing to do), or 'kept' (the plugin is still in the file); and, for a
 * meta-plugin config (Multus), the file it delegates to by path, as written, found by the same read.
 */
async function unpatchOne(root: HostRoot, config: NodeConfig & { backupOfOwnedCopy?: boolean }, netDir: string, pluginType: string, maxBytes: number, log: Logger): Promise<{ outcome: Outcome; delegatePath?: string }> {
  const done = (outcome: Outcome, plan?: UnpatchPlan) => (plan !== undefined && plan.action !== 'invalid' && plan.delegatePath !== undefined ? { outcome, delegatePath: plan.delegatePath } : { outcome });
  if (config.file === undefined) return done('absent');
  const file = config.file;
  if (config.backupOfOwnedCopy === true) {
    // A backup of our own copy: ours alone, so it goes whole.
    return withDir(root.openDir(path.posix.dirname(file)), (dir) => {
      const read = readEntry(dir, config.name, maxBytes);
      if (read.kind !== 'file' || planUnpatch(read.bytes, pluginType).action !== 'write') return done('absent');
      dir.unlink(config.name);
      log.info({ file: config.name }, 'removed a backup another agent made of the owned config');
      return done('removed');
    });
  }
  return withDir(root.openDir(path.posix.dirname(file)), async (dir) => {
    const name = path.posix.basename(file);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const read = readEntry(dir, name, maxBytes, { xattrs: true });
      if (read.kind === 'too-large' && read.xattrsOver === true) {
        // Xattrs grown past what the agent copies since it chained the file: it cannot be rewritten
        // faithfully, and if it holds the plugin, the binary must stay.
        const plain = readEntry(dir, name, maxBytes);
        const plainPlan = plain.kind === 'file' ? planUnpatch(plain.bytes, pluginType) : undefined;
        if (plainPlan?.action === 'write') {
          log.error({ file: config.name }, 'cannot remove the plugin: the config has more extended attributes than cni-chainer copies');
          return done('kept', plainPlan);
        }
        return done('absent', plainPlan);
      }
      if (read.kind !== 'file') return done('absent');
      const plan = planUnpatch(read.bytes, pluginType);
      if (plan.action !== 'write') return done('absent', plan);
      const result = await writeFileAtomic(dir, name, plan.bytes, { ...ownerOf(read), expect: read.bytes });
      if (result === 'stale') continue; // rewritten meanwhile: look at the newer version
      if (config.symlink !== undefined && path.posix.dirname(file) !== netDir) {
        await withDir(root.openDir(netDir), (netDirHandle) => touchSymlink(netDirHandle, config.name, config.symlink!.text));
      }
      log.info({ file: config.name, target: config.symlink?.target }, 'removed plugin from config');
      return done('removed', plan);
    }
    log.warn({ file: config.name }, 'config kept changing while removing the plugin; left as it is');
    return done('kept');
  });
}

/** Backups of configs in net.d (BACKUP_SUFFIXES): regular files only, never followed. */
function listBackups(root: HostRoot, netDir: string, pluginType: string): Array<NodeConfig & { backupOfOwnedCopy: boolean }> {
  let names: string[];
  try {
    names = withDirSync(root.openDir(netDir), (dir) => dir.list().filter((n) => BACKUP_SUFFIXES.some((s) => n.endsWith(s)) && dir.lstat(n)?.isFile() === true));
  } catch {
    return [];
  }
  return names.map((name) => {
    const original = name.slice(0, name.lastIndexOf('.'));
    return { name, file: path.posix.join(netDir, name), libcni: false, backupOfOwnedCopy: isOwnedCopyName(original, pluginType) };
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
  let found: NodeConfig[];
  try {
    const listed = listNodeConfigs(root, netDir, suffixes);
    if (listed === undefined) {
      // No net.d: nothing holds the plugin there. But a net.d that is no directory (a file, a device)
      // cannot be looked into, as `check` says too: nothing may be called done.
      const resolved = root.resolve(netDir);
      if (resolved.ok && resolved.kind !== 'dir') {
        log.error({ dir: netDir }, 'the config directory is not a directory: cannot look for configs that hold the plugin');
        return { unpatched: [], failed: [`${netDir} (is not a directory)`] };
      }
    }
    found = listed ?? [];
  } catch (err) {
    // net.d cannot be looked into: its configs may hold the plugin, so nothing may be called done.
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    log.error({ dir: netDir, code }, 'cannot list the config directory to remove the plugin');
    return { unpatched: [], failed: [`${netDir} (cannot be listed: ${code})`] };
  }
  const configs = [...found, ...listBackups(root, netDir, pluginType)];
  const listed = new Set(configs.map((c) => c.file));
  /** A file outside what net.d lists, unpatched once whatever names it. */
  const extra = (file: string) => {
    if (listed.has(file)) return;
    listed.add(file);
    queue.push({ name: file, file, libcni: false });
  };
  const queue = [...configs];
  // Former symlink targets the daemon once patched: a retargeted link left them behind, still chained.
  for (const file of extraFiles) extra(file);
  const inNetDir = new Set<NodeConfig>(found);
  const result: UnpatchResult = { unpatched: [], failed: [] };
  // A worker that finds a Multus delegate queues it and, at the latest, takes it itself once the
  // queue is empty: no worker ends while it may still add work.
  const workers = Array.from({ length: Math.min(CONCURRENCY, queue.length) }, async () => {
    for (let config = queue.shift(); config !== undefined; config = queue.shift()) {
      try {
        const { outcome, delegatePath } = await unpatchOne(root, config, netDir, pluginType, maxBytes, log);
        if (outcome === 'removed') result.unpatched.push(config.name);
        if (outcome === 'kept') result.failed.push(config.name);
        // Multus delegates named by path, wherever they live: the configs in net.d say where they are.
        const delegate = delegatePath !== undefined && inNetDir.has(config) ? resolveDelegate(root, delegatePath) : undefined;
        if (delegate !== undefined) extra(delegate);
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        if (e.code === 'ENOENT') continue; // its directory is gone: nothing holds the plugin there
        result.failed.push(config.name);
        log.error({ file: config.name, code: e.code, err: e.message }, 'removing plugin from config failed');
      }
    }
  });
  await Promise.all(workers);
  // Converted .conf links go back as they were; the conflists made from them go.
  try {
    const removed = restoreParkedLinks(root, netDir, pluginType, maxBytes, log);
    result.failed = result.failed.filter((name) => !removed.includes(name));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    log.error({ dir: netDir, code }, 'cannot put back converted .conf links');
    result.failed.push(`${netDir} (converted .conf links not put back: ${code})`);
  }
  return result;
}
