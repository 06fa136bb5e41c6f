// Steps (1) to (3) of an in-place pass (reconciler.ts): what one pass decides for a config name. It
// classifies the name, reads the file behind it and decides (the content's step is the pure table of
// plan-config.ts; the binary and the fight rule are asked after it): an outcome, the write or removal
// that is due (pass-effects.ts; the executor carries it out, pass-executor.ts), or, where more than one
// write is waited on (a conversion, a file opened outside net.d), a promise of an outcome. It writes,
// removes, records and logs nothing itself: what a pass changes beyond the file it reads is data in
// its outcome (pass-outcome.ts), applied by the book.
import { planPatch } from '../../cni/conflist.js';
import { isConfigName, libcniReading, parkedLinkOriginal } from '../../cni/names.js';
import { ownerOf, readEntry, type EntryRead } from '../../fs/bounded-read.js';
import { sha256 } from '../../fs/content-hash.js';
import type { Dir } from '../../fs/dir.js';
import type { BytesInFlight } from './bytes-in-flight.js';
import { convertConf, type ConversionContext } from './conf-conversion.js';
import type { ConfigBook } from './config-book.js';
import type { KeeperDeps } from './config-keeper.js';
import { findDelegate, findLinked, findParked, notOurs, plainSource, unreadable, type Found, type Source, type SourceContext } from './config-sources.js';
import type { Decision, UnlinkJob } from './pass-effects.js';
import { planConfig } from './plan-config.js';
import type { PassExecutor } from './pass-executor.js';
import type { MetaDelegates } from './meta-delegates.js';
import { GONE, problem, quiet, written, type PassOutcome } from './pass-outcome.js';
import { PrimaryScope } from './primary-scope.js';
import type { SymlinkTargets } from './symlink-targets.js';

export class InPlacePass {
  private readonly conversion: ConversionContext;
  private readonly sources: SourceContext;
  /** CNI_PATCH_SCOPE=primary: per net.d on disk, the file the runtime loads, as listed in this turn. */
  private readonly primaryScope: PrimaryScope;

  constructor(
    private readonly deps: KeeperDeps,
    private readonly book: ConfigBook,
    private readonly targets: SymlinkTargets,
    private readonly executor: PassExecutor,
    private readonly inFlight: BytesInFlight,
    private readonly metaDelegates: MetaDelegates,
  ) {
    this.conversion = { deps, book, targets };
    this.sources = { deps, targets };
    this.primaryScope = new PrimaryScope(deps.config.suffixes);
  }

  /** The pass's synchronous part: what it decided (pass-effects.ts). */
  start(netDir: Dir, name: string): Decision {
    const { config } = this.deps;
    // (1) classify
    const original = parkedLinkOriginal(name);
    if (original !== undefined) return this.patchFound(netDir, name, findParked(this.sources, netDir, name, original));
    if (!isConfigName(name, config.suffixes)) return notOurs(this.sources, netDir, name);
    // (2) read first: for a regular file (nearly every pass) that one call is all the I/O before planning.
    const read = readEntry(netDir, name, config.maxConfigBytes, { xattrs: true });
    if (read.kind === 'missing') {
      if (netDir.hasUndecodable(name)) {
        // Readiness must not say chained while the runtime may load a file we cannot even open.
        if (config.scope === 'primary' && name !== this.primaryScope.loadedName(netDir)) return quiet('out-of-scope');
        return problem('error', 'its name is not valid UTF-8: cni-chainer cannot open it by name; rename it');
      }
      // The runtime may now load another file: in primary scope that one needs a look (the rescan),
      // against a listing without the file that is gone.
      if (config.scope !== 'primary') return GONE;
      this.primaryScope.forget(netDir);
      return { kind: 'gone', rescan: true, removed: undefined };
    }
    // Directories, FIFOs and devices are never configs: libcni skips them too.
    if (read.kind === 'not-regular') return GONE;
    if (config.scope === 'primary' && name !== this.primaryScope.loadedName(netDir)) return quiet('out-of-scope');
    if (read.kind === 'symlink') return this.patchFound(netDir, name, findLinked(this.sources, netDir, name));
    return this.patch(netDir, name, plainSource(netDir, name), read);
  }

