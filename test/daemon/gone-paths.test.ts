// GonePaths: which removed configs the reconciler still keeps memory for. Checked against a model over
// random sequences of removals, returns and clock steps.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GonePaths } from '../../src/daemon/keepers/gone-paths.js';

const KEEP_MS = 100;

type Step = { kind: 'went' | 'back'; path: number } | { kind: 'tick'; ms: number } | { kind: 'expire' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('went' as const), path: fc.integer({ min: 0, max: 9 }) }),
  fc.record({ kind: fc.constant('back' as const), path: fc.integer({ min: 0, max: 9 }) }),
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 60 }) }),
  fc.record({ kind: fc.constant('expire' as const) }),
);

describe('GonePaths', () => {
  it('hands back exactly the paths gone for longer than the grace, oldest first, each once (at a removal or when asked)', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        let now = 0;
        const gone = new GonePaths(KEEP_MS, () => now);
        const model = new Map<string, number>(); // path -> when it went (last time)
        for (const s of steps) {
          if (s.kind === 'tick') {
            now += s.ms;
            continue;
          }
          const expiredInModel = () => {
            const expected = [...model].filter(([, at]) => now - at > KEEP_MS).sort((a, b) => a[1] - b[1]).map(([p]) => p);
            for (const p of expected) model.delete(p);
            return expected;
          };
          if (s.kind === 'expire') {
            expect(gone.expire()).toEqual(expiredInModel());
            expect(gone.size).toBe(model.size);
            continue;
          }
          const path = `/net.d/${s.path}.conflist`;
          if (s.kind === 'back') {
            gone.cameBack(path);
            model.delete(path);
            continue;
          }
          model.delete(path);
          model.set(path, now);
          expect(gone.went(path)).toEqual(expiredInModel());
          expect(gone.size).toBe(model.size);
          for (let i = 0; i < 10; i++) expect(gone.has(`/net.d/${i}.conflist`)).toBe(model.has(`/net.d/${i}.conflist`));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('tracks at most the paths that went within the grace of the last one', () => {
    let now = 0;
    const gone = new GonePaths(KEEP_MS, () => now);
    for (let i = 0; i < 10_000; i++) {
      gone.went(`/net.d/${i}.conflist`);
      now += 1;
    }
    expect(gone.size).toBe(KEEP_MS + 1);
  });
});
