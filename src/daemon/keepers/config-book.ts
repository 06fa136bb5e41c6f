// A keeper's book (docs/design.md, Events): everything a keeper remembers between passes, and the one
// place a pass's outcome (pass-outcome.ts) is applied. Both keepers, in place and owned, keep one.
//
// Per config name: its status on /readyz (the book is the keeper's only writer of per-config
// readiness, and its list of the configs it knows: readiness is output, never read back), the problem
// last logged (logged once per change), the retry timer, and when the first event of a pending pass
// arrived (the patch latency metric).
//
// Per file written (a config in net.d, a symlink's target, a Multus delegate; keyed by its path on
// disk): what we last wrote there and the fight rule's state, in one record (records.ts), and, once
// the file is gone, how long that is still kept (gone-paths.ts).
import type { Logger } from '../../log.js';
import { BurstLog } from './burst-log.js';
import type { BookWords } from './book-words.js';
import type { Metrics } from '../shared/metrics.js';
import { DEFAULT_FIGHT_POLICY, FIGHT_CAUSE, FightDetector } from './fight-detector.js';
import { GonePaths } from './gone-paths.js';
import type { Landed, PassOutcome } from './pass-outcome.js';
import type { ConfigStatus, Readiness } from '../shared/readiness.js';
import { Records, type ConfigEntry, type FileRecord } from './records.js';

// Errors that say "not now" rather than "never": the pass is retried shortly, not at the next resync.
const TRANSIENT = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EINTR']);
export const TRANSIENT_RETRY_MS = 100;

export interface ConfigBookDeps {
  readiness: Readiness;
  log: Logger;
  metrics: Metrics;
  /** The clock of the fight rule and of what is kept for a removed file, in ms. */
  now: () => number;
}

/** Where a retry goes: the keeper's queue of passes. */
export interface PassTrigger {
  trigger(name: string): void;
}

export class ConfigBook {
  private readonly records = new Records();
  private readonly fights: FightDetector;
  private readonly gone: GonePaths;
  /** One info line per burst of patches: a storm of 1,000 configs would otherwise cost 1,000 synchronous log writes. */
  private readonly burst: BurstLog;
  /** The round of statuses (owned mode's sweep): each config's entry says the round it was last set in. */
  private round = 0;

  constructor(
    private readonly deps: ConfigBookDeps,
    private readonly words: BookWords,
    private readonly passes: PassTrigger,
  ) {
    this.fights = new FightDetector(DEFAULT_FIGHT_POLICY, deps.now);
    this.gone = new GonePaths(this.fights.policy.calmMs, deps.now);
    this.burst = new BurstLog((count, sample) => deps.log.info({ count, files: sample }, words.chainedBurst));
  }

  // --- per config ---

  /** Applies what a pass found for config `name`. */
  apply(name: string, outcome: PassOutcome): void {
    switch (outcome.kind) {
      case 'chained':
        this.chained(name);
        return;
      case 'written':
        if (outcome.landed !== undefined) this.landed(outcome.fileKey, outcome.landed);
        if (!this.fights.unsettled(this.records.file(outcome.fileKey))) this.chained(name);
        else this.backoff(name, `${this.words.written} in a fight (${FIGHT_CAUSE}); checking that it holds`, this.fights.settleMs + 1);
        return;
      case 'problem':
        if (outcome.landed !== undefined) this.landed(name, outcome.landed);
        this.problem(name, outcome.status, outcome.detail);
        if (outcome.retryMs !== undefined) this.retryLater(name, outcome.retryMs);
        return;
      case 'quiet':
        this.set(name, outcome.status, outcome.detail);
        return;
      case 'backoff':
        if (outcome.fightStartedMs > 0) {
          this.deps.metrics.fights.inc();
          this.deps.log.warn({ file: name, backoffMs: outcome.fightStartedMs }, this.words.fightStarted);
        }
        this.deps.log.debug({ file: name, backoffMs: outcome.retryMs }, 'backing off');
        this.deps.metrics.backoffs.inc();
        this.backoff(name, outcome.detail, outcome.retryMs);
        return;
      case 'gone':
        if (outcome.removed !== undefined) this.deps.log.warn({ file: outcome.removed.file }, outcome.removed.why);
        this.forgetConfig(name);
        return;
      case 'again':
        if (outcome.staleWrite) this.deps.metrics.staleWrites.inc();
        this.noStatus(name);
        this.passes.trigger(name);
        return;
      case 'unchanged':
        this.noStatus(name);
        return;
    }
  }

