import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareNames, conflistName, isConfigName, isOwnedCopyName, ownedNameFor } from '../../src/cni/names.js';
import { isOwnTempName, isTempName, tempNameFor } from '../../src/fs/temp-names.js';

const DEFAULT = ['.conflist', '.conf'];

describe('isConfigName', () => {
  it.each([
    ['10-calico.conflist', true],
    ['10-calico.conf', true],
    ['10-CALICO.CONFLIST', true],
    ['05-cilium.conflist-current', false],
    ['ZZZ-linkerd-cni-kubeconfig', false],
    ['calico-kubeconfig', false],
    ['.10-calico.conflist', false],
    ['10-calico.conflist~', false],
    ['10-calico.conflist.swp', false],
    ['10-calico.conflist.tmp', false],
    ['10-calico.conflist.bak', false],
    ['05-cilium.conflist.cilium_bak', false],
    ['.conflist', false],
    ['multus.d', false],
    ['00-x.json', false],
  ])('%s → %s', (name, expected) => {
    expect(isConfigName(name, DEFAULT)).toBe(expected);
  });

  it('takes extra suffixes, such as .conflist-current', () => {
    expect(isConfigName('05-cilium.conflist-current', [...DEFAULT, '.conflist-current'])).toBe(true);
  });

  // The matching as written in the design (lower-case the name, then compare suffixes): the fast
  // path for ASCII names must agree with it on every name, ASCII or not.
  const byLowerCase = (name: string, suffixes: readonly string[]) => {
    if (name.startsWith('.')) return false;
    const lower = name.toLowerCase();
    if (['~', '.swp', '.tmp', '.bak', '.cilium_bak'].some((s) => lower.endsWith(s))) return false;
    return suffixes.some((s) => lower.endsWith(s) && lower.length > s.length);
  };

  it('agrees with lower-casing the whole name, for any name and suffixes', () => {
    const tail = fc.constantFrom('.conf', '.CONFLIST', '.Json', '.conflist-current', '.bak', '~', '\u0130.conf', '.con\u212a', '');
    const suffix = fc.constantFrom('.conflist', '.conf', '.json', '.conflist-current', '.k', '.i\u0307.conf', 'a');
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('a', 'Z', '.', '-', '\u0130', '\u212a', 'é', '0') }), tail, fc.array(suffix, { maxLength: 4 }), (stem, end, suffixes) => {
        const name = stem + end;
        expect(isConfigName(name, suffixes)).toBe(byLowerCase(name, suffixes));
      }),
      { numRuns: 5000 },
    );
    // U+0130 lower-cases to two characters: the length rule must count the lower-cased name.
    expect(isConfigName('\u0130.conf', ['.i\u0307.conf'])).toBe(false);
    expect(isConfigName('x\u0130.conf', ['.conf'])).toBe(true);
  });

  it('never matches our own temporary names, whatever the file is called', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }).filter((s) => !s.includes('/')), (name) => {
        const tmp = tempNameFor(name);
        expect(isConfigName(tmp, [...DEFAULT, '.tmp', '.json', '.conflist-current'])).toBe(false);
        expect(isTempName(tmp)).toBe(true);
        expect(isOwnTempName(tmp)).toBe(true);
      }),
    );
  });
});

describe('temp names', () => {
  it("tell this process's temp files from another instance's", () => {
    const other = '.10-calico.conflist.cni-chainer-0123456789ab-1.tmp';
    expect(isTempName(other)).toBe(true);
    expect(isOwnTempName(other)).toBe(false);
    expect(isTempName('.10-calico.conflist.writer-tmp')).toBe(false);
  });
});

describe('conflistName', () => {
  it.each([
    ['10-calico.conf', '10-calico.conflist'],
    ['99-bridge.json', '99-bridge.conflist'],
    ['10-calico.conflist', '10-calico.conflist'],
    ['05-x.conflist-current', '05-x.conflist-current'],
  ])('%s → %s', (from, to) => {
    expect(conflistName(from)).toBe(to);
  });
});

describe('ownedNameFor: the owned copy sorts right before the primary it follows', () => {
  const stem = fc.string({ unit: fc.constantFrom('0', '1', '9', '-', '.', '_', 'a', 'k', 'z', 'Z', '~', 'é'), minLength: 1, maxLength: 12 });
  const primary = fc.tuple(stem, fc.constantFrom('.conf', '.conflist', '.json')).map(([s, ext]) => `${s}${ext}`);
  const other = fc.tuple(stem, fc.constantFrom('.conf', '.conflist', '.json')).map(([s, ext]) => `${s}${ext}`);

  it.each([
    ['10-calico.conflist', '10-calico-linkerd-cni.conflist'],
    ['01-kube-ovn.conflist', '01-kube-ovn-linkerd-cni.conflist'],
    ['00-aaa.conflist', '00-aaa-linkerd-cni.conflist'],
    ['10-calico.conf', '10-calico-linkerd-cni.conflist'],
  ])('%s -> %s', (p, owned) => {
    expect(ownedNameFor(p, 'linkerd-cni')).toBe(owned);
    expect(isOwnedCopyName(owned, 'linkerd-cni')).toBe(true);
    expect(isOwnedCopyName(p, 'linkerd-cni')).toBe(false);
  });

  it('sorts before the primary, and after every name before it that does not start with its stem and "-" or "."', () => {
    fc.assert(
      fc.property(primary, other, (p, q) => {
        const owned = ownedNameFor(p, 'linkerd-cni');
        expect(compareNames(owned, p)).toBeLessThan(0);
        const stemOf = p.slice(0, p.lastIndexOf('.'));
        if (compareNames(q, p) < 0 && !q.startsWith(`${stemOf}-`) && !q.startsWith(`${stemOf}.`)) expect(compareNames(q, owned)).toBeLessThan(0);
      }),
      { numRuns: 3000 },
    );
  });

  it('names the legacy default name as an owned copy', () => {
    expect(isOwnedCopyName('01-linkerd-cni.conflist', 'linkerd-cni')).toBe(true);
    expect(isOwnedCopyName('-linkerd-cni.conflist', 'linkerd-cni')).toBe(false);
  });
});
