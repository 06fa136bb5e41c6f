// The owner lock under attack: owner files replaced again and again by holders that never let go,
// and an administrator who remounts net.d read-only while the agent runs.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { itWith } from '../../helpers/capability.js';
import { canMount } from '../../helpers/hostile.js';
import { NodeHost } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

const holders: ChildProcess[] = [];
/** Kills a holder with its child: the lock goes with flock(1) itself (-o keeps it from the child). */
const kill = (holder: ChildProcess) => {
  try {
    process.kill(-holder.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
};
afterEach(() => {
  for (const h of holders.splice(0)) kill(h);
});

/** Puts an owner file in place whose LOCK_EX a process of ours holds for as long as the test runs. */
async function lockedOwner(host: NodeHost, instance: string): Promise<void> {
  const temp = host.net(`.attacker-${instance}`);
  writeFileSync(temp, `${JSON.stringify({ instance, pid: 1, startedAt: new Date().toISOString(), liveness: 'flock' })}\n`);
  // flock(1) from util-linux takes the lock, then runs its command while holding it.
  const holder = spawn('flock', ['-o', '-x', temp, 'sh', '-c', 'echo locked; exec sleep 600'], { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
  holders.push(holder);
  await new Promise<void>((resolve) => holder.stdout!.once('data', () => resolve()));
  renameSync(temp, host.net('.cni-chainer.owner'));
}

describe('the owner lock', () => {
  it('owner files replaced by live holders, more than the thread pool has threads, leave file I/O working', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    // Two pool threads: without waits of their own, the lock waits would take both at the second file.
    const daemon = await host.startedWithProbes({ UV_THREADPOOL_SIZE: '2' });
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    await lockedOwner(host, 'attacker-0');
    await daemon.stoodDown();
    // Standing by, the agent waits on each new owner file's lock in turn.
    for (let i = 1; i < 8; i++) {
      await lockedOwner(host, `attacker-${i}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // The last one lets go (its holder dies): the agent takes the node back and chains, with every
    // earlier holder still holding its lock.
    kill(holders.at(-1)!);
    await daemon.ready(15_000);
    host.putFixture('10-aws.conflist');
    await waitFor(() => host.isChained('10-aws.conflist'), 'a new config chained after the take-back', 10_000);
    expect((await daemon.stop()).code).toBe(0);
  }, 60_000);

  itWith(canMount, 'mount -t tmpfs')('is held on a read-only descriptor: net.d can be remounted read-only under the agent', async () => {
    const host = new NodeHost();
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', host.netDir]).status).toBe(0);
    try {
      host.putFixture('10-flannel.conflist');
      const daemon = await host.started();
      await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
      const remount = spawnSync('mount', ['-o', 'remount,ro', host.netDir], { encoding: 'utf8' });
      expect(remount.stderr).toBe('');
      expect(remount.status).toBe(0);
      spawnSync('mount', ['-o', 'remount,rw', host.netDir]);
      await daemon.stop();
    } finally {
      spawnSync('umount', ['-l', host.netDir]);
    }
  });
});
