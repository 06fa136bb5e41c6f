// The daemon's one explicit state (docs/design.md, Start), shared by its controllers:
//
//   starting → active ⇄ passive (another live instance owns the node) → stopping → stopped
//
// Controllers ask it by name, never by comparing strings inline.
export type Phase = 'starting' | 'active' | 'passive' | 'stopping' | 'stopped';

export class PhaseState {
  current: Phase = 'starting';

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
