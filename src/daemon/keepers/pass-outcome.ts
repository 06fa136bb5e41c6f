// What one pass found for one config (docs/design.md, Events). The stages of a pass (classify, read,
// decide, write) return it; the keeper's book (config-book.ts) applies it: the per-config status on
// /readyz, the problem logged once, the retry timer. A stage never sets a status itself.
import type { ConfigStatus, ProblemStatus } from '../shared/readiness.js';

/** The statuses a pass sets without a problem to log. */
export type QuietStatus = Extract<ConfigStatus, 'out-of-scope' | 'unmanaged' | 'delegating' | 'not-loaded'>;

export type PassOutcome =
  /** The config holds the plugin, and nothing was written. */
  | { kind: 'chained' }
  /** We wrote `fileKey`: chained, unless it was written in a fight and is too young to tell (fight-detector.ts). */
  | { kind: 'written'; fileKey: string }
  /** Left as it is: on /readyz, logged once per change; `retryMs` when the cause is passing. */
  | { kind: 'problem'; status: ProblemStatus; detail: string; retryMs?: number }
  /** A status that is no problem, or one that needs no log line. */
  | { kind: 'quiet'; status: QuietStatus; detail?: string }
  /** The fight rule holds the write back (the one warning per fight is the book's). */
  | { kind: 'backoff'; detail: string; retryMs: number }
  /** No config by this name any more: what is kept for it goes. */
  | { kind: 'gone' }
  /** It changed while we worked on it: another pass. */
  | { kind: 'again' }
  /** Nothing to record: its own event follows, or the name has no status (a parked link). */
  | { kind: 'unchanged' };

export const CHAINED: PassOutcome = { kind: 'chained' };
export const GONE: PassOutcome = { kind: 'gone' };
export const AGAIN: PassOutcome = { kind: 'again' };
export const UNCHANGED: PassOutcome = { kind: 'unchanged' };

export function problem(status: ProblemStatus, detail: string, retryMs?: number): PassOutcome {
  return retryMs === undefined ? { kind: 'problem', status, detail } : { kind: 'problem', status, detail, retryMs };
}

export function quiet(status: QuietStatus, detail?: string): PassOutcome {
  return detail === undefined ? { kind: 'quiet', status } : { kind: 'quiet', status, detail };
}
