import { describe, expect, it } from 'vitest';
import { FightDetector, type FightPolicy } from '../../src/daemon/keepers/fight-detector.js';
import { Records } from '../../src/daemon/keepers/records.js';

const POLICY: FightPolicy = { reactiveMs: 50, threshold: 3, baseBackoffMs: 1_000, maxBackoffMs: 60_000, calmMs: 120_000 };

// The detector keeps no state of its own: each file's lives in the keeper's record of it (records.ts).
// Two files here, f and g, each a record as the keeper makes it when a file is first written.
function detector(policy = POLICY) {
  let now = 0;
  const fights = new FightDetector(policy, () => now);
  const records = new Records();
  return { fights, f: records.wrote('f', undefined, false), g: records.wrote('g', undefined, false), advance: (ms: number) => (now += ms) };
}

/** Our write lands, the primary reverts `delay` ms later; returns the verdict. */
function writeThenRevert(d: ReturnType<typeof detector>, delay: number) {
  d.fights.wrote(d.f);
  d.advance(delay);
  return d.fights.reverted(d.f);
}

describe('FightDetector', () => {
  it('never backs off a primary that rewrites on its own schedule, however often (every 100 ms for 5 s)', () => {
    const d = detector();
    for (let i = 0; i < 50; i++) {
      // We patch ~1 ms after each of its writes; its next write comes 99 ms after ours.
      expect(writeThenRevert(d, 99)).toEqual({ backoffMs: 0, fightStarted: false, reactive: false });
      d.advance(1);
    }
    expect(d.fights.isFighting(d.f)).toBe(false);
  });

  it('backs off a primary that reverts within 2 ms of every write, doubling up to the cap, one fight', () => {
    const d = detector();
    expect(writeThenRevert(d, 2).backoffMs).toBe(0);
    expect(writeThenRevert(d, 2).backoffMs).toBe(0);
    const first = writeThenRevert(d, 2);
    expect(first).toEqual({ backoffMs: 1_000, fightStarted: true, reactive: true });
    const backoffs: number[] = [];
    let started = 0;
    for (let i = 0; i < 10; i++) {
      d.advance(d.fights.backoffLeft(d.f)); // the retry after the backoff writes again...
      const verdict = writeThenRevert(d, 2); // ...and is reverted at once
      backoffs.push(verdict.backoffMs);
      if (verdict.fightStarted) started++;
    }
    // The state survives our successful writes: the level keeps rising until the cap.
    expect(backoffs).toEqual([2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000, 60_000]);
    expect(started).toBe(0);
  });

  it('a revert that is not reactive breaks the streak before a fight starts', () => {
    const d = detector();
    writeThenRevert(d, 2);
    writeThenRevert(d, 2);
    writeThenRevert(d, 500);
    expect(writeThenRevert(d, 2).backoffMs).toBe(0);
    expect(d.fights.isFighting(d.f)).toBe(false);
  });

  it('counts one revert per write of ours', () => {
    const d = detector();
    d.fights.wrote(d.f);
    d.advance(1);
    expect(d.fights.reverted(d.f).reactive).toBe(true);
    d.advance(1);
    expect(d.fights.reverted(d.f).reactive).toBe(false); // no write of ours in between
  });

  it('ends a fight after a calm period: the next fight warns again', () => {
    const d = detector();
    for (let i = 0; i < 3; i++) writeThenRevert(d, 1);
    expect(d.fights.isFighting(d.f)).toBe(true);
    d.advance(POLICY.calmMs + 1);
    expect(writeThenRevert(d, 1).backoffMs).toBe(0);
    expect(writeThenRevert(d, 1).backoffMs).toBe(0);
    expect(writeThenRevert(d, 1)).toMatchObject({ backoffMs: 1_000, fightStarted: true });
  });

  it('keeps files apart', () => {
    const d = detector();
    for (let i = 0; i < 3; i++) writeThenRevert(d, 1);
    expect(d.fights.isFighting(d.f)).toBe(true);
    expect(d.fights.isFighting(d.g)).toBe(false);
    expect(d.fights.backoffLeft(d.g)).toBe(0);
  });

  it('in a fight, a write is unsettled until it has held twice the reaction window (readiness waits for it)', () => {
    const d = detector();
    d.fights.wrote(d.f);
    expect(d.fights.unsettled(d.f)).toBe(false); // no fight: a write is chained at once
    for (let i = 0; i < 3; i++) writeThenRevert(d, 2);
    expect(d.fights.isFighting(d.f)).toBe(true);
    d.fights.wrote(d.f);
    expect(d.fights.unsettled(d.f)).toBe(true);
    d.advance(d.fights.settleMs);
    expect(d.fights.unsettled(d.f)).toBe(true);
    d.advance(1);
    expect(d.fights.unsettled(d.f)).toBe(false); // it held: chained
    d.fights.wrote(d.f);
    d.advance(3);
    d.fights.reverted(d.f);
    expect(d.fights.unsettled(d.f)).toBe(false); // reverted: the backoff's status, not this one
  });

  it('beforeRewrite: a first write is never counted; three reactive reverts start one fight, and then every look waits', () => {
    const d = detector();
    // Not ours before, no fight: nothing counted, write now.
    expect(d.fights.beforeRewrite(d.f, false)).toEqual({ waitMs: 0, fightStarted: false, startedBackoffMs: 0 });
    const verdicts = [];
    for (let i = 0; i < 3; i++) {
      d.fights.wrote(d.f);
      d.advance(2);
      verdicts.push(d.fights.beforeRewrite(d.f, true));
    }
    expect(verdicts.map((v) => v.fightStarted)).toEqual([false, false, true]);
    expect(verdicts[2]).toEqual({ waitMs: 1_000, fightStarted: true, startedBackoffMs: 1_000 });
    // During the backoff a look that found no revert still waits, and warns no more.
    d.advance(400);
    expect(d.fights.beforeRewrite(d.f, false)).toEqual({ waitMs: 600, fightStarted: false, startedBackoffMs: 0 });
  });
});
