// placeOwnedCopy (src/daemon/keepers/owned-placement.ts): where owned mode's copy sorts among net.d's
// configs, row by row, then a property against the runtime's own choice (cni/runtime-load.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareNames } from '../../src/cni/names.js';
import { placeOwnedCopy } from '../../src/daemon/keepers/owned-placement.js';

type C = { name: string; meta: boolean };
const conf = (name: string, meta = false): C => ({ name, meta });
const place = (configs: C[], primary: string, owned: string) => {
  const p = placeOwnedCopy(configs, (c) => c.meta, primary, owned);
  return { shadowedBy: p.shadowedBy?.name, metasBefore: p.metasBefore.map((c) => c.name), bypasses: p.bypasses?.name };
};

describe('placeOwnedCopy, row by row', () => {
  it.each<[string, C[], string, string, ReturnType<typeof place>]>([
    ['the default name sorts right before its primary', [conf('10-calico.conflist')], '10-calico.conflist', '10-calico-linkerd-cni.conflist', { shadowedBy: undefined, metasBefore: [], bypasses: undefined }],
    ['a configured name after the primary: shadowed by it', [conf('10-calico.conflist')], '10-calico.conflist', 'zz-owned.conflist', { shadowedBy: '10-calico.conflist', metasBefore: [], bypasses: undefined }],
    ['the first config that sorts before the copy is named', [conf('10-a.conflist'), conf('20-b.conflist')], '10-a.conflist', '30-owned.conflist', { shadowedBy: '10-a.conflist', metasBefore: [], bypasses: undefined }],
    ['Multus first: loaded before the copy, its delegate kept in place', [conf('00-multus.conf', true), conf('10-calico.conflist')], '10-calico.conflist', '10-calico-linkerd-cni.conflist', { shadowedBy: undefined, metasBefore: ['00-multus.conf'], bypasses: undefined }],
    ['a meta-plugin between the copy and the primary: bypassed', [conf('07-multus.conf', true), conf('10-calico.conflist')], '10-calico.conflist', '05-owned.conflist', { shadowedBy: undefined, metasBefore: [], bypasses: '07-multus.conf' }],
    ['a meta-plugin after the primary: neither', [conf('10-calico.conflist'), conf('20-multus.conf', true)], '10-calico.conflist', '10-calico-linkerd-cni.conflist', { shadowedBy: undefined, metasBefore: [], bypasses: undefined }],
    ['no configs: nothing in the way', [], '10-calico.conflist', '10-calico-linkerd-cni.conflist', { shadowedBy: undefined, metasBefore: [], bypasses: undefined }],
  ])('%s', (_what, configs, primary, owned, expected) => expect(place(configs, primary, owned)).toEqual(expected));
});

describe('placeOwnedCopy, over any names', () => {
  it('not shadowed and not bypassing exactly when the copy would be the first config the runtime loads past the meta-plugins before it', () => {
    const name = fc.stringMatching(/^[0-9a-z._-]{1,12}\.conflist$/);
    fc.assert(
      fc.property(fc.uniqueArray(fc.record({ name, meta: fc.boolean() }), { selector: (c) => c.name, minLength: 1, maxLength: 8 }), name, (unsorted, owned) => {
        const configs = [...unsorted].filter((c) => c.name !== owned).sort((a, b) => compareNames(a.name, b.name));
        fc.pre(configs.some((c) => !c.meta));
        const primary = configs.find((c) => !c.meta)!.name;
        const p = place(configs, primary, owned);
        // The runtime's order with the copy in it: what comes before the copy is meta-plugins only, and
        // no meta-plugin sits between the copy and the primary.
        const order = [...configs.map((c) => c.name), owned].sort(compareNames);
        const beforeCopy = order.slice(0, order.indexOf(owned));
        const between = order.slice(order.indexOf(owned) + 1, order.indexOf(primary));
        const metas = new Set(configs.filter((c) => c.meta).map((c) => c.name));
        expect(p.shadowedBy === undefined).toBe(beforeCopy.every((n) => metas.has(n)));
        expect(p.metasBefore).toEqual(beforeCopy.filter((n) => metas.has(n)));
        expect(p.bypasses === undefined).toBe(!between.some((n) => metas.has(n)));
      }),
    );
  });
});
