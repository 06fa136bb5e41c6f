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

interface FileState {
  streak: number;
  lastReactive: number;
  level: number;
  until: number;
}

export class FightDetector {
  private readonly files = new Map<string, FileState>(); // only files that were ever reverted
  private readonly lastWrite = new Map<string, number>(); // our last write per file, until its revert

  constructor(
    readonly policy: FightPolicy = DEFAULT_FIGHT_POLICY,
    private readonly now: () => number = monotonicMs,
  ) {}

  private state(key: string): FileState {
    let state = this.files.get(key);
    if (state === undefined) {
      state = { streak: 0, lastReactive: -Infinity, level: 0, until: 0 };
      this.files.set(key, state);
    }
    return state;
  }

  /** Our patch of `key` landed now. */
  wrote(key: string): void {
    this.lastWrite.set(key, this.now());
  }

  /** We found our patch of `key` replaced by an unpatched version. */
  reverted(key: string): RevertVerdict {
    const now = this.now();
    const state = this.state(key);
    const lastWrite = this.lastWrite.get(key);
    const reactive = lastWrite !== undefined && now - lastWrite <= this.policy.reactiveMs;
    this.lastWrite.delete(key); // one revert per write of ours
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
   * The fight rule, at the moment we are about to write `key` again because it lacks our patch.
   * `reverted`: what is there replaced a write of ours. A revert (or any new look during a fight)
   * counts once per write of ours; `waitMs` is the backoff left (0: write now), and `fightStarted`
   * is the one moment per fight to warn.
   */
  beforeRewrite(key: string, reverted: boolean): { waitMs: number; fightStarted: boolean; startedBackoffMs: number } {
    let fightStarted = false;
    let startedBackoffMs = 0;
    if (reverted || this.isFighting(key)) {
      const verdict = this.reverted(key);
      fightStarted = verdict.fightStarted;
      startedBackoffMs = verdict.backoffMs;
    }
    return { waitMs: this.backoffLeft(key), fightStarted, startedBackoffMs };
  }

  /** Milliseconds left in the current backoff of `key` (0 when it may be patched). */
  backoffLeft(key: string): number {
    const state = this.files.get(key);
    return state === undefined ? 0 : Math.max(0, Math.ceil(state.until - this.now()));
  }

  /**
   * True while `key` is in a fight and our last write is too young to tell whether it holds: readiness
   * must not say chained in the milliseconds before the other writer reverts it again.
   */
  unsettled(key: string): boolean {
    if (!this.isFighting(key)) return false;
    const wrote = this.lastWrite.get(key);
    return wrote !== undefined && this.now() - wrote <= this.settleMs;
  }

  /** How long after our write a fight's patch counts as holding: twice the reaction window. */
  get settleMs(): number {
    return 2 * this.policy.reactiveMs;
  }

  isFighting(key: string): boolean {
    return (this.files.get(key)?.level ?? 0) > 0;
  }

  forget(key: string): void {
    this.files.delete(key);
    this.lastWrite.delete(key);
  }
}