  /** A pass ended without a status to set (nothing changed, or a failure nobody reports): a new name keeps no entry. */
  noStatus(name: string): void {
    const entry = this.records.peekConfig(name);
    if (entry !== undefined) this.records.tidy(name, entry);
  }

  /** A pass threw: an error status, and a retry soon when the cause is passing (out of fds). */
  failed(name: string, error: unknown): void {
    const err = error as NodeJS.ErrnoException;
    const code = err.code ?? 'UNKNOWN';
    this.deps.metrics.writeErrors.inc({ code });
    this.set(name, 'error', `${code}: ${err.message}`);
    // The old file is still in place; the next event or resync tries again.
    this.deps.log.error({ file: name, code, path: err.path, err: err.message }, this.words.failed);
    if (TRANSIENT.has(code)) this.retryLater(name, TRANSIENT_RETRY_MS);
  }

  /** An event for `name` arrived: the patch latency is timed from the first one of a pass. */
  eventArrived(name: string): void {
    this.records.config(name).firstEvent ??= process.hrtime.bigint();
  }

  /**
   * When the first event of this pass arrived (now, for a pass no event started). The entry stays: the
   * pass ends by setting its status, or by noStatus.
   */
  takeFirstEvent(name: string): bigint {
    const pending = this.records.peekConfig(name);
    const since = pending?.firstEvent ?? process.hrtime.bigint();
    if (pending !== undefined) pending.firstEvent = undefined;
    return since;
  }

  /** The configs with a status. */
  names(): string[] {
    const names: string[] = [];
    for (const [name, entry] of this.records.configEntries()) if (entry.round !== undefined) names.push(name);
    return names;
  }

  /** The config is gone: no status, nothing logged or pending for it (a pending retry still runs). */
  forgetConfig(name: string): void {
    const entry = this.records.peekConfig(name);
    if (entry === undefined) return;
    if (entry.round !== undefined) this.deps.readiness.delete(name);
    entry.round = undefined;
    entry.loggedProblem = undefined;
    entry.firstEvent = undefined;
    this.records.tidy(name, entry);
  }

  /** Every status dropped (net.d re-armed or lost: the next scan sets them again). */
  clear(): void {
    for (const [name, entry] of this.records.configEntries()) {
      if (entry.round === undefined) continue;
      this.deps.readiness.delete(name);
      entry.round = undefined;
      this.records.tidy(name, entry);
    }
  }

  /**
   * A sync that reports every config anew (owned mode) begins; statuses it does not set again go at
   * endRound. Never cleared at the start: /readyz is asked at any moment, and must not find an empty
   * (ready) list while a sync is under way.
   */
  beginRound(): void {
    this.round += 1;
  }

  endRound(): void {
    for (const [name, entry] of this.records.configEntries()) if (entry.round !== undefined && entry.round !== this.round) this.forgetConfig(name);
  }

  /** Stop: no retry fires any more, and the burst's line is written now. */
  stop(): void {
    this.records.cancelRetries();
    this.burst.flush();
  }

  private set(name: string, status: ConfigStatus, detail?: string): ConfigEntry {
    const entry = this.records.config(name);
    entry.round = this.round;
    this.deps.readiness.set(name, status, detail);
    return entry;
  }

  private chained(name: string): void {
    this.set(name, 'chained').loggedProblem = undefined;
  }

  private problem(name: string, status: ConfigStatus, detail: string): void {
    const record = this.set(name, status, detail);
    const key = `${status}: ${detail}`;
    if (record.loggedProblem === key) return;
    record.loggedProblem = key;
    // A config that does not parse is counted once per content, as it is logged.
    if (status === 'invalid') this.deps.metrics.parseErrors.inc();
    this.deps.log.warn({ file: name, status, detail }, this.words.problem);
  }

