// Step (1) of a pass for the names that are not a plain file in net.d (in-place-pass.ts): a parked
// `.conf` link, a symlink (its target, opened inside the host root), a name CNI_CONF_SUFFIXES leaves
// out, and a meta-plugin's delegate named by path. Each finds the file behind the name, read, or the
// outcome that says why there is none (pass-outcome.ts), or, for a stale parked link, its removal
// (pass-effects.ts).
import type { Stats } from 'node:fs';
import { delegationProblem, type Delegation } from '../../cni/meta-plugin.js';
import { conflistName } from '../../cni/names.js';
import { readEntry, type EntryRead } from '../../fs/bounded-read.js';
import type { Dir } from '../../fs/dir.js';
import { errnoCode } from '../../fs/errno.js';
import { parkedLinkSuperseded } from './parked-link.js';
import type { KeeperDeps } from './config-keeper.js';
import { TRANSIENT_RETRY_MS } from './config-book.js';
import { GONE, UNCHANGED, problem, quiet, type PassOutcome } from './pass-outcome.js';
import type { UnlinkJob } from './pass-effects.js';
import { openDelegate, openLinkTarget, type SymlinkTargets } from './symlink-targets.js';

/** The file behind a config name: the directory it lives in (open), and its name there. Every field is always set. */
export interface Source {
  dir: Dir;
  name: string;
  /** The symlink's text when the config is a symlink. */
  linkText: string | undefined;
  /** A meta-plugin's delegate named by path (meta-plugin.ts): never converted, nor a meta itself. */
  metaDelegate: boolean;
}

/** The source of a config that is a regular file of `dir`. */
export function plainSource(dir: Dir, name: string): Source {
  return { dir, name, linkText: undefined, metaDelegate: false };
}

/**
 * The file found behind a name, and its read. When `source.dir` is not net.d, it was opened for this
 * pass, and the pass closes it.
 */
export interface Found {
  kind: 'found';
  source: Source;
  read: EntryRead;
}

/** What finding a config's source needs of the keeper. */
export interface SourceContext {
  deps: KeeperDeps;
  targets: SymlinkTargets;
}

/**
 * A converted `.conf` symlink, parked under a hidden name (names.ts parkedLinkName): the conflist made
 * from its target follows the target. When the primary has put a new `X.conf` in place meanwhile,
 * that one is what counts, and the parked link goes.
 */
export function findParked(keeper: SourceContext, netDir: Dir, parked: string, original: string): Found | PassOutcome | UnlinkJob {
  const link = netDir.lstat(parked);
  if (link === undefined || !link.isSymbolicLink()) return GONE;
  const superseded = parkedLinkSuperseded(netDir, original, keeper.deps.plugin.type, keeper.deps.config.maxConfigBytes);
  if (superseded === undefined) return findLinked(keeper, netDir, parked);
  // The stale link goes (the executor removes it, and the link is forgotten as gone); what took its
  // place is the config now, chained by its own pass. A primary's own conflist is so never written
  // over by a conversion, nor deleted by a stop.
  const removed = superseded === 'conflist' ? { file: parked, why: `removed a stale converted .conf link: the primary has written its own conflist (${conflistName(original)}) since` } : undefined;
  return { kind: 'unlink', dir: netDir, name: parked, expect: undefined, then: { kind: 'gone', rescan: false, removed } };
}

/** A config that is a symlink: its target is patched where it lives, opened inside the root. */
export function findLinked(keeper: SourceContext, netDir: Dir, name: string): Found | PassOutcome {
  const { config } = keeper.deps;
  const linkText = netDir.readlink(name);
  const target = openLinkTarget(keeper.deps.root, config.netDir, name, keeper.targets, name);
  if (!target.ok) return problem(target.status, target.detail, target.retrySoon ? TRANSIENT_RETRY_MS : undefined);
  return found({ dir: target.dir, name: target.name, linkText, metaDelegate: false }, config.maxConfigBytes);
}

/** A name the runtime may load that CNI_CONF_SUFFIXES leaves out: a status if it is a file or link. */
export function notOurs(keeper: SourceContext, netDir: Dir, name: string): PassOutcome {
  let link: Stats | undefined;
  try {
    link = netDir.lstat(name);
  } catch (err) {
    if (errnoCode(err) !== 'ENOTDIR') throw err;
  }
  if (link === undefined || (!link.isFile() && !link.isSymbolicLink())) return GONE;
  keeper.targets.remove(name);
  return quiet('unmanaged', `the runtime may load it, but CNI_CONF_SUFFIXES (${keeper.deps.config.suffixes.join(',')}) leaves it out`);
}

/**
 * A meta-plugin config (Multus) is never chained itself: the config it delegates to by path is,
 * where it lives, and the meta config's status is that delegate's (meta-plugin.ts).
 */
export function findDelegate(keeper: SourceContext, name: string, delegation: Exclude<Delegation, { kind: 'embedded' }>): Found | PassOutcome {
  const { config, root } = keeper.deps;
  if (delegation.kind !== 'path') {
    keeper.targets.remove(name);
    if (delegation.kind === 'none') return problem('invalid', delegationProblem.noDelegate);
    // Multus' daemon runs the first other config of net.d, which is chained like every other one.
    if (delegation.kind === 'auto') return quiet('delegating', delegationProblem.auto);
    return problem('error', delegationProblem.byName(delegation.name, "the primary config's path"));
  }
  const target = openDelegate(root, delegation.path, keeper.targets, name);
  if (!target.ok) return problem(target.status, `Multus delegates to ${delegation.path}: ${target.detail}`, target.retrySoon ? TRANSIENT_RETRY_MS : undefined);
  return found({ dir: target.dir, name: target.name, linkText: undefined, metaDelegate: true }, config.maxConfigBytes);
}

/** Reads the file behind a source; its directory is closed if the read throws. */
function found(source: Source, maxBytes: number): Found {
  try {
    return { kind: 'found', source, read: readEntry(source.dir, source.name, maxBytes, { xattrs: true }) };
  } catch (err) {
    source.dir.close();
    throw err;
  }
}

/** The outcome of a read that found no file to patch behind a source. */
export function unreadable(read: Exclude<EntryRead, { kind: 'file' }>, source: Source, maxConfigBytes: number): PassOutcome {
  switch (read.kind) {
    case 'missing':
      return UNCHANGED; // removed meanwhile: its own event follows
    case 'symlink':
      // The target was swapped for a link after we resolved it: resolve again shortly.
      return problem('dangling', 'symlink target changed while it was being read', TRANSIENT_RETRY_MS);
    case 'not-regular':
      return problem('not-regular', `${source.linkText === undefined ? 'not' : 'symlink target is not'} a regular file`);
    case 'too-large':
      // Extended attributes the agent cannot copy whole would be lost by a rewrite: left as it is.
      if (read.xattrsOver === true) return problem('too-large', 'its extended attributes are over the 64 KiB cni-chainer reads and copies');
      return problem('too-large', `${read.size} bytes, over MAX_CONFIG_BYTES (${maxConfigBytes})`);
  }
}
