import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Readiness, type ConfigStatus, type ConditionKey } from '../../src/daemon/shared/readiness.js';

const STATUSES: ConfigStatus[] = ['chained', 'out-of-scope', 'invalid', 'dangling', 'loop', 'not-regular', 'backoff', 'unmanaged', 'too-large', 'conflict', 'error'];
const FINE = new Set<ConfigStatus>(['chained', 'out-of-scope']);

type Step = { op: 'set'; name: string; status: ConfigStatus; detail?: string } | { op: 'delete'; name: string } | { op: 'block'; key: ConditionKey; reason?: string };

const name = fc.constantFrom('05-cilium.conflist', '10-calico.conflist', '87-podman.conflist');
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant('set' as const), name, status: fc.constantFrom(...STATUSES), detail: fc.option(fc.string(), { nil: undefined }) }),
  fc.record({ op: fc.constant('delete' as const), name }),
  fc.record({ op: fc.constant('block' as const), key: fc.constantFrom<ConditionKey>('lifecycle', 'net-dir', 'target-dir:/a'), reason: fc.option(fc.constant('starting'), { nil: undefined }) }),
);

describe('readiness', () => {
  // Statuses are updated in place and `ready` comes from a running count: it must always agree with
  // the statuses themselves, whatever order they change in.
  it('is ready exactly when nothing blocks and every config is chained or out of scope', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const readiness = new Readiness();
        const model = new Map<string, { status: ConfigStatus; detail?: string }>();
        const blockers = new Map<string, string>();
        for (const s of steps) {
          if (s.op === 'set') {
            readiness.set(s.name, s.status, s.detail);
            model.set(s.name, { status: s.status, detail: s.detail });
          } else if (s.op === 'delete') {
            readiness.delete(s.name);
            model.delete(s.name);
          } else {
            readiness.block(s.key, s.reason);
            if (s.reason === undefined) blockers.delete(s.key);
            else blockers.set(s.key, s.reason);
          }
          const expected = blockers.size === 0 && [...model.values()].every((c) => FINE.has(c.status));
          expect(readiness.ready).toBe(expected);
          expect(readiness.report().ready).toBe(expected);
          for (const n of ['05-cilium.conflist', '10-calico.conflist', '87-podman.conflist']) expect(readiness.statusOf(n)).toBe(model.get(n)?.status);
        }
        const reasons = [...blockers.values(), ...[...model].filter(([, c]) => !FINE.has(c.status)).sort(([a], [b]) => (a < b ? -1 : 1)).map(([n, c]) => `${n}: ${c.status}${c.detail === undefined ? '' : ` (${c.detail})`}`)];
        expect(readiness.report().reasons).toEqual(reasons);
      }),
      { numRuns: 500 },
    );
  });

  it("a condition's handle answers from what its owner set, and /readyz says the same", () => {
    const readiness = new Readiness();
    const scan = readiness.condition('scan');
    expect([scan.failing, scan.reason]).toEqual([false, undefined]);
    scan.set('cannot list the config directory: EACCES');
    expect([scan.failing, scan.reason]).toEqual([true, 'cannot list the config directory: EACCES']);
    expect(readiness.report()).toMatchObject({ ready: false, entries: [{ kind: 'condition', key: 'scan', reason: 'cannot list the config directory: EACCES' }] });
    scan.clear();
    expect([scan.failing, scan.reason]).toEqual([false, undefined]);
    expect(readiness.report()).toMatchObject({ ready: true, entries: [] });
  });
});
