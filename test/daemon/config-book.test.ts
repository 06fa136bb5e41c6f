// Both keepers keep one book (config-book.ts): a problem is counted and logged once per change, a
// fight backs the write off and holds readiness until a write has held, and a status nobody reports
// any more goes. Driven in-process on real files through each keeper, with a clock the test moves.
import { existsSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FIGHT_POLICY } from '../../src/daemon/keepers/fight-detector.js';
import { fixture } from '../helpers/fixtures.js';
import { ownedConfigOnNode, reconcilerOnNode, type KeeperOnNode } from '../helpers/keeper.js';
import type { ConfigKeeper } from '../../src/daemon/keepers/config-keeper.js';

const PRIMARY = fixture('10-calico.conflist');
const NAME = '10-calico.conflist';
const COPY = '10-calico-linkerd-cni.conflist';

const keepers: Array<[string, () => KeeperOnNode<ConfigKeeper>, string]> = [
  ['in place', () => reconcilerOnNode(), NAME],
  ['owned', () => ownedConfigOnNode(), COPY],
];

describe.each(keepers)('the %s keeper’s book', (_mode, make, written) => {
  it('counts a config that does not parse once per content, and chains it once it does', async () => {
    const node = make();
    const file = path.join(node.netDir, NAME);
    writeFileSync(file, '{"cniVersion": "1.0.0", "plugins": [');
    await node.pass(NAME);
    await node.pass(NAME);
    expect(node.metrics.parseErrors.value).toBe(1);
    expect(node.readiness.report().ready).toBe(false);
    writeFileSync(file, '{"cniVersion": "1.0.0", "plugins": [{');
    await node.pass(NAME);
    expect(node.metrics.parseErrors.value).toBe(2);
    writeFileSync(file, PRIMARY);
    await node.pass(NAME);
    expect(readFileSync(path.join(node.netDir, written), 'utf8')).toContain('"linkerd-cni"');
    expect(node.readiness.report()).toMatchObject({ ready: true, reasons: [], entries: [] });
    expect(node.metrics.parseErrors.value).toBe(2);
    node.keeper.stop();
  });

  it('backs off a file removed at once after each write, and says chained only once a write has held', async () => {
    const node = make();
    writeFileSync(path.join(node.netDir, NAME), PRIMARY);
    const target = path.join(node.netDir, written);
    await node.pass(NAME);
    // The test's clock stands still: each removal lands within the fight rule's reaction window.
    for (let i = 0; i < DEFAULT_FIGHT_POLICY.threshold + 1 && node.readiness.statusOf(written) !== 'backoff'; i++) {
      expect(existsSync(target)).toBe(true);
      unlinkSync(target);
      if (written === NAME) writeFileSync(target, PRIMARY); // in place, the primary's unpatched file comes back
      await node.pass(NAME);
    }
    expect(node.readiness.statusOf(written)).toBe('backoff');
    expect(node.metrics.fights.value).toBe(1);
    expect(node.metrics.backoffs.value).toBeGreaterThan(0);
    expect(node.readiness.report().ready).toBe(false);
    // The backoff over, the next write lands, but in a fight it is chained only once it has held.
    node.clock.now += DEFAULT_FIGHT_POLICY.baseBackoffMs;
    await node.pass(NAME);
    expect(readFileSync(target, 'utf8')).toContain('"linkerd-cni"');
    expect(node.readiness.report().reasons.join()).toContain('checking that it holds');
    node.clock.now += 2 * DEFAULT_FIGHT_POLICY.reactiveMs + 1;
    await node.pass(NAME);
    expect(node.readiness.statusOf(written)).toBe('chained');
    expect(node.readiness.report().ready).toBe(true);
    node.keeper.stop(); // the retry timers
  });
});

describe('owned mode’s book', () => {
  it('drops the status of a config the sync no longer reports', async () => {
    const node = ownedConfigOnNode();
    writeFileSync(path.join(node.netDir, NAME), PRIMARY);
    writeFileSync(path.join(node.netDir, '00-shadow.conflist'), PRIMARY);
    await node.pass(NAME);
    // 00-shadow is the primary now (it sorts first), and its copy is shadowed by nothing: chained.
    expect(node.readiness.statusOf('00-shadow-linkerd-cni.conflist')).toBe('chained');
    unlinkSync(path.join(node.netDir, '00-shadow.conflist'));
    await node.pass(NAME);
    expect(node.readiness.statusOf('00-shadow-linkerd-cni.conflist')).toBeUndefined();
    expect(node.readiness.statusOf(COPY)).toBe('chained');
    node.keeper.stop();
  });
});
