import { describe, expect, it } from 'vitest';
import { FightDetector } from '../../src/daemon/fight-detector.js';

function detector() {
  let now = 0;
  const fights = new FightDetector({ threshold: 3, windowMs: 1000, baseBackoffMs: 100, maxBackoffMs: 400 }, () => now);
  return { fights, advance: (ms: number) => (now += ms) };
}

describe('FightDetector', () => {
  it('lets occasional reverts through (a primary CNI restarting now and then)', () => {
    const { fights, advance } = detector();
    for (let i = 0; i < 10; i++) {
      expect(fights.recordRevert('f')).toEqual({ backoffMs: 0, fightStarted: false });
      advance(600);
    }
    expect(fights.isFighting('f')).toBe(false);
  });

  it('backs off exponentially up to the cap, and warns only once', () => {
    const { fights, advance } = detector();
    fights.recordRevert('f');
    fights.recordRevert('f');
    expect(fights.recordRevert('f')).toEqual({ backoffMs: 100, fightStarted: true });
    expect(fights.backoffLeft('f')).toBe(100);
    advance(100);
    expect(fights.backoffLeft('f')).toBe(0);
    expect(fights.recordRevert('f')).toEqual({ backoffMs: 200, fightStarted: false });
    advance(200);
    expect(fights.recordRevert('f').backoffMs).toBe(400);
    advance(400);
    expect(fights.recordRevert('f').backoffMs).toBe(400);
    expect(fights.isFighting('f')).toBe(true);
  });

  it('ends the fight once the patch held for a whole window', () => {
    const { fights, advance } = detector();
    for (let i = 0; i < 3; i++) fights.recordRevert('f');
    fights.recordStable('f');
    expect(fights.isFighting('f')).toBe(true);
    advance(1000);
    fights.recordStable('f');
    expect(fights.isFighting('f')).toBe(false);
    expect(fights.recordRevert('f').backoffMs).toBe(0);
  });

  it('keeps files apart', () => {
    const { fights } = detector();
    for (let i = 0; i < 3; i++) fights.recordRevert('a');
    expect(fights.isFighting('a')).toBe(true);
    expect(fights.isFighting('b')).toBe(false);
    expect(fights.backoffLeft('b')).toBe(0);
  });
});
