// A primary CNI that reverts our patch *in reaction to our write* (Cilium with cni.exclusive, a CNI
// agent that regenerates its config whenever the file changes) must not drive an endless write-and-log
// loop (docs/design.md, Fights). A revert is reactive when it lands within `reactiveMs` of our
// write: an inotify-driven rewriter answers in a few milliseconds. A primary that rewrites on its own
// schedule (a config manager every 500 ms, a restarting agent) answers our write late or never, so it is
// re-patched every time, however often it writes: backing it off would only leave its config unchained.
//
// A few reactive reverts in a row start a fight: exponential backoff per file. The level survives our
// successful writes (each write after a backoff is reverted again at once, and that doubles the
// backoff up to the cap), and one warning is logged per fight. A fight ends when reverts stop being
// reactive, or after `calmMs` without one.
import { monotonicMs } from '../../monotonic-ms.js';


/** The likely cause of a fight and its fix, for the one warning per fight and for /readyz. */
export const FIGHT_CAUSE =
  'a primary CNI in exclusive mode, such as Cilium with cni.exclusive=true: set cni.exclusive=false; or a config manager that watches the file';

export interface FightPolicy {
  /** A revert this soon after our write is a reaction to it. */
  reactiveMs: number;
  /** Reactive reverts in a row that start a fight. */
  threshold: number;
  baseBackoffMs: number;
  maxBackoffMs: number;
  /** A fight with no reactive revert for this long is over. */
  calmMs: number;
}

export const DEFAULT_FIGHT_POLICY: FightPolicy = { reactiveMs: 50, threshold: 3, baseBackoffMs: 1_000, maxBackoffMs: 60_000, calmMs: 120_000 };

export interface RevertVerdict {
  /** How long to wait before patching again; 0 = patch now. */
  backoffMs: number;
  /** True when this revert started a fight (the moment to warn, once per fight). */
  fightStarted: boolean;
  reactive: boolean;
}

/**
 * One file's part in the rule: kept in the keeper's record of the file (records.ts), since only a file
 * we wrote can be reverted. The detector holds the policy and the clock, and no state of its own.
 */
export interface FightState {
  /** Reactive reverts in a row. */
  streak: number;
  /** When the last reactive revert was seen. */
  lastReactive: number;
  /** The fight's level: 0 = no fight; the backoff doubles with each level. */
  level: number;
  /** The current backoff's end. */
  until: number;
  /** Our last write, until a revert counts it (one revert per write of ours). */
  lastWrite: number | undefined;
}

export class FightDetector {
  constructor(
    readonly policy: FightPolicy = DEFAULT_FIGHT_POLICY,
    private readonly now: () => number = monotonicMs,
  ) {}

  /** Our patch of the file landed now. */
  wrote(state: FightState): void {
    state.lastWrite = this.now();
  }

  /** We found our patch of the file replaced by an unpatched version. */
  reverted(state: FightState): RevertVerdict {
    const now = this.now();
    const lastWrite = state.lastWrite;
    const reactive = lastWrite !== undefined && now - lastWrite <= this.policy.reactiveMs;
    state.lastWrite = undefined; // one revert per write of ours
    if (now - state.lastReactive > this.policy.calmMs) {
      state.level = 0;
      state.streak = 0;
    }
    if (!reactive) {
      state.streak = 0;
      return { backoffMs: 0, fightStarted: false, reactive };
    }
    state.streak += 1;
    state.lastReactive = now;
    if (state.level === 0 && state.streak < this.policy.threshold) return { backoffMs: 0, fightStarted: false, reactive };
    state.level += 1;
    const backoffMs = Math.min(this.policy.baseBackoffMs * 2 ** (state.level - 1), this.policy.maxBackoffMs);
    state.until = now + backoffMs;
    return { backoffMs, fightStarted: state.level === 1, reactive };
  }

  /**
   * The fight rule, at the moment we are about to write the file again because it lacks our patch
   * (`state` undefined: a file we never wrote, which no fight concerns). `reverted`: what is there
   * replaced a write of ours. A revert (or any new look during a fight) counts once per write of ours;
   * `waitMs` is the backoff left (0: write now), and `fightStarted` is the one moment per fight to warn.
   */
  beforeRewrite(state: FightState | undefined, reverted: boolean): { waitMs: number; fightStarted: boolean; startedBackoffMs: number } {
    let fightStarted = false;
    let startedBackoffMs = 0;
    if (state !== undefined && (reverted || this.isFighting(state))) {
      const verdict = this.reverted(state);
      fightStarted = verdict.fightStarted;
      startedBackoffMs = verdict.backoffMs;
    }
    return { waitMs: this.backoffLeft(state), fightStarted, startedBackoffMs };
  }

  /** Milliseconds left in the current backoff of the file (0 when it may be patched). */
  backoffLeft(state: FightState | undefined): number {
    return state === undefined ? 0 : Math.max(0, Math.ceil(state.until - this.now()));
  }

  /**
   * True while the file is in a fight and our last write is too young to tell whether it holds:
   * readiness must not say chained in the milliseconds before the other writer reverts it again.
   */
  unsettled(state: FightState | undefined): boolean {
    if (state === undefined || !this.isFighting(state)) return false;
    const wrote = state.lastWrite;
    return wrote !== undefined && this.now() - wrote <= this.settleMs;
  }

  /** How long after our write a fight's patch counts as holding: twice the reaction window. */
  get settleMs(): number {
    return 2 * this.policy.reactiveMs;
  }

  isFighting(state: FightState | undefined): boolean {
    return (state?.level ?? 0) > 0;
  }
}
