// The daemon's phase moves only along its named transitions (phase.ts): every pair of phase and
// transition is tried, and each either lands where the state machine says or throws.
import { describe, expect, it } from 'vitest';
import { PhaseState, type Phase } from '../../src/daemon/shared/phase.js';

type Transition = 'started' | 'standDown' | 'takeBack' | 'stopping' | 'stopped';

// Where each transition leads from each phase; undefined: refused.
const EXPECTED: Record<Phase, Record<Transition, Phase | undefined>> = {
  starting: { started: 'active', standDown: 'passive', takeBack: 'active', stopping: 'stopping', stopped: undefined },
  active: { started: 'active', standDown: 'passive', takeBack: undefined, stopping: 'stopping', stopped: undefined },
  passive: { started: 'passive', standDown: 'passive', takeBack: 'active', stopping: 'stopping', stopped: undefined },
  stopping: { started: 'stopping', standDown: undefined, takeBack: undefined, stopping: undefined, stopped: 'stopped' },
  stopped: { started: 'stopped', standDown: undefined, takeBack: undefined, stopping: undefined, stopped: undefined },
};

// The shortest way from a new PhaseState to each phase.
const PATH: Record<Phase, Transition[]> = {
  starting: [],
  active: ['started'],
  passive: ['standDown'],
  stopping: ['stopping'],
  stopped: ['stopping', 'stopped'],
};

describe('the phase', () => {
  for (const [from, moves] of Object.entries(EXPECTED) as Array<[Phase, Record<Transition, Phase | undefined>]>) {
    for (const [transition, to] of Object.entries(moves) as Array<[Transition, Phase | undefined]>) {
      it(`${from} + ${transition} → ${to ?? 'refused'}`, () => {
        const phase = new PhaseState();
        for (const step of PATH[from]) phase[step]();
        expect(phase.current).toBe(from);
        if (to === undefined) {
          expect(() => phase[transition]()).toThrow(`phase ${from} cannot become`);
          expect(phase.current).toBe(from);
        } else {
          phase[transition]();
          expect(phase.current).toBe(to);
        }
      });
    }
  }
});
