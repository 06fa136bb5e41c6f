// planConfig (src/daemon/keepers/plan-config.ts), the pure step of an in-place pass: a content's patch
// plan and what the pass knows of the file, to what is due. Row by row, then a property over every
// plan kind and fact.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PatchPlan } from '../../src/cni/conflist.js';
import { delegationProblem } from '../../src/cni/meta-plugin.js';
import { parkedLinkName } from '../../src/cni/names.js';
import { planConfig, type ConfigFacts, type ConfigStep } from '../../src/daemon/keepers/plan-config.js';

const BYTES = Buffer.from('{"patched":true}');
const DIGEST = 'abcdef0123456789'.repeat(4);
const DELEGATION: Extract<PatchPlan, { action: 'delegates' }>['delegation'] = { kind: 'path', path: '/etc/cni/net.d/10-calico.conflist' };

function facts(name: string, over: Partial<ConfigFacts> = {}): ConfigFacts {
  return { name, plainInNetDir: true, metaDelegate: false, digest: DIGEST, readBy: () => undefined, ...over };
}

const problemOf = (step: ConfigStep) => (step.kind === 'outcome' && step.outcome.kind === 'problem' ? [step.outcome.status, step.outcome.detail] : undefined);

describe('planConfig, row by row', () => {
  const rows: Array<[string, PatchPlan, ConfigFacts, (step: ConfigStep) => void]> = [
    ['chained already: chained, nothing to write', { action: 'none' }, facts('10-calico.conflist'), (s) => expect(s).toEqual({ kind: 'outcome', outcome: { kind: 'chained' } })],
    ['invalid: the reason and the first 12 hex digits of its sha256', { action: 'invalid', reason: 'unexpected end' }, facts('10-calico.conflist'), (s) => expect(problemOf(s)).toEqual(['invalid', `unexpected end [sha256 ${DIGEST.slice(0, 12)}]`])],
    ['refused: the reason, an error', { action: 'refuse', reason: 'no network' }, facts('00-multus.conf'), (s) => expect(problemOf(s)).toEqual(['error', 'no network'])],
    ['a meta-plugin config: its delegate is followed', { action: 'delegates', delegation: DELEGATION }, facts('00-multus.conf'), (s) => expect(s).toEqual({ kind: 'delegate', delegation: DELEGATION })],
    ['a delegate that delegates again: nested, an error', { action: 'delegates', delegation: DELEGATION }, facts('10-calico.conflist', { metaDelegate: true }), (s) => expect(problemOf(s)).toEqual(['error', delegationProblem.nested])],
    ['the interface-mode leftover in net.d: removed', { action: 'plugin-alone' }, facts('01-linkerd-cni.conf'), (s) => expect(s).toMatchObject({ kind: 'remove', removed: { file: '01-linkerd-cni.conf' } })],
    ['the leftover behind a link: left, an error', { action: 'plugin-alone' }, facts('01-linkerd-cni.conf', { plainInNetDir: false }), (s) => expect(problemOf(s)?.[0]).toBe('error')],
    ['the plugin alone under another name: left, an error', { action: 'plugin-alone' }, facts('05-mine.conf'), (s) => expect(problemOf(s)?.[1]).toContain('no network')],
    ['a conflist: patched under its own name', { action: 'write', bytes: BYTES, upgraded: false }, facts('10-calico.conflist'), (s) => expect(s).toEqual({ kind: 'patch', bytes: BYTES, destName: '10-calico.conflist' })],
    ['a .conf: converted to the .conflist of its stem', { action: 'write', bytes: BYTES, upgraded: true }, facts('10-calico.conf'), (s) => expect(s).toEqual({ kind: 'patch', bytes: BYTES, destName: '10-calico.conflist' })],
    ['a .json single-plugin config: the .conflist of its stem', { action: 'write', bytes: BYTES, upgraded: true }, facts('10-bridge.json'), (s) => expect(s).toMatchObject({ kind: 'patch', destName: '10-bridge.conflist' })],
    ['a parked .conf link: converted under its original stem', { action: 'write', bytes: BYTES, upgraded: true }, facts(parkedLinkName('10-calico.conf'), { plainInNetDir: false }), (s) => expect(s).toEqual({ kind: 'patch', bytes: BYTES, destName: '10-calico.conflist' })],
    ['X.CONF, which libcni never loads: not-loaded, left', { action: 'write', bytes: BYTES, upgraded: true }, facts('00-old-bridge.CONF'), (s) => expect(s).toMatchObject({ kind: 'outcome', outcome: { kind: 'quiet', status: 'not-loaded' } })],
    ['a .conf a meta-plugin reads by path: not converted, naming the reader', { action: 'write', bytes: BYTES, upgraded: true }, facts('10-calico.conf', { readBy: () => '00-multus.conf' }), (s) => expect(problemOf(s)?.[1]).toMatch(/^00-multus\.conf \(a meta-plugin\) reads this single-plugin config by path/)],
    ['a .conf that is a delegate itself: not converted, naming itself', { action: 'write', bytes: BYTES, upgraded: true }, facts('10-calico.conf', { metaDelegate: true }), (s) => expect(problemOf(s)?.[1]).toMatch(/^10-calico\.conf \(a meta-plugin\) reads/)],
  ];
  it.each(rows)('%s', (_what, plan, f, check) => check(planConfig(plan, f)));

  it('asks who reads a file by path only where a conversion is due', () => {
    let asked = 0;
    const readBy = () => {
      asked++;
      return undefined;
    };
    planConfig({ action: 'write', bytes: BYTES, upgraded: false }, facts('10-calico.conflist', { readBy }));
    planConfig({ action: 'none' }, facts('10-calico.conflist', { readBy }));
    expect(asked).toBe(0);
    planConfig({ action: 'write', bytes: BYTES, upgraded: true }, facts('10-calico.conf', { readBy }));
    expect(asked).toBe(1);
  });
});

describe('planConfig, over every plan and fact', () => {
  const plans = fc.oneof(
    fc.constant<PatchPlan>({ action: 'none' }),
    fc.constant<PatchPlan>({ action: 'plugin-alone' }),
    fc.string().map<PatchPlan>((reason) => ({ action: 'invalid', reason })),
    fc.string().map<PatchPlan>((reason) => ({ action: 'refuse', reason })),
    fc.constant<PatchPlan>({ action: 'delegates', delegation: DELEGATION }),
    fc.boolean().map<PatchPlan>((upgraded) => ({ action: 'write', bytes: BYTES, upgraded })),
  );
  const names = fc.constantFrom('10-calico.conflist', '10-calico.conf', '10-a.json', '01-linkerd-cni.conf', 'X.CONF', '99-z.conflist');
  it('writes only what the plan wrote, under a name the runtime loads; never patches a delegate that delegates', () => {
    fc.assert(
      fc.property(plans, names, fc.boolean(), fc.boolean(), fc.option(fc.constant('00-multus.conf'), { nil: undefined }), (plan, name, plain, metaDelegate, reader) => {
        const step = planConfig(plan, facts(name, { plainInNetDir: plain, metaDelegate, readBy: () => reader }));
        if (step.kind === 'patch') {
          expect(plan.action).toBe('write');
          expect(step.bytes).toBe(BYTES);
          expect(step.destName.endsWith('.conflist') || step.destName === name).toBe(true);
          if (step.destName !== name) expect(metaDelegate || reader !== undefined).toBe(false);
        }
        if (step.kind === 'delegate') expect(metaDelegate).toBe(false);
        if (step.kind === 'remove') expect([name, plain, plan.action]).toEqual(['01-linkerd-cni.conf', true, 'plugin-alone']);
      }),
    );
  });
});
