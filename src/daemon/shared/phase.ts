// The daemon's one explicit state (docs/design.md, Start), shared by its controllers:
//
//   starting → active ⇄ passive (another live instance owns the node) → stopping → stopped
//
// Controllers ask it by name, never by comparing strings inline, and change it only by the named
// transitions below: the daemon starts and stops, the ownership role stands down and takes back.
export type Phase = 'starting' | 'active' | 'passive' | 'stopping' | 'stopped';

// Every other move is a bug: a stopped instance never comes back, a stopping one never takes the node.
const NEXT: Readonly<Record<Phase, readonly Phase[]>> = {
  starting: ['active', 'passive', 'stopping'],
  active: ['passive', 'stopping'],
  passive: ['active', 'stopping'],
  stopping: ['stopped'],
  stopped: [],
};

export class PhaseState {
  private phase: Phase = 'starting';

  get current(): Phase {
    return this.phase;
  }

  /** The start is done: active, unless a newer instance took the node over meanwhile. */
  started(): void {
    if (this.phase === 'starting') this.to('active');
  }

  /** Another live instance owns the node (ownership-role.ts); already passive when net.d is re-armed meanwhile. */
  standDown(): void {
    if (this.phase !== 'passive') this.to('passive');
  }

  /** The owner that had taken over is gone: ours again (ownership-role.ts). */
  takeBack(): void {
    this.to('active');
  }

  stopping(): void {
    this.to('stopping');
  }

  stopped(): void {
    this.to('stopped');
  }

  private to(next: Phase): void {
    if (!NEXT[this.phase].includes(next)) throw new Error(`phase ${this.phase} cannot become ${next}`);
    this.phase = next;
  }

  /** This instance keeps the node's configs chained: starting, or active. */
  get maintaining(): boolean {
    return this.current === 'starting' || this.current === 'active';
  }

  /** The watches are meant to be live: starting, active, or passive (standing by). */
  get running(): boolean {
    return this.current === 'starting' || this.current === 'active' || this.current === 'passive';
  }

  /** Stopping or stopped: events and timers are ignored. */
  get ending(): boolean {
    return this.current === 'stopping' || this.current === 'stopped';
  }

  get standingBy(): boolean {
    return this.current === 'passive';
  }

  get starting(): boolean {
    return this.current === 'starting';
  }

  get active(): boolean {
    return this.current === 'active';
  }
}
