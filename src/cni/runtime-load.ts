// Which config the container runtime loads (docs/design.md, Which files). Pure.
//
// containerd's CRI and CRI-O hand net.d to libcni's ConfFiles(dir, [".conf", ".conflist", ".json"]),
// sort the names with Go's sort.Strings (byte order) and load the first; kubelet's network plugins
// did the same. Only regular files and symlinks are tried: ReadDir's directories are skipped, and a
// FIFO or device would hang or fail the load. A name that is not valid UTF-8 counts as well: Go
// reads names as bytes, though this agent cannot open it.
//
// The reconciler (CNI_PATCH_SCOPE=primary), owned mode, `check` and the node scan all ask here.
import { compareNames, isLibcniName } from './names.js';

/** What a directory entry is, as far as the load order cares. */
export type EntryKind = 'file' | 'symlink' | 'undecodable' | 'other';

export interface ConfigEntry {
  readonly name: string;
  readonly kind: EntryKind;
}

/** The entries libcni would try, in the order it tries them. */
export function loadOrder<T extends ConfigEntry>(entries: Iterable<T>): T[] {
  const tried: T[] = [];
  for (const entry of entries) if (entry.kind !== 'other' && isLibcniName(entry.name)) tried.push(entry);
  return tried.sort((a, b) => compareNames(a.name, b.name));
}

/** The entry the runtime loads: the first in load order. */
export function loadedConfig<T extends ConfigEntry>(entries: Iterable<T>): T | undefined {
  let first: T | undefined;
  for (const entry of entries) {
    if (entry.kind === 'other' || !isLibcniName(entry.name)) continue;
    if (first === undefined || compareNames(entry.name, first.name) < 0) first = entry;
  }
  return first;
}

/**
 * Owned mode's primary: the network config the runtime would load if neither our copies nor
 * meta-plugin configs (Multus, which delegates to it) were there. `setAside` says which those are.
 */
export function primaryConfig<T extends ConfigEntry>(entries: Iterable<T>, setAside: (entry: T) => boolean): T | undefined {
  return loadOrder(entries).find((entry) => !setAside(entry));
}
