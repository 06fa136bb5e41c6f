// What the reconciler keeps per config path (the hash of its last write, the fight rule's state) must
// outlive a removal long enough for the fight rule to see a delete-and-re-create, and no longer: a
// node whose config names come and go must not grow the agent with every name it ever had. Driven
// in-process with real files and a clock the test moves.
import { mkdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FIGHT_POLICY } from '../../src/daemon/keepers/fight-detector.js';
import { fixture } from '../helpers/fixtures.js';
import { reconcilerOnNode } from '../helpers/keeper.js';

const CALM_MS = DEFAULT_FIGHT_POLICY.calmMs;
const PRIMARY = fixture('10-calico.conflist');

function node() {
  const { hostRoot, netDir, readiness, clock, keeper: reconciler, pass } = reconcilerOnNode();
  const targets = path.join(hostRoot, 'var/lib/cni-configs');
  mkdirSync(targets, { recursive: true });
  /** Config `name` written unpatched, patched by a pass, then removed and forgotten by the next. */
  const patchThenRemove = async (name: string) => {
    const file = path.join(netDir, name);
    writeFileSync(file, PRIMARY);
    await pass(name);
    expect(chained(file)).toBe(true);
    unlinkSync(file);
    await pass(name);
    return file;
  };
  return { netDir, targets, readiness, clock, reconciler, pass, patchThenRemove };
}

const chained = (file: string) => readFileSync(file, 'utf8').includes('"linkerd-cni"');

describe('what the reconciler keeps for a removed config', () => {
  it('counts a delete and re-create as a revert while the fight rule can use it, and drops it after', async () => {
    const { netDir, readiness, clock, reconciler, pass, patchThenRemove } = node();
    const x = path.join(netDir, '10-calico.conflist');
    writeFileSync(x, PRIMARY);
    await pass('10-calico.conflist');
    expect(chained(x)).toBe(true);

    // A primary that answers each of our writes by deleting the file and writing it anew, at once (the
    // test's clock does not move): that is a fight, and the agent backs off.
    for (let i = 0; i < DEFAULT_FIGHT_POLICY.threshold && readiness.statusOf('10-calico.conflist') !== 'backoff'; i++) {
      unlinkSync(x);
      await pass('10-calico.conflist');
      expect(reconciler.remembers(x)).toBe(true);
      writeFileSync(x, PRIMARY);
      await pass('10-calico.conflist');
    }
    expect(readiness.statusOf('10-calico.conflist')).toBe('backoff');
    reconciler.stop(); // the backoff's retry timer

    // Gone for longer than the calm period: the next removal of any config drops what was kept for it.
    unlinkSync(x);
    await pass('10-calico.conflist');
    clock.now += CALM_MS + 1;
    const y = await patchThenRemove('20-other.conflist');
    expect(reconciler.remembers(x)).toBe(false);
    expect(reconciler.remembers(y)).toBe(true); // just went

    // A re-created file is then a new file: chained at once, no backoff.
    writeFileSync(x, PRIMARY);
    await pass('10-calico.conflist');
    expect(chained(x)).toBe(true);
    expect(readiness.statusOf('10-calico.conflist')).toBe('chained');
  });

  it('drops it at the next resync when no other config goes', async () => {
    const { clock, reconciler, patchThenRemove } = node();
    const x = await patchThenRemove('10-calico.conflist');
    reconciler.scan();
    await reconciler.drain();
    expect(reconciler.remembers(x)).toBe(true);
    clock.now += CALM_MS + 1;
    reconciler.scan();
    await reconciler.drain();
    expect(reconciler.remembers(x)).toBe(false);
  });

  it('keeps it for as long as the file is there', async () => {
    const { clock, reconciler, pass, patchThenRemove } = node();
    const x = await patchThenRemove('10-calico.conflist');
    writeFileSync(x, PRIMARY); // back, unpatched: patched again, and no longer gone
    await pass('10-calico.conflist');
    clock.now += 10 * CALM_MS;
    for (let i = 0; i < 3; i++) {
      await patchThenRemove(`2${i}-other.conflist`);
      clock.now += CALM_MS + 1;
    }
    expect(reconciler.remembers(x)).toBe(true);
  });

  it('does not grow with config names that come and go', async () => {
    const { netDir, clock, reconciler, pass } = node();
    const names = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(4, '0')}-churn.conflist`);
    for (const name of names) {
      const file = path.join(netDir, name);
      writeFileSync(`${file}.tmp`, PRIMARY);
      renameSync(`${file}.tmp`, file);
      await pass(name);
      expect(chained(file)).toBe(true);
      unlinkSync(file);
      await pass(name);
      clock.now += 1_000; // one new name a second
    }
    const kept = names.filter((name) => reconciler.remembers(path.join(netDir, name))).length;
    // The names removed within the calm period (120 s at one a second), and nothing older.
    expect(kept).toBe(CALM_MS / 1_000 + 1);
    expect(names.slice(-kept).every((name) => reconciler.remembers(path.join(netDir, name)))).toBe(true);
  });

  it('lets go of a symlink target once no link leads there', async () => {
    const { netDir, targets, clock, reconciler, pass, patchThenRemove } = node();
    const first = path.join(targets, 'first.conflist');
    const second = path.join(targets, 'second.conflist');
    writeFileSync(first, PRIMARY);
    writeFileSync(second, PRIMARY);
    const link = path.join(netDir, '10-linked.conflist');
    symlinkSync('/var/lib/cni-configs/first.conflist', link);
    await pass('10-linked.conflist');
    expect(chained(first)).toBe(true);
    expect(reconciler.remembers(first)).toBe(true);

    // Retargeted: the first target is no config any more.
    unlinkSync(link);
    symlinkSync('/var/lib/cni-configs/second.conflist', link);
    await pass('10-linked.conflist');
    expect(chained(second)).toBe(true);
    clock.now += CALM_MS + 1;
    // Removed: the second goes the same way.
    unlinkSync(link);
    await pass('10-linked.conflist');
    expect(reconciler.remembers(first)).toBe(false);
    expect(reconciler.remembers(second)).toBe(true);
    clock.now += CALM_MS + 1;
    await patchThenRemove('20-other.conflist');
    expect(reconciler.remembers(second)).toBe(false);
  });
});
