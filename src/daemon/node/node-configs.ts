// The configs of a node as they are on disk, each with the file that holds its content: shared by
// `check`, `uninstall` and the shutdown cleanup, which all look at net.d once rather than watch it.
import path from 'node:path';
import { isConfigName, isLibcniName } from '../../cni/names.js';
import type { HostRoot } from '../../fs/host-root.js';
import { withDirSync } from '../../fs/dir.js';
import { isMissing } from '../../fs/errno.js';

export interface NodeConfig {
  name: string;
  /** Host path of the regular file holding the content; undefined when it cannot be resolved. */
  file?: string;
  /** For symlinks: the link text, and the resolved host path or the reason it does not resolve. */
  symlink?: { text: string; target?: string; error?: string };
  /** Whether libcni would consider this name at all. */
  libcni: boolean;
  /** The entry's name is not UTF-8 (see Dir.hasUndecodable): the runtime may load it, we cannot open it. */
  undecodable?: boolean;
}

/** Every config entry of net.d (directories, FIFOs and devices are no configs); undefined without net.d. */
export function listNodeConfigs(root: HostRoot, netDir: string, suffixes: readonly string[]): NodeConfig[] | undefined {
  let dir;
  try {
    dir = root.openDir(netDir);
  } catch (err) {
    // Missing (or a component that is no directory, or a link loop): no config dir, no configs. Any
    // other error (EACCES, EMFILE, EIO) is thrown: "nothing there" would be a lie.
    if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ELOOP') return undefined;
    throw err;
  }
  return withDirSync(dir, (dir) => {
    const configs: NodeConfig[] = [];
    for (const name of dir.list()) {
      if (!isConfigName(name, suffixes) && !(isLibcniName(name) && !name.startsWith('.'))) continue;
      const st = dir.lstat(name);
      if (st === undefined && dir.hasUndecodable(name)) {
        configs.push({ name, libcni: isLibcniName(name), undecodable: true });
        continue;
      }
      if (st === undefined || !(st.isFile() || st.isSymbolicLink())) continue;
      const config: NodeConfig = { name, libcni: isLibcniName(name) };
      if (st.isSymbolicLink()) {
        const resolved = root.resolve(path.posix.join(netDir, name));
        config.symlink = { text: dir.readlink(name) };
        if (resolved.ok && resolved.kind === 'file') {
          config.symlink.target = resolved.path;
          config.file = resolved.path;
        } else {
          config.symlink.error = resolved.ok ? `${resolved.path} is not a regular file` : `${resolved.code} at ${resolved.path}`;
        }
      } else {
        config.file = path.posix.join(netDir, name);
      }
      configs.push(config);
    }
    return configs;
  });
}
