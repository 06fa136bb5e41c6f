import fc from 'fast-check';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SymlinkTargets } from '../../src/daemon/keepers/symlink-targets.js';

const NET_D = '/host/etc/cni/net.d';
const DIRS = [NET_D, '/host/run/cilium', '/host/var/lib/multus'];
const LINKS = ['05-cilium.conflist', '10-a.conflist', '20-b.conflist'];

type Op = { kind: 'set'; link: string; target: string } | { kind: 'remove'; link: string } | { kind: 'dropDir'; dir: string } | { kind: 'netDir'; dir: string };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), link: fc.constantFrom(...LINKS), target: fc.tuple(fc.constantFrom(...DIRS), fc.constantFrom('x', 'y')).map(([d, n]) => path.join(d, n)) }),
  fc.record({ kind: fc.constant('remove' as const), link: fc.constantFrom(...LINKS) }),
  fc.record({ kind: fc.constant('dropDir' as const), dir: fc.constantFrom(...DIRS) }),
  fc.record({ kind: fc.constant('netDir' as const), dir: fc.constantFrom(NET_D, '/host/etc/cni/net.d.moved') }),
);

describe('SymlinkTargets: the links a keeper follows, and the directories the daemon watches for them', () => {
  it('watches exactly the directories (other than net.d) that some link leads into, each told once per change, whatever the order of sets, removals, dropped directories and net.d moves', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const watched = new Set<string>();
        const left: string[] = [];
        const targets = new SymlinkTargets(NET_D, (dir, used) => {
          // Told only on a change: a start for a watched directory, or a stop for an unwatched one, is a bug.
          expect(watched.has(dir)).toBe(!used);
          if (used) watched.add(dir);
          else watched.delete(dir);
        }, (target) => left.push(target));
        const model = new Map<string, string>();
        let netDir = NET_D;
        for (const o of ops) {
          left.length = 0;
          if (o.kind === 'set') {
            const before = model.get(o.link);
            model.set(o.link, o.target);
            targets.set(o.link, o.target);
            const stillLed = before !== undefined && [...model.values()].includes(before);
            expect(left).toEqual(before !== undefined && before !== o.target && !stillLed ? [before] : []);
          } else if (o.kind === 'remove') {
            const before = model.get(o.link);
            model.delete(o.link);
            targets.remove(o.link);
            expect(left).toEqual(before !== undefined && ![...model.values()].includes(before) ? [before] : []);
          } else if (o.kind === 'dropDir') {
            const into = [...model].filter(([, t]) => path.dirname(t) === o.dir).map(([l]) => l);
            for (const l of into) model.delete(l);
            expect([...targets.dropDir(o.dir)].sort()).toEqual(into.sort());
          } else {
            netDir = o.dir;
            targets.setNetDir(o.dir);
            expect(left).toEqual([]); // a move of net.d leaves every target led to
          }
          const expectedDirs = new Set([...model.values()].map((t) => path.dirname(t)).filter((d) => d !== netDir));
          expect(new Set(targets.targetDirs())).toEqual(expectedDirs);
          expect(watched).toEqual(expectedDirs);
          for (const d of [...DIRS, '/host/etc/cni/net.d.moved']) expect(targets.isTargetDir(d)).toBe(expectedDirs.has(d));
          for (const [link, target] of model) expect(targets.linksTo(path.dirname(target), path.basename(target))).toContain(link);
        }
      }),
      { numRuns: 500 },
    );
  });
});
