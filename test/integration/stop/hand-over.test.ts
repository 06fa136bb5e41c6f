// Hand-overs between instances that never leave the node broken: upgrades, rollbacks, an owner
// record nobody holds, stops that cannot finish. The real CLI, the real kernel.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { itWith } from '../../helpers/capability.js';
import { fixture } from '../../helpers/fixtures.js';
import { canChattr, temps } from '../../helpers/hostile.js';
import { freePort, NodeHost, probe, readyzStatus } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

describe('nodes never left broken', () => {
  it('rollback: the older instance takes the node back within seconds when the newer one exits', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const a = await host.startedWithProbes();
    const b = await host.started();
    await a.stoodDown();
    expect((await b.stop()).code).toBe(0); // B's cleanup removes the plugin, binary and kubeconfig
    await a.ready(15_000);
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained again by A');
    await waitFor(() => existsSync(path.join(host.binDir, 'linkerd-cni')) && existsSync(host.net('ZZZ-linkerd-cni-kubeconfig')), 'binary and kubeconfig back');
    host.putFixture('10-aws.conflist');
    await waitFor(() => host.isChained('10-aws.conflist'), 'new configs chained by A');
  });

  it('upgrade with maxSurge on the host network: HEALTH_PORT handed to the newer instance, and back on rollback', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const port = await freePort();
    const a = await host.started({ HEALTH_PORT: String(port) });
    expect((await probe(port, '/readyz')).status).toBe(200);
    // B starts while A holds the port: A lets go on standing down, and B waits for the port if it
    // comes first (that wait is timed in test/daemon/health-port.test.ts).
    const b = await host.started({ HEALTH_PORT: String(port) });
    // B answers on the port: A let it go (with A still on it, B would wait, and nothing would answer
    // for both), and no one else could have it.
    await b.ready();
    expect(a.child.exitCode).toBe(null);
    // Rollback: B goes, A takes the node and the port back.
    expect((await b.stop()).code).toBe(0);
    await a.ready(15_000);
  }, 30_000);

  it('rollback after the newer instance was killed: taken back at once (the kernel drops its lock)', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const a = await host.startedWithProbes();
    const b = await host.started();
    await a.stoodDown();
    await b.stop('SIGKILL');
    host.putFixture('10-aws.conflist');
    // Earlier versions waited for a heartbeat to go 10 s stale; the lock goes with the process.
    await a.ready(5_000);
    await waitFor(() => host.isChained('10-aws.conflist'), 'chained by A');
  }, 30_000);

  it('an owner record whose lock nobody holds is no owner, whatever its mtime or format says', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const owner = host.net('.cni-chainer.owner');
    // A heartbeat-style record (no lock), dated ten minutes into the future.
    const stale = () => {
      writeFileSync(`${owner}.new`, `${JSON.stringify({ instance: 'no-lock', pid: 1, startedAt: new Date().toISOString() })}\n`);
      const future = new Date(Date.now() + 600_000);
      utimesSync(`${owner}.new`, future, future);
      renameSync(`${owner}.new`, owner);
    };
    stale();
    const a = await host.startedWithProbes();
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    // Standing down lets go of the probes' port: sampled all through, it is never let go.
    const statuses: number[] = [];
    let sampling = true;
    const sampled = (async () => {
      while (sampling) statuses.push(await readyzStatus(a.port!));
    })();
    try {
      stale();
      // Claimed again, never stood down for: the agent keeps chaining.
      await waitFor(() => JSON.parse(readFileSync(owner, 'utf8')).instance !== 'no-lock', 'the node claimed again');
      host.putFixture('10-aws.conflist');
      await waitFor(() => host.isChained('10-aws.conflist'), 'a new config chained');
    } finally {
      sampling = false;
      await sampled;
    }
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses).not.toContain(0);
    expect((await a.stop()).code).toBe(0);
    expect(host.read('10-flannel.conflist')).toBe(fixture('10-flannel.conflist'));
  });

  itWith(canChattr, 'chattr +i')('12. SIGTERM when unchaining fails: binary and kubeconfig kept, exit 1 naming the files', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const daemon = await host.started();
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    expect(spawnSync('chattr', ['+i', host.netDir]).status).toBe(0);
    try {
      const { code } = await daemon.stop();
      expect(code).toBe(1);
      expect(daemon.stopSteps().find((s) => s.step === 'unchain-failed')?.files).toEqual(['10-flannel.conflist']);
      expect(existsSync(path.join(host.binDir, 'linkerd-cni'))).toBe(true);
      expect(host.holdsPlugin('10-flannel.conflist')).toBe(true);
      const uninstall = await host.cli(['uninstall']);
      expect(uninstall.code).toBe(1);
      expect(uninstall.stderr).toContain('10-flannel.conflist');
      expect(existsSync(path.join(host.binDir, 'linkerd-cni'))).toBe(true);
    } finally {
      spawnSync('chattr', ['-i', host.netDir]);
    }
  });

  it('check notices a missing plugin binary', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const daemon = await host.started();
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    expect((await host.cli(['check'])).code).toBe(0);
    await daemon.stop('SIGKILL');
    rmSync(path.join(host.binDir, 'linkerd-cni'));
    const check = await host.cli(['check']);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('plugin binary /opt/cni/bin/linkerd-cni: MISSING');
  });

  it('SIGTERM then SIGINT: one cleanup, finished, exit 0', async () => {
    const host = new NodeHost();
    for (let i = 0; i < 300; i++) writeFileSync(host.net(`c${i}.conflist`), fixture('10-flannel.conflist'));
    const daemon = await host.started({ LOG_LEVEL: 'info' });
    await waitFor(() => host.isChained('c299.conflist') && host.isChained('c0.conflist'), 'chained');
    daemon.child.kill('SIGTERM');
    daemon.child.kill('SIGINT');
    const { code } = await daemon.exited;
    expect(code).toBe(0);
    // One stop's account: a second cleanup would uninstall twice.
    expect(daemon.stopSteps().map((s) => s.step)).toEqual(['uninstalling']);
    for (let i = 0; i < 300; i++) expect(host.read(`c${i}.conflist`)).toBe(fixture('10-flannel.conflist'));
    expect(existsSync(path.join(host.binDir, 'linkerd-cni'))).toBe(false);
  });

  it('SIGTERM unchains the former target of a retargeted link', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist', 'a.conflist-v1');
    host.putFixture('10-aws.conflist', 'a.conflist-v2');
    symlinkSync('a.conflist-v1', host.net('10-a.conflist'));
    const daemon = await host.started();
    await waitFor(() => host.isChained('a.conflist-v1'), 'v1 chained');
    symlinkSync('a.conflist-v2', host.net('.new-link'));
    renameSync(host.net('.new-link'), host.net('10-a.conflist'));
    await waitFor(() => host.isChained('a.conflist-v2'), 'v2 chained');
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read('a.conflist-v1')).toBe(fixture('10-flannel.conflist'));
    expect(host.read('a.conflist-v2')).toBe(fixture('10-aws.conflist'));
  });

  it('SIGTERM with 10,000 configs finishes within the default deadline', async () => {
    const host = new NodeHost();
    for (let i = 0; i < 10_000; i++) writeFileSync(host.net(`c${String(i).padStart(5, '0')}.conflist`), fixture('10-flannel.conflist'));
    const daemon = host.start({ LOG_LEVEL: 'warn' });
    await waitFor(() => host.read('c09999.conflist').includes('linkerd-cni') && host.read('c00000.conflist').includes('linkerd-cni'), 'chained', 90_000);
    const { code } = await daemon.stop();
    expect(code).toBe(0);
    const still = readdirSync(host.netDir).filter((n) => n.endsWith('.conflist') && host.holdsPlugin(n));
    expect(still).toEqual([]);
    expect(temps(host.netDir)).toEqual([]);
  }, 180_000);

  it('temp files a SIGKILL left behind are swept at the next start', async () => {
    const host = new NodeHost();
    for (let i = 0; i < 200; i++) writeFileSync(host.net(`c${i}.conflist`), fixture('10-flannel.conflist'));
    // Stale temps of a dead instance (other token), of both kinds: an unlanded patch and a landed exchange.
    const stale = ['.c1.conflist.cni-chainer-0123456789ab-1-000000000000-new.tmp', '.c2.conflist.cni-chainer-0123456789ab-2-000000000000-new.tmp'];
    for (const name of stale) writeFileSync(host.net(name), 'leftover');
    const daemon = await host.started();
    await waitFor(() => host.isChained('c199.conflist'), 'chained');
    expect(temps(host.netDir)).toEqual([]);
    await daemon.stop();
  });
});