  /** A patch this pass landed: recorded (for the fight rule and our own write's event), counted, logged. */
  private landed(fileKey: string, landed: Landed): void {
    this.wrote(fileKey, landed.digest);
    if (landed.since !== undefined) this.deps.metrics.patchLatency.observe(Number(process.hrtime.bigint() - landed.since) / 1e9);
    this.deps.metrics.patches.inc();
    // One line per file at debug; at info, one summary per burst.
    this.deps.log.debug({ file: landed.name, target: landed.target, spare: landed.spare }, 'chained plugin into config');
    this.burst.add(landed.name);
  }

  /** A fight's status: on /readyz, not logged (the fight's one warning says it). */
  private backoff(name: string, detail: string, retryMs: number): void {
    this.set(name, 'backoff', detail);
    this.retryLater(name, retryMs);
  }

  private retryLater(name: string, ms: number): void {
    const record = this.records.config(name);
    clearTimeout(record.retryTimer);
    record.retryTimer = setTimeout(() => {
      record.retryTimer = undefined;
      this.records.tidy(name, record);
      this.passes.trigger(name);
    }, ms);
    record.retryTimer.unref();
  }

  // --- per file written ---

  /** What the book keeps for `fileKey`: undefined for a file we never wrote (or whose memory expired). */
  file(fileKey: string): FileRecord | undefined {
    return this.records.file(fileKey);
  }

  /**
   * We wrote bytes to `fileKey` (`madeFromConf`: a conversion's conflist). `digest`, their sha256, is
   * kept when given: a pass that reads them back is then our own write's event (fight-detector.ts
   * needs that during a fight, owned mode for every write).
   */
  wrote(fileKey: string, digest: string | undefined, madeFromConf = false): void {
    this.fights.wrote(this.records.wrote(fileKey, digest, madeFromConf));
  }

  /** We converted the `.conf` at `fileKey` to a conflist and removed it: its re-creation is a revert. */
  converted(fileKey: string): void {
    this.fights.wrote(this.records.converted(fileKey));
  }

  /** True when `record` keeps the digest of our last write and it is `digest`: a pass reading it is our own write's event. */
  holdsOurWrite(record: FileRecord | undefined, digest: string): boolean {
    return record !== undefined && record.ours === 'wrote' && record.sha256 === digest;
  }

  /** True while the book keeps what we wrote to `fileKey`. */
  wroteBefore(fileKey: string): boolean {
    return this.records.file(fileKey) !== undefined;
  }

  /** True while the file of `record` is in a fight (fight-detector.ts). */
  isFighting(record: FileRecord | undefined): boolean {
    return this.fights.isFighting(record);
  }

  /**
   * The fight rule, about to write the file of `record` again (`reverted`: what is there replaced a
   * write of ours): a backoff outcome while it says wait (the book logs and counts it when applied);
   * undefined: write now. The rule's state moves here, in the record it keeps (fight-detector.ts).
   */
  fightRule(record: FileRecord | undefined, reverted: boolean): PassOutcome | undefined {
    const verdict = this.fights.beforeRewrite(record, reverted);
    if (verdict.waitMs === 0) return undefined;
    const detail = `${this.words.reverted} within milliseconds of each write (${FIGHT_CAUSE}); next try in ${verdict.waitMs} ms`;
    return { kind: 'backoff', detail, retryMs: verdict.waitMs, fightStartedMs: verdict.fightStarted ? verdict.startedBackoffMs : 0 };
  }

  /** `fileKey` is there: what is kept for it lives as long as the file does. */
  fileIsThere(fileKey: string): void {
    this.gone.cameBack(fileKey);
  }

  /** `fileKey` is no config any more: what is kept for it goes once it has been gone for long. */
  fileWent(fileKey: string): void {
    this.drop(this.gone.went(fileKey));
  }

  /** What is kept for files gone for long goes, also when nothing else went since (each resync). */
  expireGone(): void {
    this.drop(this.gone.expire());
  }

  private drop(expired: string[]): void {
    for (const fileKey of expired) this.records.dropFile(fileKey);
  }
}