  /** Steps (2) to (4) for the file found behind a name; a directory opened for it is closed after. */
  private patchFound(netDir: Dir, name: string, found: Found | PassOutcome | UnlinkJob): Decision {
    if (found.kind !== 'found') return found;
    const { source, read } = found;
    if (source.dir === netDir) return this.patch(netDir, name, source, read);
    // The directory opened for it is closed once the outcome is there, however it ends.
    let patching: Decision;
    try {
      patching = this.patch(netDir, name, source, read);
    } catch (err) {
      source.dir.close();
      throw err;
    }
    if (patching instanceof Promise) return patching.finally(() => source.dir.close());
    if (patching.kind === 'write' || patching.kind === 'unlink') return this.executor.settled(patching).finally(() => source.dir.close());
    source.dir.close();
    return patching;
  }

  /** Steps (2) to (4) for one file: its read checked, the decision, and the write if one is due. */
  private patch(netDir: Dir, name: string, source: Source, read: EntryRead): Decision {
    const since = this.book.takeFirstEvent(name);
    if (read.kind !== 'file') return unreadable(read, source, this.deps.config.maxConfigBytes);
    // The content and its patched copy count against the bytes in flight until the write is done;
    // xattrs too: a read holds their values until the write has copied them.
    let held = 2 * read.bytes.length;
    for (let i = 0; i < read.xattrs.length; i++) held += read.xattrs[i]![1].length;
    const decision = this.decide(netDir, name, source, read, since);
    if (decision instanceof Promise) return this.inFlight.holdUntil(held, decision);
    // A write holds them from when it starts (a meta config's bytes too, while its delegate is written).
    if (decision.kind === 'write') decision.held += held;
    return decision;
  }

  /** (3) decide (plan-config.ts): the outcome, the write that is due, or a promise of an outcome (a conversion, a delegate elsewhere). */
  private decide(netDir: Dir, name: string, source: Source, read: EntryRead & { kind: 'file' }, since: bigint): Decision {
    const content = read.bytes;
    const fileKey = `${source.dir.disk}/${source.name}`;
    this.book.fileIsThere(fileKey);
    // One lookup: what we wrote there, and its fight.
    const record = this.book.file(fileKey);
    const digest = sha256(content);
    if (this.book.holdsOurWrite(record, digest)) return written(fileKey); // the event of our own write

    // Read as the runtime reads it: by the extension of its name in net.d (a link's, not its target's;
    // a parked link's original). A meta-plugin's delegate, which Multus reads, by what it holds.
    const plan = planPatch(content, this.deps.plugin, source.metaDelegate === true ? undefined : libcniReading(parkedLinkOriginal(name) ?? name));
    // What the pass looked at: where a meta-plugin delegates, and that a regular file in net.d leads
    // nowhere else (the target watches, symlink-targets.ts).
    if (source.metaDelegate !== true && source.dir.disk === netDir.disk) this.metaDelegates.planned(name, plan);
    if (source.linkText === undefined && source.metaDelegate !== true && plan.action !== 'delegates') this.targets.remove(name);
    const step = planConfig(plan, {
      name,
      plainInNetDir: source.dir === netDir && source.linkText === undefined,
      metaDelegate: source.metaDelegate,
      digest,
      readBy: () => this.metaDelegates.readerOf(netDir, source),
    });
    switch (step.kind) {
      case 'outcome':
        return step.outcome;
      // Inside the hold (patch): the meta config's bytes stay counted while its delegate is written.
      case 'delegate':
        return this.patchFound(netDir, name, findDelegate(this.sources, name, step.delegation));
      case 'remove':
        return { kind: 'unlink', dir: netDir, name, expect: content, then: { kind: 'gone', rescan: false, removed: step.removed } };
      case 'patch':
        break;
    }
    // Never chain without the plugin's binary (plugin-binary.ts): the pod would fail, or start
    // unmeshed. The reinstall that brings it back rescans.
    const noBinary = this.deps.binary.problem();
    if (noBinary !== undefined) return problem('no-binary', noBinary);
    // The primary rewrote a file we had patched: the case a spare is for (spares.ts).
    const rewrittenAfterOurPatch = record !== undefined;
    const backoff = this.book.fightRule(record, rewrittenAfterOurPatch);
    if (backoff !== undefined) return backoff;
    const owner = ownerOf(read);
    if (step.destName !== name) return convertConf(this.conversion, netDir, name, step.destName, source, fileKey, content, step.bytes, owner);
    // (4) write: the pass starts it (runPass)
    return { kind: 'write', netDir, name, source, fileKey, content, digest, bytes: step.bytes, owner, since, rewrite: rewrittenAfterOurPatch, fighting: this.book.isFighting(record), held: 0 };
  }
}
