// Symlink resolution confined to a root directory, component by component. Pure: the file system is
// a lookup function, so the rules are tested exhaustively without disk.
//
// Paths here are *host* paths ("/etc/cni/net.d/x"): on disk they live below the host root (the
// container's mount prefix). An absolute link target restarts at the host root, and `..` stops at it,
// so no resolution can leave the root: the same rules as openat2(RESOLVE_IN_ROOT).
import path from 'node:path';

export type EntryKind = 'file' | 'dir' | 'symlink' | 'missing' | 'other';

export interface Entry {
  kind: EntryKind;
  /** The link's text, for symlinks. */
  target?: string;
}

export type Lookup = (hostPath: string) => Entry;

export type Resolution =
  | { ok: true; path: string; kind: 'file' | 'dir' | 'other'; links: number }
  | { ok: false; code: 'ENOENT' | 'ENOTDIR' | 'ELOOP'; path: string; links: number };

/** Linux's limit on symlinks followed in one resolution (MAXSYMLINKS). */
export const MAX_LINKS = 40;
/**
 * Components looked up in one resolution. The kernel allows 40 links of up to PATH_MAX (4096) bytes
 * each, some 80,000 components at one byte each: a lookup per component on the event loop would stall
 * it for seconds, so a resolution this long ends as ELOOP (not ready, "loop"), as no real
 * configuration comes near it.
 */
export const MAX_LOOKUPS = 1024;

// `.` is kept (and a trailing slash becomes one): like the kernel, `file/.` and `file/` are ENOTDIR.
function components(p: string): string[] {
  const parts = p.split('/').filter((c) => c !== '');
  if (p.endsWith('/') && parts.length > 0) parts.push('.');
  return parts;
}

function join(parts: readonly string[]): string {
  return `/${parts.join('/')}`;
}

/**
 * Resolves `hostPath` inside the root. On success `path` is the host path of the final non-link entry.
 * ENOENT names the first missing path (a dangling link's target), so a caller can wait for it.
 */
export function resolveInRoot(hostPath: string, lookup: Lookup, maxLinks = MAX_LINKS, maxLookups = MAX_LOOKUPS): Resolution {
  if (!path.posix.isAbsolute(hostPath)) throw new Error(`not an absolute host path: ${hostPath}`);
  const resolved: string[] = [];
  let pending = components(hostPath);
  let links = 0;
  let last: Entry = { kind: 'dir' }; // the root itself
  let lookups = 0;

  while (pending.length > 0) {
    const name = pending.shift()!;
    if (last.kind !== 'dir') return { ok: false, code: 'ENOTDIR', path: join(resolved), links };
    if (name === '.') continue;
    if (name === '..') {
      resolved.pop(); // at the root this is a no-op: `..` never climbs above it
      continue;
    }
    const candidate = [...resolved, name];
    if (++lookups > maxLookups) return { ok: false, code: 'ELOOP', path: join(candidate), links };
    const entry = lookup(join(candidate));
    if (entry.kind === 'symlink') {
      links += 1;
      if (links > maxLinks) return { ok: false, code: 'ELOOP', path: join(candidate), links };
      const target = entry.target ?? '';
      if (target.startsWith('/')) resolved.length = 0;
      pending = [...components(target), ...pending];
      last = { kind: 'dir' };
      continue;
    }
    if (entry.kind === 'missing') return { ok: false, code: 'ENOENT', path: join(candidate), links };
    resolved.push(name);
    last = entry;
  }
  const kind = last.kind === 'file' || last.kind === 'dir' ? last.kind : 'other';
  return { ok: true, path: join(resolved), kind, links };
}
