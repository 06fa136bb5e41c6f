// What one pass found for one config (docs/design.md, Events). The stages of a pass (classify, read,
// decide, write) return it, carrying as data what it changes beyond the files; the keeper's book
// (config-book.ts) applies it: the per-config status on /readyz, the records of our writes, the log
// lines and metrics, the retry timer. A stage never sets a status, logs or counts itself.
import type { ConfigStatus, ProblemStatus } from '../shared/readiness.js';

/** The statuses a pass sets without a problem to log. */
export type QuietStatus = Extract<ConfigStatus, 'out-of-scope' | 'unmanaged' | 'delegating' | 'not-loaded'>;

/** A patch the pass has just landed: what the book records of it and counts. */
export interface Landed {
  /** The config's name in net.d (the log line's). */
  name: string;
  /** sha256 of the bytes written, kept when the file is in a fight (in-place-write.ts, PatchJob.fighting). */
  digest: string | undefined;
  /** When the pass's first event arrived (the patch latency metric); undefined: not known (owned mode's sync). */
  since: bigint | undefined;
  /** The host path written when it is outside net.d. */
  target: string | undefined;
  /** Landed from a spare prepared beforehand (spares.ts). */
  spare: boolean;
}

/** A file the pass removed, said in one warning. */
export interface Removal {
  file: string;
  why: string;
}

export type PassOutcome =
  /** The config holds the plugin, and nothing was written. */
  | { kind: 'chained' }
  /**
   * `fileKey` holds our write: chained, unless it was written in a fight and is too young to tell
   * (fight-detector.ts). `landed` when this pass wrote it; undefined for the event of an earlier write.
   */
  | { kind: 'written'; fileKey: string; landed: Landed | undefined }
  /**
   * Left as it is: on /readyz, logged once per change; `retryMs` when the cause is passing. `landed`: a
   * write of ours landed all the same (owned mode's copy, shadowed by a config that sorts first).
   */
  | { kind: 'problem'; status: ProblemStatus; detail: string; retryMs?: number; landed?: Landed }
  /** A status that is no problem, or one that needs no log line. */
  | { kind: 'quiet'; status: QuietStatus; detail?: string }
  /** The fight rule holds the write back; `fightStartedMs` > 0: this backoff starts a fight (its one warning). */
  | { kind: 'backoff'; detail: string; retryMs: number; fightStartedMs: number }
  /**
   * No config by this name any more: what is kept for it goes. `rescan`: the runtime may now load
   * another file (primary scope), so net.d is listed again; `removed`: the pass removed it.
   */
  | { kind: 'gone'; rescan: boolean; removed: Removal | undefined }
  /** It changed while we worked on it: another pass. `staleWrite`: our write found a newer one and gave it back. */
  | { kind: 'again'; staleWrite: boolean }
  /** Nothing to record: its own event follows, or the name has no status (a parked link). */
  | { kind: 'unchanged' };

export const CHAINED: PassOutcome = { kind: 'chained' };
export const GONE: PassOutcome = { kind: 'gone', rescan: false, removed: undefined };
export const AGAIN: PassOutcome = { kind: 'again', staleWrite: false };
export const STALE_WRITE: PassOutcome = { kind: 'again', staleWrite: true };
export const UNCHANGED: PassOutcome = { kind: 'unchanged' };

export function problem(status: ProblemStatus, detail: string, retryMs?: number): PassOutcome {
  return retryMs === undefined ? { kind: 'problem', status, detail } : { kind: 'problem', status, detail, retryMs };
}

export function quiet(status: QuietStatus, detail?: string): PassOutcome {
  return detail === undefined ? { kind: 'quiet', status } : { kind: 'quiet', status, detail };
}

/** The event of a write of ours, or a copy already as it should be: nothing landed now. */
export function written(fileKey: string): PassOutcome {
  return { kind: 'written', fileKey, landed: undefined };
}
