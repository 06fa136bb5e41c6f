// Which config symlinks point at which files. A link's target may live outside net.d or carry a name
// that is not a config name (`05-cilium.conflist-current`): events on the target must still re-patch
// the link, so the target's directory is watched for as long as some link points into it.
import { readlinkSync } from 'node:fs';
import path from 'node:path';
import type { Dir } from '../../fs/dir.js';
import { errnoCode, isMissing } from '../../fs/errno.js';
import type { HostRoot } from '../../fs/host-root.js';
import type { Resolution } from '../../fs/resolve-in-root.js';
import { delegatePathCandidates, delegationProblem } from '../../cni/meta-plugin.js';

export type LinkTarget =
  | { ok: true; dir: Dir; name: string }
  | { ok: false; status: 'dangling' | 'loop' | 'not-regular'; detail: string; retrySoon: boolean };

/**
 * Follows config symlink `link` of net.d (host path `netDir`) inside the host root, records in
 * `targets` (under `key`) where its target lives so that its directory is watched, and opens the
 * target's directory, by the kernel inside the root: whatever is swapped on the way from then on, a
 * write lands in that directory or nowhere. The caller closes `dir`.
 */
export function openLinkTarget(root: HostRoot, netDir: string, link: string, targets: SymlinkTargets, key: string): LinkTarget {
  return openResolved(root, root.resolve(path.posix.join(netDir, link)), targets, key, () => {
    // For messages only: where the link says its target is (what `ls -l` shows the operator).
    const text = readlinkSync(root.toDisk(path.posix.join(netDir, link)));
    return path.posix.resolve(netDir, text);
  });
}

/**
 * The file a meta-plugin (Multus) names by path, resolved inside the host root: the path as written,
 * else without the `/host` prefix of Multus' own pod. Its directory is watched like a link target's,
 * so that the primary's rewrites of it re-chain it. The caller closes `dir`.
 */
export function openDelegate(root: HostRoot, delegatePath: string, targets: SymlinkTargets, key: string): LinkTarget {
  const paths = delegatePathCandidates(delegatePath);
  if (paths.length === 0) {
    targets.remove(key);
    return { ok: false, status: 'dangling', detail: delegationProblem.notAbsolute(delegatePath), retrySoon: false };
  }
  const candidates = paths.map((p) => root.resolve(p));
  return openResolved(root, candidates.find((r) => r.ok) ?? candidates.at(-1)!, targets, key, () => paths.at(-1)!);
}

function openResolved(root: HostRoot, resolved: Resolution, targets: SymlinkTargets, key: string, intended: () => string): LinkTarget {
  if (!resolved.ok) {
    if (resolved.code === 'ENOENT') {
      // Dangling: watch where the target would appear, and patch it when it does.
      targets.set(key, root.toDisk(resolved.path));
      if (!root.mounts.visible(resolved.path)) {
        // Not dangling on the host, most likely: this pod does not mount that host path at all.
        let target: string;
        try {
          target = intended();
        } catch {
          target = resolved.path;
        }
        return {
          ok: false,
          status: 'dangling',
          detail: `the target ${target} is on a host path this pod does not mount (it mounts ${root.mounts.paths.join(', ')}): add a hostPath volume for ${path.posix.dirname(target)} (deploy/overlays/host-paths)`,
          retrySoon: false,
        };
      }
      return { ok: false, status: 'dangling', detail: `symlink target ${resolved.path} does not exist`, retrySoon: false };
    }
    targets.remove(key);
    return { ok: false, status: resolved.code === 'ELOOP' ? 'loop' : 'dangling', detail: `symlink cannot be resolved: ${resolved.code} at ${resolved.path}`, retrySoon: false };
  }
  targets.set(key, root.toDisk(resolved.path));
  if (resolved.kind !== 'file') return { ok: false, status: 'not-regular', detail: `symlink target ${resolved.path} is not a regular file`, retrySoon: false };
  try {
    return { ok: true, dir: root.openDir(path.posix.dirname(resolved.path)), name: path.posix.basename(resolved.path) };
  } catch (err) {
    if (!isMissing(err) && errnoCode(err) !== 'ELOOP') throw err;
    return { ok: false, status: 'dangling', detail: `symlink target directory changed while resolving: ${errnoCode(err)}`, retrySoon: true };
  }
}

