// Converting a single-plugin `X.conf` into a chained `X.conflist` (docs/design.md, Which
// files): libcni loads a `.conf` as one plugin, with nowhere to chain ours, so the conflist takes
// its place. Part of the in-place keeper's write step (in-place-pass.ts, decide).
import path from 'node:path';
import { madeByConversion } from '../../cni/conflist.js';
import { parkedLinkName, parkedLinkOriginal } from '../../cni/names.js';
import { writeFileAtomic } from '../../fs/atomic-write.js';
import { unlinkIfUnchanged } from '../../fs/stepwise-write.js';
import { readEntry, type FileOwner } from '../../fs/bounded-read.js';
import { sha256 } from '../../fs/content-hash.js';
import type { Dir } from '../../fs/dir.js';
import { TRANSIENT_RETRY_MS, type ConfigBook } from './config-book.js';
import type { KeeperDeps } from './config-keeper.js';
import type { Source } from './config-sources.js';
import { AGAIN, GONE, UNCHANGED, problem, type PassOutcome } from './pass-outcome.js';
import type { SymlinkTargets } from './symlink-targets.js';

/** What a conversion needs of the keeper. */
export interface ConversionContext {
  deps: KeeperDeps;
  book: ConfigBook;
  targets: SymlinkTargets;
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
  owner: FileOwner,
): Promise<PassOutcome> {
  const existing = readEntry(netDir, destName, keeper.deps.config.maxConfigBytes);
  const destKey = path.join(netDir.disk, destName);
  // A parked link is the durable mark of our conversion: its conflist is ours, after a restart too.
  const parked = parkedLinkOriginal(name) !== undefined;
  let expect: Buffer | undefined;
  if (existing.kind !== 'missing') {
    if (parked && existing.kind === 'file' && existing.bytes.equals(text)) return UNCHANGED; // already follows the target
    // A parked link marks our conversion, but only a conflist of our conversion's form is ours: the
    // primary may have written its own since (conflist.ts madeByConversion).
    // Or a conflist we made from a `.conf` and last wrote exactly as it is.
    const record = keeper.book.file(destKey);
    const ours = existing.kind === 'file' && ((parked && madeByConversion(existing.bytes, keeper.deps.plugin.type)) || (record?.madeFromConf === true && keeper.book.holdsOurWrite(record, sha256(existing.bytes))));
    if (!ours) return problem('conflict', `${destName} exists too: not converting ${name} over it`);
    expect = (existing as { bytes: Buffer }).bytes;
  }
  const result = await writeFileAtomic(netDir, destName, text, expect === undefined ? { ...owner, noReplace: true } : { ...owner, expect });
  if (result === 'stale') return problem('conflict', `${destName} changed while converting ${name}`, TRANSIENT_RETRY_MS);
  keeper.book.wrote(destKey, sha256(text), true);
  keeper.deps.metrics.patches.inc();
  if (parked) {
    keeper.deps.log.info({ file: destName, link: parkedLinkOriginal(name) }, 'the conflist follows the target of a converted .conf link');
    return UNCHANGED;
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
    keeper.book.converted(fileKey);
    removed = await unlinkIfUnchanged(netDir, name, content);
  }
  keeper.deps.log.info({ file: name, to: destName }, 'upgraded single-plugin config to a chained conflist');
  return removed ? GONE : AGAIN; // not removed: rewritten meanwhile, convert the newer version
}
