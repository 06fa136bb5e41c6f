// Per-config statuses of the in-place keeper (docs/design.md, Readiness): chained, a problem (logged
// once per change), a failed pass, a fight's backoff, and the retry that follows each. This is the
// keeper's only writer of per-config readiness, and it knows which configs it has a status for:
// readiness is output, never read back. records.ts holds what was logged and the retry timer.
import type { Logger } from '../../log.js';
import type { Metrics } from '../http/metrics.js';
import { FIGHT_CAUSE, type FightDetector } from './fight-detector.js';
import type { ConfigStatus, Readiness } from './readiness.js';

/** The statuses a pass sets without a problem to log. */
type QuietStatus = Extract<ConfigStatus, 'out-of-scope' | 'unmanaged' | 'delegating' | 'not-loaded'>;
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
  /** The configs with a status on /readyz: the keeper's list of the configs it knows. */
  private readonly known = new Set<string>();

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
    this.set(name, 'backoff', `patch reverted within milliseconds of each write (${FIGHT_CAUSE}); next try in ${verdict.waitMs} ms`);
    this.retryLater(name, verdict.waitMs);
    return true;
  }

  /** A status that needs no log line: out of scope, left to another suffix list, a meta-plugin, not loaded. */
  quiet(name: string, status: QuietStatus, detail?: string): void {
    this.set(name, status, detail);
  }

  /** The config is gone: no status any more. */
  forget(name: string): void {
    this.known.delete(name);
    this.deps.readiness.delete(name);
  }

  /** Every status dropped (net.d re-armed or lost: the next scan sets them again). */
  clear(): void {
    for (const name of this.known) this.deps.readiness.delete(name);
    this.known.clear();
  }

  /** The configs with a status. */
  names(): string[] {
    return [...this.known];
  }

  private set(name: string, status: ConfigStatus, detail?: string): void {
    this.known.add(name);
    this.deps.readiness.set(name, status, detail);
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
    this.set(name, 'backoff', `patch written in a fight (${FIGHT_CAUSE}); checking that it holds`);
    this.retryLater(name, this.fights.settleMs + 1);
  }

  chained(name: string): void {
    this.set(name, 'chained');
    const record = this.records.peekConfig(name);
    if (record !== undefined) {
      record.loggedProblem = undefined;
      this.records.tidy(name, record);
    }
  }

  /** Sets a problem status; logs it only when it differs from the last one logged. True if new. */
  problem(name: string, status: ConfigStatus, detail: string): boolean {
    this.set(name, status, detail);
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
    this.set(name, 'error', `${code}: ${err.message}`);
    // The old file is still in place; the next event or resync tries again (sooner when the cause is
    // passing, such as running out of file descriptors).
    this.deps.log.error({ file: name, code, path: err.path, err: err.message }, 'patching config failed');
    if (TRANSIENT.has(code)) this.retryLater(name, TRANSIENT_RETRY_MS);
  }
}
