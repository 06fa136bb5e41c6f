// The in-place executor's removal (pass-executor.ts): the effect a pass decided for a stale parked
// link or linkerd-cni's interface-mode leftover, carried out on real files with a re-check.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PassExecutor } from '../../src/daemon/keepers/pass-executor.js';
import type { InPlaceWriter } from '../../src/daemon/keepers/in-place-write.js';
import type { UnlinkJob } from '../../src/daemon/keepers/pass-effects.js';
import { CHAINED, GONE, type PassOutcome } from '../../src/daemon/keepers/pass-outcome.js';
import { HostRoot } from '../../src/fs/host-root.js';
import { tempDir } from '../helpers/tmp.js';

function netDir() {
  const root = tempDir();
  mkdirSync(path.join(root, 'etc/cni/net.d'), { recursive: true });
  return { root, file: (name: string) => path.join(root, 'etc/cni/net.d', name), dir: new HostRoot(root).openDir('/etc/cni/net.d') };
}

// Removals and plain outcomes never reach the writer.
const executor = new PassExecutor({} as InPlaceWriter);
const run = (decision: Parameters<PassExecutor['run']>[0]) => executor.settled(decision);

describe('PassExecutor', () => {
  it('removes a file that still holds what the pass read, and ends with the outcome it decided', async () => {
    const n = netDir();
    writeFileSync(n.file('01-linkerd-cni.conf'), 'alone');
    const job: UnlinkJob = { kind: 'unlink', dir: n.dir, name: '01-linkerd-cni.conf', expect: Buffer.from('alone'), then: GONE };
    expect(await run(job)).toBe(GONE);
    expect(existsSync(n.file('01-linkerd-cni.conf'))).toBe(false);
  });

  it('leaves a file rewritten since it was read (longer, shorter or other bytes): its own event brings a pass', async () => {
    const n = netDir();
    for (const now of ['alone, and more', 'alon', 'ALONE']) {
      writeFileSync(n.file('01-linkerd-cni.conf'), now);
      const outcome: PassOutcome = await run({ kind: 'unlink', dir: n.dir, name: '01-linkerd-cni.conf', expect: Buffer.from('alone'), then: GONE });
      expect(outcome).toEqual({ kind: 'unchanged' });
      expect(existsSync(n.file('01-linkerd-cni.conf'))).toBe(true);
    }
  });

  it('removes a parked link whatever it is now, and one already gone is no error', async () => {
    const n = netDir();
    writeFileSync(n.file('.10-calico.conf.cni-chainer-link'), 'x');
    const job: UnlinkJob = { kind: 'unlink', dir: n.dir, name: '.10-calico.conf.cni-chainer-link', expect: undefined, then: GONE };
    expect(await run(job)).toBe(GONE);
    expect(await run(job)).toBe(GONE);
    expect(existsSync(n.file('.10-calico.conf.cni-chainer-link'))).toBe(false);
  });

  it('passes an outcome through, and a promise of one', async () => {
    expect(await run(CHAINED)).toBe(CHAINED);
    expect(await run(Promise.resolve(GONE))).toBe(GONE);
    await expect(run(Promise.reject(Object.assign(new Error('no'), { code: 'EIO' })))).rejects.toThrow('no');
  });
});
