// Converting a single-plugin `X.conf` into a chained `X.conflist` (docs/design.md, Which
// files): libcni loads a `.conf` as one plugin, with nowhere to chain ours, so the conflist takes
// its place. Part of the in-place keeper's write step (reconciler.ts, (4) write).
import path from 'node:path';
import { madeByConversion, planPatch } from '../../cni/conflist.js';
import { conflistName, isLibcniName, parkedLinkName, parkedLinkOriginal } from '../../cni/names.js';
import { unlinkIfUnchanged, writeFileAtomic } from '../../fs/atomic-write.js';
import { readEntry } from '../../fs/bounded-read.js';
import { sha256 } from '../../fs/content-hash.js';
import type { Dir } from '../../fs/dir.js';
import type { KeeperDeps } from './config-keeper.js';
import { TRANSIENT_RETRY_MS, type ConfigStatuses } from './config-statuses.js';
import type { FightDetector } from './fight-detector.js';
import type { Records } from './records.js';
import { resolveDelegate, type SymlinkTargets } from './symlink-targets.js';

/** What a conversion needs of the keeper. */
export interface ConversionContext {
  deps: KeeperDeps;
  records: Records;
  statuses: ConfigStatuses;
  targets: SymlinkTargets;
  fights: FightDetector;
  forget(name: string): void;
  /** Another pass of `name`: it changed while we converted it. */
  retrigger(name: string): void;
}

/** The file behind a config name: the directory it lives in (open), and its name there. */
export interface Source {
  dir: Dir;
  name: string;
  /** The symlink's text when the config is a symlink. */
  linkText?: string;
  /** A meta-plugin's delegate named by path (meta-plugin.ts): never converted, nor a meta itself. */
  metaDelegate?: boolean;
}

/**
 * A single-plugin `X.conf` becomes `X.conflist`; the `.conf` goes once the conflist is in place. An
 * existing `X.conflist` is never overwritten, unless it is the one we made from this `.conf` and
 * still holds exactly what we wrote (the primary re-created its `.conf` after our conversion).
 */
export async function convertConf(
  keeper: ConversionContext,
  netDir: Dir,
  name: string,
  destName: string,
  source: Source,
  fileKey: string,
  content: Buffer,
  text: Buffer,
  owner: { mode: number; uid: number; gid: number; xattrs: Array<[string, Buffer]> },
): Promise<void> {
  const existing = readEntry(netDir, destName, keeper.deps.config.maxConfigBytes);
  const destKey = path.join(netDir.disk, destName);
  // A parked link is the durable mark of our conversion: its conflist is ours, after a restart too.
  const parked = parkedLinkOriginal(name) !== undefined;
  let expect: Buffer | undefined;
  if (existing.kind !== 'missing') {
    if (parked && existing.kind === 'file' && existing.bytes.equals(text)) return; // already follows the target
    // A parked link marks our conversion, but only a conflist of our conversion's form is ours: the
    // primary may have written its own since (conflist.ts madeByConversion).
    const ours = existing.kind === 'file' && ((parked && madeByConversion(existing.bytes, keeper.deps.plugin.type)) || (keeper.records.file(destKey)?.madeFromConf === true && keeper.records.holdsOurWrite(destKey, sha256(existing.bytes))));
    if (!ours) {
      keeper.statuses.problem(name, 'conflict', `${destName} exists too: not converting ${name} over it`);
      return;
    }
    expect = (existing as { bytes: Buffer }).bytes;
  }
  const result = await writeFileAtomic(netDir, destName, text, expect === undefined ? { ...owner, noReplace: true } : { ...owner, expect });
  if (result === 'stale') {
    keeper.statuses.problem(name, 'conflict', `${destName} changed while converting ${name}`);
    keeper.statuses.retryLater(name, TRANSIENT_RETRY_MS);
    return;
  }
  keeper.records.wrote(destKey, sha256(text), true);
  keeper.deps.metrics.patches.inc();
  if (parked) {
    keeper.deps.log.info({ file: destName, link: parkedLinkOriginal(name) }, 'the conflist follows the target of a converted .conf link');
    return;
  }
  let removed: boolean;
  if (source.linkText !== undefined) {
    // A symlinked .conf: the link is kept, parked under a hidden name, never its target touched (it
    // belongs to whoever made the link): the conflist follows the target, and stop puts it back.
    // The target's rewrites are the primary's own, never a revert of ours.
    removed = netDir.readlink(name) === source.linkText;
    if (removed) {
      keeper.targets.set(parkedLinkName(name), fileKey);
      netDir.rename(name, parkedLinkName(name));
    }
  } else {
    // The .conf is gone once converted: its re-creation is a revert, counted like any other.
    keeper.records.converted(fileKey);
    keeper.fights.wrote(fileKey);
    removed = await unlinkIfUnchanged(netDir, name, content);
  }
  keeper.deps.log.info({ file: name, to: destName }, 'upgraded single-plugin config to a chained conflist');
  if (removed) keeper.forget(name);
  else keeper.retrigger(name); // rewritten meanwhile: convert the newer version
}

/**
 * What has taken the place of a parked link's conversion since it was made (a SIGKILL may leave the
 * link parked for long): the primary's new `X.conf`, or a conflist of that name that is not our
 * conversion (conflist.ts madeByConversion), its own. Either way the parked link is stale: put back,
 * its `.conf` would sort before the conflist and be loaded instead. Undefined: the conversion stands.
 */
export function parkedLinkSuperseded(dir: Dir, original: string, pluginType: string, maxBytes: number): 'conf' | 'conflist' | undefined {
  if (dir.lstat(original) !== undefined) return 'conf';
  const conflist = readEntry(dir, conflistName(original), maxBytes);
  if (conflist.kind === 'missing' || (conflist.kind === 'file' && madeByConversion(conflist.bytes, pluginType))) return undefined;
  return 'conflist';
}

/**
 * The meta-plugin configs of net.d that delegate by path, each with the path as written: one listing
 * and one read of every config. The reconciler keeps the result up to date from its passes, and asks
 * again only after a rescan, so that converting many `.conf` files costs one read of net.d, not one
 * per conversion.
 */
export function listMetaDelegates(deps: KeeperDeps, netDir: Dir): Map<string, string> {
  const metas = new Map<string, string>();
  // Any order: the result is a map.
  for (const name of netDir.list().filter(isLibcniName)) {
    const read = readEntry(netDir, name, deps.config.maxConfigBytes);
    if (read.kind !== 'file') continue;
    const plan = planPatch(read.bytes, deps.plugin);
    if (plan.action === 'delegates' && plan.delegation.kind === 'path') metas.set(name, plan.delegation.path);
  }
  return metas;
}

/** The meta-plugin config among `metas` (name → delegate path) that reads `source` by path, if any. */
export function metaPluginReading(deps: KeeperDeps, metas: ReadonlyMap<string, string>, netDir: Dir, source: Source): string | undefined {
  const hostPath = deps.root.fromDisk(`${source.dir.disk}/${source.name}`);
  for (const [name, delegatePath] of metas) {
    if (name === source.name && source.dir.disk === netDir.disk) continue;
    if (resolveDelegate(deps.root, delegatePath) === hostPath) return name;
  }
  return undefined;
}
