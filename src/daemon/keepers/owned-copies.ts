// Owned mode's copies in net.d (docs/design.md, Owned mode): removed at shutdown, at uninstall, and
// when the primary changes name. Only names an owned copy may have had, and only while they hold
// the plugin: a file that merely looks like ours is somebody else's.
import { holdsPluginType } from '../../cni/conflist.js';
import { scanConfig } from '../../cni/scan-config.js';
import { isOwnedCopyName } from '../../cni/names.js';
import { readEntry } from '../../fs/bounded-read.js';
import type { Dir } from '../../fs/dir.js';

/**
 * Removes every owned copy in `dir` but `keep`: the configured name, and any name an owned copy may
 * have had (a copy of an earlier primary), each only while it holds the plugin. Returns the names
 * removed.
 */
export function removeOwnedCopies(dir: Dir, configured: string | undefined, pluginType: string, maxBytes: number, keep?: string): string[] {
  // The configured name too only while it holds the plugin: CNI_OWNED_CONFIG_NAME may name a file that
  // is somebody else's config (the primary's own, say), and that one is never removed.
  const ours = (name: string) => name !== keep && (name === configured || isOwnedCopyName(name, pluginType)) && holdsPlugin(dir, name, pluginType, maxBytes);
  return dir.unlinkExisting(dir.list().filter(ours));
}

/** True when entry `name` of `dir` is a regular file whose config holds a plugin of `pluginType`. */
export function holdsPlugin(dir: Dir, name: string, pluginType: string, maxBytes: number): boolean {
  const read = readEntry(dir, name, maxBytes);
  if (read.kind !== 'file') return false;
  try {
    return holdsPluginType(scanConfig(read.bytes), pluginType);
  } catch {
    return false;
  }
}
