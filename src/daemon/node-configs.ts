// The configs of a node as they are on disk, each with the file that holds its content: shared by
// `check`, `uninstall` and the shutdown cleanup, which all look at net.d once rather than watch it.
import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { isConfigName, isLibcniName } from '../cni/names.js';
import type { HostRoot } from '../fs/host-root.js';
import { errnoCode } from '../fs/errno.js';

export interface NodeConfig {
  name: string;
  /** Disk path of the regular file holding the content; undefined when it cannot be resolved. */
  file?: string;
  /** For symlinks: the link text, and the resolved host path or the reason it does not resolve. */
  symlink?: { text: string; target?: string; error?: string };
  /** Whether libcni would consider this name at all. */
  libcni: boolean;
}

export function listNodeConfigs(root: HostRoot, netDir: string, suffixes: readonly string[]): NodeConfig[] | undefined {
  const netDirOnDisk = root.dirOnDisk(netDir);
  let names: string[];
  try {
    names = readdirSync(netDirOnDisk);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
  const configs: NodeConfig[] = [];
  for (const name of names) {
    if (!isConfigName(name, suffixes) && !(isLibcniName(name) && !name.startsWith('.'))) continue;
    const onDisk = path.join(netDirOnDisk, name);
    const st = lstatSync(onDisk, { throwIfNoEntry: false });
    if (st === undefined || st.isDirectory()) continue;
    const config: NodeConfig = { name, libcni: isLibcniName(name) };
    if (st.isSymbolicLink()) {
      const resolved = root.resolve(path.posix.join(netDir, name));
      config.symlink = { text: readlinkSync(onDisk) };
      if (resolved.ok && resolved.kind === 'file') {
        config.symlink.target = resolved.path;
        config.file = root.toDisk(resolved.path);
      } else {
        config.symlink.error = resolved.ok ? `${resolved.path} is not a regular file` : `${resolved.code} at ${resolved.path}`;
      }
    } else if (st.isFile()) {
      config.file = onDisk;
    }
    configs.push(config);
  }
  return configs;
}
