// Whether something chains the plugin again after an uninstall took it out (docs/design.md, Stop and
// uninstall). Another installer of the same plugin may run on the node: linkerd's own, during a
// rollback to it, starts beside this agent and watches net.d; the moment the unchain's writes reach
// it, it puts the plugin back, within milliseconds (its Go installer) or a few hundred (its bash and
// jq script). It copies the plugin's binary only at its own start, so removing the binary now would
// leave configs naming a missing one, and every new pod failing. So before the binary and the
// kubeconfig go, net.d is watched until it has been quiet for a while, then every config the runtime
// may load is read: any that names the plugin keeps them.
import path from 'node:path';
import { planUnpatch } from '../../cni/conflist.js';
import { readEntry } from '../../fs/bounded-read.js';
import { withDirSync } from '../../fs/dir.js';
import type { HostRoot } from '../../fs/host-root.js';
import { createWatcher } from '../../watch/create-watcher.js';
import { listNodeConfigs } from '../node/node-configs.js';

/** Long enough for a jq pipeline's rewrite (linkerd's script takes ~50-100 ms a file), short for a stop. */
export const QUIET_MS = 300;

/** The configs the runtime may load (libcni's names, in net.d) that hold a plugin of `type`. */
export function configsNaming(root: HostRoot, netDir: string, suffixes: readonly string[], type: string, maxBytes: number): string[] {
  const configs = listNodeConfigs(root, netDir, suffixes) ?? [];
  const naming: string[] = [];
  for (const config of configs) {
    if (!config.libcni || config.file === undefined) continue;
    const file = config.file;
    try {
      const holds = withDirSync(root.openDir(path.posix.dirname(file)), (dir) => {
        const read = readEntry(dir, path.posix.basename(file), maxBytes);
        return read.kind === 'file' && planUnpatch(read.bytes, type).action === 'write';
      });
      if (holds) naming.push(config.name);
    } catch {
      // Gone meanwhile, or its directory: it names nothing now.
    }
  }
  return naming;
}

/**
 * Waits until no config event has come from net.d for `quietMs` (bounded by `deadlineMs`, a
 * Date.now() value), then says which configs name the plugin. The watch is armed before the first
 * look, so a re-chain lands either before that look (and is read) or after it (and is an event).
 */
export async function configsChainedAgain(root: HostRoot, netDir: string, suffixes: readonly string[], type: string, maxBytes: number, quietMs: number, deadlineMs: number): Promise<string[]> {
  const disk = root.dirOnDisk(netDir);
  if (disk === undefined) return [];
  let lastEvent = Date.now();
  const watcher = createWatcher('native', (events) => {
    for (let i = 0; i < events.length; i++) if (events.name(i) !== '' || events.kind(i) === 'overflow') lastEvent = Date.now();
  });
  try {
    try {
      await watcher.watch(disk);
    } catch {
      // No watch to be had (inotify limits): a plain wait of the quiet period instead.
    }
    for (;;) {
      const wait = Math.min(lastEvent + quietMs, deadlineMs) - Date.now();
      if (wait <= 0) break;
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
    return configsNaming(root, netDir, suffixes, type, maxBytes);
  } finally {
    await watcher.close();
  }
}
