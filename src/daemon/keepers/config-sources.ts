// Step (1) of a pass for the names that are not a plain file in net.d (reconciler.ts): a parked
// `.conf` link, a symlink (its target, opened inside the host root), a name CNI_CONF_SUFFIXES leaves
// out, and a meta-plugin's delegate named by path. Each finds the file behind the name, or sets a
// status saying why there is none, and hands the file to the keeper's patch.
import type { Stats } from 'node:fs';
import { delegationProblem, type Delegation } from '../../cni/meta-plugin.js';
import { conflistName } from '../../cni/names.js';
import { readEntry, type EntryRead } from '../../fs/bounded-read.js';
import type { Dir } from '../../fs/dir.js';
import { errnoCode } from '../../fs/errno.js';
import { parkedLinkSuperseded, type Source } from './conf-conversion.js';
import type { KeeperDeps } from './config-keeper.js';
import { TRANSIENT_RETRY_MS, type ConfigStatuses } from './config-statuses.js';
import { openDelegate, openLinkTarget, type SymlinkTargets } from './symlink-targets.js';

/** What finding a config's source needs of the keeper. */
export interface SourceContext {
  deps: KeeperDeps;
  targets: SymlinkTargets;
  statuses: ConfigStatuses;
  forget(name: string): void;
  /** Steps (2) to (5) for the file found. */
  patch(netDir: Dir, name: string, source: Source, read: EntryRead): Promise<void>;
}

/**
 * A converted `.conf` symlink, parked under a hidden name (names.ts parkedLinkName): the conflist made
 * from its target follows the target. When the primary has put a new `X.conf` in place meanwhile,
 * that one is what counts, and the parked link goes.
 */
export function passParked(keeper: SourceContext, netDir: Dir, parked: string, original: string): Promise<void> | undefined {
  const link = netDir.lstat(parked);
  if (link === undefined || !link.isSymbolicLink()) {
    keeper.forget(parked);
    return undefined;
  }
  const superseded = parkedLinkSuperseded(netDir, original, keeper.deps.plugin.type, keeper.deps.config.maxConfigBytes);
  if (superseded === undefined) return passLinked(keeper, netDir, parked);
  // The stale link goes; what took its place is the config now, chained by its own pass. A primary's
  // own conflist is so never written over by a conversion, nor deleted by a stop.
  if (superseded === 'conflist') keeper.deps.log.warn({ link: parked, file: conflistName(original) }, 'removed a stale converted .conf link: the primary has written its own conflist since');
  keeper.targets.remove(parked);
  netDir.unlinkExisting([parked]);
  if (superseded === 'conflist') keeper.forget(parked);
  return undefined;
}

/** A config that is a symlink: its target is patched where it lives, opened inside the root. */
export async function passLinked(keeper: SourceContext, netDir: Dir, name: string): Promise<void> {
  const { config } = keeper.deps;
  const linkText = netDir.readlink(name);
  const target = openLinkTarget(keeper.deps.root, config.netDir, name, keeper.targets, name);
  if (!target.ok) {
    keeper.statuses.problem(name, target.status, target.detail);
    if (target.retrySoon) keeper.statuses.retryLater(name, TRANSIENT_RETRY_MS);
    return;
  }
  try {
    await keeper.patch(netDir, name, { dir: target.dir, name: target.name, linkText }, readEntry(target.dir, target.name, config.maxConfigBytes, { xattrs: true }));
  } finally {
    target.dir.close();
  }
}

/** A name the runtime may load that CNI_CONF_SUFFIXES leaves out: a status if it is a file or link. */
export function notOurs(keeper: SourceContext, netDir: Dir, name: string): void {
  let link: Stats | undefined;
  try {
    link = netDir.lstat(name);
  } catch (err) {
    if (errnoCode(err) !== 'ENOTDIR') throw err;
  }
  if (link === undefined || (!link.isFile() && !link.isSymbolicLink())) {
    keeper.forget(name);
    return;
  }
  keeper.targets.remove(name);
  keeper.statuses.quiet(name, 'unmanaged', `the runtime may load it, but CNI_CONF_SUFFIXES (${keeper.deps.config.suffixes.join(',')}) leaves it out`);
}

/**
 * A meta-plugin config (Multus) is never chained itself: the config it delegates to by path is,
 * where it lives, and the meta config's status is that delegate's (meta-plugin.ts).
 */
export async function passDelegate(keeper: SourceContext, netDir: Dir, name: string, delegation: Exclude<Delegation, { kind: 'embedded' }>): Promise<void> {
  const { config, root } = keeper.deps;
  if (delegation.kind !== 'path') {
    keeper.targets.remove(name);
    if (delegation.kind === 'none') keeper.statuses.problem(name, 'invalid', delegationProblem.noDelegate);
    // Multus' daemon runs the first other config of net.d, which is chained like every other one.
    else if (delegation.kind === 'auto') keeper.statuses.quiet(name, 'delegating', delegationProblem.auto);
    else keeper.statuses.problem(name, 'error', delegationProblem.byName(delegation.name, "the primary config's path"));
    return;
  }
  const target = openDelegate(root, delegation.path, keeper.targets, name);
  if (!target.ok) {
    keeper.statuses.problem(name, target.status, `Multus delegates to ${delegation.path}: ${target.detail}`);
    if (target.retrySoon) keeper.statuses.retryLater(name, TRANSIENT_RETRY_MS);
    return;
  }
  try {
    await keeper.patch(netDir, name, { dir: target.dir, name: target.name, metaDelegate: true }, readEntry(target.dir, target.name, config.maxConfigBytes, { xattrs: true }));
  } finally {
    target.dir.close();
  }
}
