// Per-config statuses of the in-place keeper (docs/design.md, Readiness): chained, a problem (logged
// once per change), a failed pass, a fight's backoff, and the retry that follows each. Readiness
// holds the status; records.ts holds what was logged and the retry timer.
import type { Logger } from '../../log.js';
import type { Metrics } from '../http/metrics.js';
import { FIGHT_CAUSE, type FightDetector } from './fight-detector.js';
import type { ConfigStatus, Readiness } from './readiness.js';
import type { Records } from './records.js';

// Errors that say "not now" rather than "never": the pass is retried shortly, not at the next resync.
const TRANSIENT = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'EINTR']);
export const TRANSIENT_RETRY_MS = 100;

export interface ConfigStatusesDeps {
  readiness: Readiness;
  log: Logger;
  metrics: Metrics;
}

export class ConfigStatuses {
  constructor(
    private readonly deps: ConfigStatusesDeps,
    private readonly records: Records,
    private readonly fights: FightDetector,
    /** Schedules a pass of a config (the retry). */
    private readonly trigger: (name: string) => void,
  ) {}

  /**
   * Counts a revert of our patch (once per write of ours; `weWroteIt`: we have written this file
   * before); true when the file is in backoff and must not be written now.
   */
  fightBackoff(name: string, fileKey: string, weWroteIt: boolean): boolean {
    const verdict = this.fights.beforeRewrite(fileKey, weWroteIt);
    if (verdict.fightStarted) {
      this.deps.metrics.fights.inc();
      this.deps.log.warn({ file: name, backoffMs: verdict.startedBackoffMs }, `another writer reverts the plugin within milliseconds of every write (${FIGHT_CAUSE}); backing off`);
    }
    if (verdict.waitMs === 0) return false;
    this.deps.log.debug({ file: name, backoffMs: verdict.waitMs }, 'backing off');
    this.deps.metrics.backoffs.inc();
    this.deps.readiness.set(name, 'backoff', `patch reverted within milliseconds of each write (${FIGHT_CAUSE}); next try in ${verdict.waitMs} ms`);
    this.retryLater(name, verdict.waitMs);
    return true;
  }

  retryLater(name: string, ms: number): void {
    const record = this.records.config(name);
    clearTimeout(record.retryTimer);
    record.retryTimer = setTimeout(() => {
      record.retryTimer = undefined;
      this.records.tidy(name, record);
      this.trigger(name);
    }, ms);
    record.retryTimer.unref();
  }

  /**
   * Chained, unless the file is in a fight and our write is too young to tell whether it holds: then
   * not ready, and a look once it has held long enough (fight-detector.ts `unsettled`).
   */
  chainedOrSettling(name: string, fileKey: string): void {
    if (!this.fights.unsettled(fileKey)) {
      this.chained(name);
      return;
    }
    this.deps.readiness.set(name, 'backoff', `patch written in a fight (${FIGHT_CAUSE}); checking that it holds`);
    this.retryLater(name, this.fights.settleMs + 1);
  }

  chained(name: string): void {
    this.deps.readiness.set(name, 'chained');
    const record = this.records.peekConfig(name);
    if (record !== undefined) {
      record.loggedProblem = undefined;
      this.records.tidy(name, record);
    }
  }

  /** Sets a problem status; logs it only when it differs from the last one logged. True if new. */
  problem(name: string, status: ConfigStatus, detail: string): boolean {
    this.deps.readiness.set(name, status, detail);
    const key = `${status}: ${detail}`;
    const record = this.records.config(name);
    if (record.loggedProblem === key) return false;
    record.loggedProblem = key;
    this.deps.log.warn({ file: name, status, detail }, 'config left unchanged');
    return true;
  }

  failed(name: string, error: unknown): void {
    const err = error as NodeJS.ErrnoException;
    const code = err.code ?? 'UNKNOWN';
    this.deps.metrics.writeErrors.inc({ code });
    this.deps.readiness.set(name, 'error', `${code}: ${err.message}`);
    // The old file is still in place; the next event or resync tries again (sooner when the cause is
    // passing, such as running out of file descriptors).
    this.deps.log.error({ file: name, code, path: err.path, err: err.message }, 'patching config failed');
    if (TRANSIENT.has(code)) this.retryLater(name, TRANSIENT_RETRY_MS);
  }
}
