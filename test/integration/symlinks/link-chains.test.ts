// What a hostile node puts in net.d to stall the agent or bloat it: symlink chains the kernel allows
// but that take tens of thousands of lookups, and configs with hundreds of KiB of xattrs.
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { itWith } from '../../helpers/capability.js';
import { fixture } from '../../helpers/fixtures.js';
import { canMount } from '../../helpers/hostile.js';
import { freePort, NodeHost, probe, readyzStatus } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

const canSetfattr = spawnSync('setfattr', ['--version']).status === 0;

describe('stalls and bloat', () => {
  it('40 configs that are ~4 KB links into 40-hop chains leave /healthz answering within a second', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    // Each hop: `d/../` 800 times, then the next hop's name: ~32,000 lookups per chain to the kernel.
    const chain = host.disk('/var/chain');
    mkdirSync(path.join(chain, 'd'), { recursive: true });
    host.put(path.join(chain, 'h40'), fixture('10-flannel.conflist'));
    for (let n = 0; n < 40; n++) symlinkSync(`${'d/../'.repeat(800)}h${n + 1}`, path.join(chain, `h${n}`));
    for (let k = 0; k < 40; k++) symlinkSync('/var/chain/h0', host.net(`2${String(k).padStart(2, '0')}-chain.conflist`));
    const port = await freePort();
    const daemon = host.start({ HEALTH_PORT: String(port) });
    await waitFor(async () => (await readyzStatus(port)) !== 0, 'probes served');
    // Every probe during and after the scan answers, each within the kubelet's 1 s timeout.
    let slowest = 0;
    for (let i = 0; i < 20; i++) {
      const started = performance.now();
      expect((await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(1_000) })).status).toBe(200);
      slowest = Math.max(slowest, performance.now() - started);
    }
    await waitFor(async () => (await probe(port, '/readyz')).body.includes('200-chain.conflist: loop'), 'not ready, each chain named a loop');
    expect(slowest).toBeLessThan(1_000);
    expect(host.isChained('10-flannel.conflist')).toBe(true);
    expect((await daemon.stop()).code).toBe(0);
  });

  itWith(canSetfattr && canMount, 'setfattr and mount -t tmpfs')('a config with 300 xattrs of 60 KB is left alone, byte for byte, and named', async () => {
    const host = new NodeHost();
    // tmpfs takes user xattrs of any size (ext4 without ea_inode takes 4 KiB per file).
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', host.netDir]).status).toBe(0);
    try {
      host.putFixture('10-flannel.conflist');
      host.putFixture('10-aws.conflist', '20-bloated.conflist');
      const value = `0s${Buffer.alloc(60_000, 7).toString('base64')}`;
      for (let i = 0; i < 300; i++) expect(spawnSync('setfattr', ['-n', `user.x${i}`, '-v', value, host.net('20-bloated.conflist')]).status).toBe(0);
      const port = await freePort();
      const daemon = await host.started({ HEALTH_PORT: String(port) });
      await waitFor(async () => (await probe(port, '/readyz')).body.includes('20-bloated.conflist: too-large (its extended attributes'), 'not ready, naming the file');
      expect(host.read('20-bloated.conflist')).toBe(fixture('10-aws.conflist'));
      expect(host.isChained('10-flannel.conflist')).toBe(true);
      expect((await daemon.stop()).code).toBe(0);
    } finally {
      spawnSync('umount', ['-l', host.netDir]);
    }
  });
});
