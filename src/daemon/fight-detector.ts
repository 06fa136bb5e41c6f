// A primary CNI that keeps reverting our patch (Cilium's cni.exclusive, aws-node restarting) must not
// drive an endless write-and-log loop. Per file: a few reverts inside a short window start an
// exponential backoff, and only the first one is worth a warning.

export interface FightPolicy {
  /** Reverts inside `windowMs` that count as a fight. */
  threshold: number;
  windowMs: number;
  baseBackoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_FIGHT_POLICY: FightPolicy = { threshold: 5, windowMs: 10_000, baseBackoffMs: 1_000, maxBackoffMs: 60_000 };

export interface RevertVerdict {
  /** How long to wait before patching again; 0 = patch now. */
  backoffMs: number;
  /** True the first time this file crosses into a fight (the moment to warn, once). */
  fightStarted: boolean;
}

interface FileState {
  reverts: number[];
  level: number;
  until: number;
}

export class FightDetector {
  private readonly files = new Map<string, FileState>();

  constructor(
    private readonly policy: FightPolicy = DEFAULT_FIGHT_POLICY,
    private readonly now: () => number = Date.now,
  ) {}

  /** Someone replaced our patched version with an unpatched one. */
  recordRevert(key: string): RevertVerdict {
    const now = this.now();
    const state = this.files.get(key) ?? { reverts: [], level: 0, until: 0 };
    this.files.set(key, state);
    state.reverts = state.reverts.filter((t) => now - t < this.policy.windowMs);
    state.reverts.push(now);
    if (state.reverts.length < this.policy.threshold) return { backoffMs: 0, fightStarted: false };
    state.level += 1;
    const backoffMs = Math.min(this.policy.baseBackoffMs * 2 ** (state.level - 1), this.policy.maxBackoffMs);
    state.until = now + backoffMs;
    return { backoffMs, fightStarted: state.level === 1 };
  }

  /** Milliseconds left in the current backoff of `key` (0 when it may be patched). */
  backoffLeft(key: string): number {
    const state = this.files.get(key);
    return state === undefined ? 0 : Math.max(0, state.until - this.now());
  }

  isFighting(key: string): boolean {
    return (this.files.get(key)?.level ?? 0) > 0;
  }

  /** The file held our patch: once a whole window passed without a revert, the fight is over. */
  recordStable(key: string): void {
    const state = this.files.get(key);
    if (state === undefined) return;
    const last = state.reverts.at(-1) ?? 0;
    if (this.now() - last >= this.policy.windowMs && this.backoffLeft(key) === 0) this.files.delete(key);
  }

  forget(key: string): void {
    this.files.delete(key);
  }
}
