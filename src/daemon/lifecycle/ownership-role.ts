// The ownership role (docs/design.md, Ownership): which instance maintains the node during an
// upgrade's overlap, and the phase changes that follow. The newest instance claims the node; an
// older one stands down (passive: no patching, no cleanup at exit) and takes the node back the
// moment the newer one dies. The lock and the owner file themselves are ownership.ts.
import { errnoCode } from '../../fs/errno.js';
import type { Logger } from '../../log.js';
import type { Condition, Readiness } from '../shared/readiness.js';
import type { Owner, Ownership } from './ownership.js';
import type { PhaseState } from '../shared/phase.js';

export interface OwnershipRoleDeps {
  ownership: Ownership;
  phase: PhaseState;
  log: Logger;
  readiness: Readiness;
  /** True while net.d is watched: only then is a removed owner file claimed again. */
  netDirArmed: () => boolean;
  /** Told when this instance stands down or takes the node back (the CLI hands the health port over). */
  onRoleChange: (role: 'passive' | 'active') => void;
  /** The node is ours again: reinstall, resync, rescan. */
  onTakeBack: () => Promise<void>;
}

// Each wait is a thread blocked in flock(2) that nothing can cancel (native/owner_lock.cc): bounded,
// so that an owner file replaced in a loop costs a few threads, not one per file.
const MAX_LOCK_WAITS = 4;
const POLL_MS = 1_000;

export class OwnershipRole {
  /** The live instance this one took the node from at start (a maxSurge upgrade), if any. */
  private tookOverFrom: string | undefined;
  /**
   * Polls the owner's lock while more owner files than MAX_LOCK_WAITS are waited on at once: only
   * something replacing the owner file again and again while each holder lives gets here.
   */
  private pollTimer: NodeJS.Timeout | undefined;
  /** Owner files (by inode) whose lock a standby waits on. */
  private readonly waitingOn = new Set<number>();
  /** The owner file cannot be written. */
  private readonly condition: Condition;
  /** Another live instance owns the node: a hand-over, not a failure (no Warning on the Node). */
  private readonly standby: Condition;

  constructor(private readonly deps: OwnershipRoleDeps) {
    this.condition = deps.readiness.condition('owner');
    this.standby = deps.readiness.condition('standby');
  }

  /** net.d is watched (first time, or re-created): claim the node, or stand down. True when claimed. */
  onNetDirArmed(): boolean {
    const { ownership, phase } = this.deps;
    // A re-arm that ends after the stop began: the stop decides what becomes of the node.
    if (phase.ending) return false;
    const owner = ownership.currentOwner();
    // The newest instance claims the node at its first arm; later (net.d re-created) only if no other
    // live instance holds it.
    if (phase.starting || !ownership.isLiveOther(owner)) {
      if (phase.starting && ownership.isLiveOther(owner)) this.tookOverFrom = owner!.instance;
      this.claim();
      return true;
    }
    this.standDown(owner!);
    return false;
  }

  /** The resync: an owner file that could not be written is tried again. */
  retryClaim(): void {
    if (this.condition.failing) this.claim();
  }

  /** The owner file changed, or the owner we waited on is gone: stand down, take back, or re-claim. */
  check(): void {
    const { ownership, phase } = this.deps;
    const owner = ownership.currentOwner();
    if (phase.active) {
      if (ownership.isLiveOther(owner)) this.standDown(owner!);
      // Our file was removed or replaced by something that is no live instance (nothing holds its
      // lock, whatever the record says): claim again.
      else if (owner?.instance !== ownership.record.instance && this.deps.netDirArmed()) this.claim();
    } else if (phase.standingBy) {
      if (!ownership.isLiveOther(owner)) void this.takeBack();
      else this.awaitOwnerGone(owner!);
    }
  }

  /**
   * True when this instance took the node over from a live one at start, or another live instance
   * owns it now: either may still hold the health port we share on the host.
   */
  anotherInstanceMayHoldPort(): boolean {
    return this.tookOverFrom !== undefined || this.deps.ownership.isLiveOther(this.deps.ownership.currentOwner());
  }

  /** At stop: true when another live instance owns the node (its configuration stays), with its id. */
  ownedByAnother(): { another: boolean; instance?: string } {
    const owner = this.deps.ownership.currentOwner();
    return { another: this.deps.ownership.isLiveOther(owner), instance: owner?.instance };
  }

  dispose(): void {
    clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    this.condition.clear();
    this.standby.clear();
  }

  private claim(): void {
    try {
      this.deps.ownership.claim();
    } catch (err) {
      // A read-only or full net.d: nothing can be chained either; say so, and the resync retries.
      this.condition.set(`cannot write the owner file: ${errnoCode(err) ?? (err as Error).message}`);
      this.deps.log.error({ code: errnoCode(err), err: (err as Error).message }, 'cannot write the owner file in the config directory');
      return;
    }
    this.condition.clear();
    this.standby.clear();
  }

  /** `owner`, just read and alive, has the node: wait for it to go. */
  private standDown(owner: Owner): void {
    this.deps.phase.standDown();
    this.deps.ownership.dropLock();
    this.deps.ownership.holdStandbyLock();
    this.standby.set(`instance ${owner.instance} has taken over this node`);
    this.deps.log.warn({ owner: owner.instance }, 'a newer instance has taken over this node: no longer patching, and no cleanup on exit');
    this.deps.onRoleChange('passive');
    this.awaitOwnerGone(owner);
  }

  /**
   * Takes the node back the moment the owner dies: a blocking wait on its lock, which the kernel
   * drops with the process (SIGKILL and OOM included). Past MAX_LOCK_WAITS, the lock is polled.
   */
  private awaitOwnerGone(owner: Owner): void {
    if (this.waitingOn.has(owner.ino)) return;
    if (this.waitingOn.size >= MAX_LOCK_WAITS) {
      if (this.pollTimer === undefined) {
        this.deps.log.warn({ waits: this.waitingOn.size }, 'the owner file keeps being replaced by live holders: polling its lock');
        this.pollTimer = setInterval(() => this.check(), POLL_MS);
        this.pollTimer.unref();
      }
      return;
    }
    const wait = this.deps.ownership.ownerGone();
    if (wait === undefined) {
      // Gone between the two looks.
      queueMicrotask(() => this.check());
      return;
    }
    this.waitingOn.add(wait.ino);
    void wait.gone
      .catch((err: unknown) => this.deps.log.warn({ code: errnoCode(err), err: (err as Error).message }, 'cannot wait on the owner lock'))
      .finally(() => {
        this.waitingOn.delete(wait.ino);
        if (this.deps.phase.standingBy) this.check();
      });
  }

  /** The newer instance is gone (rolled back, or killed): this one maintains the node again. */
  private async takeBack(): Promise<void> {
    if (!this.deps.phase.standingBy) return;
    this.deps.phase.takeBack();
    this.deps.ownership.dropStandbyLock();
    clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    this.deps.log.warn('the instance that had taken over this node is gone: maintaining it again');
    this.deps.onRoleChange('active');
    this.standby.clear();
    this.claim();
    await this.deps.onTakeBack();
  }
}