const NO_LINKS: readonly string[] = Object.freeze([]);

/**
 * What the layers above a keeper may ask of its symlink targets: which links an event outside net.d
 * concerns. Only the keeper changes them, in its passes, or at targetDirGone (config-keeper.ts).
 */
export interface TargetsView {
  linksTo(dir: string, name: string): readonly string[];
  isTargetDir(dir: string): boolean;
  targetDirs(): string[];
}

export class SymlinkTargets implements TargetsView {
  private readonly targetOf = new Map<string, string>(); // link name -> target on disk
  private readonly linksOf = new Map<string, Set<string>>(); // target on disk -> link names
  private readonly dirUse = new Map<string, number>(); // target dir -> links pointing into it

  constructor(
    private netDirOnDisk: string,
    /** Called when a directory other than net.d starts (true) or stops (false) holding targets. */
    private readonly onDirUse: (dir: string, used: boolean) => void,
    /** Called when no link leads to `target` (on disk) any more: removed, retargeted, or no link now. */
    private readonly onTargetLeft: (target: string) => void = () => {},
  ) {}

  /** net.d was re-resolved: targets in the new net.d need no watch of their own, others do. */
  setNetDir(netDirOnDisk: string): void {
    if (netDirOnDisk === this.netDirOnDisk) return;
    const links = [...this.targetOf];
    // The same links are set again at once: no target is left.
    for (const [link] of links) this.detach(link);
    this.netDirOnDisk = netDirOnDisk;
    for (const [link, target] of links) this.set(link, target);
  }

  set(link: string, target: string): void {
    if (this.targetOf.get(link) === target) return;
    this.remove(link);
    this.targetOf.set(link, target);
    const links = this.linksOf.get(target) ?? new Set<string>();
    links.add(link);
    this.linksOf.set(target, links);
    const dir = path.dirname(target);
    if (dir === this.netDirOnDisk) return;
    const use = (this.dirUse.get(dir) ?? 0) + 1;
    this.dirUse.set(dir, use);
    if (use === 1) this.onDirUse(dir, true);
  }

  remove(link: string): void {
    const left = this.detach(link);
    if (left !== undefined) this.onTargetLeft(left);
  }

  /** Forgets where `link` led. Returns its target when no other link leads there any more. */
  private detach(link: string): string | undefined {
    const target = this.targetOf.get(link);
    if (target === undefined) return undefined;
    this.targetOf.delete(link);
    const links = this.linksOf.get(target);
    links?.delete(link);
    const left = links === undefined || links.size === 0;
    if (left) this.linksOf.delete(target);
    const dir = path.dirname(target);
    if (dir !== this.netDirOnDisk) {
      const use = (this.dirUse.get(dir) ?? 1) - 1;
      if (use > 0) {
        this.dirUse.set(dir, use);
      } else {
        this.dirUse.delete(dir);
        this.onDirUse(dir, false);
      }
    }
    return left ? target : undefined;
  }

  /** Links whose target is the entry `name` of `dir`. */
  linksTo(dir: string, name: string): readonly string[] {
    if (this.linksOf.size === 0) return NO_LINKS; // the common case, and called for every event
    return [...(this.linksOf.get(path.join(dir, name)) ?? [])];
  }

  /** Links whose target lives in `dir`. */
  private linksInto(dir: string): string[] {
    return [...this.targetOf].filter(([, target]) => path.dirname(target) === dir).map(([link]) => link);
  }

  /** `dir` was removed or replaced: every link into it is forgotten (its next pass looks again), and returned. */
  dropDir(dir: string): string[] {
    const links = this.linksInto(dir);
    for (const link of links) this.remove(link);
    return links;
  }

  isTargetDir(dir: string): boolean {
    // Asked for every event; with no symlinked config (the common case) there is nothing to look up.
    return this.dirUse.size > 0 && this.dirUse.has(dir);
  }

  targetDirs(): string[] {
    return [...this.dirUse.keys()];
  }
}
