// Chaining on a hostile or broken node: FIFOs and devices where files should be, descriptor and
// memory limits, huge and numerous configs, a stop while V8 still compiles. The real CLI, the real kernel.
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { IN } from '../../../src/native/addon.js';
import { itWith } from '../../helpers/capability.js';
import { fixture } from '../../helpers/fixtures.js';
import { canUnshare, mkfifo, peakRssMiB, putMegabyteConfigs, temps } from '../../helpers/hostile.js';
import { InotifyWatcher, type RawInotifyEvent } from '../../helpers/inotify.js';
import { freePort, NodeHost, probe, readyzLists } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * A node whose symlink target directory would be the 7th inotify watch where only 6 are allowed (the
 * service-account dir, the bin dir, net.d and its three ancestors: the host root, /etc, /etc/cni),
 * the link made after start: the agent up, and /readyz naming the sysctl.
 */
async function symlinkPastTheWatchLimit() {
  const host = new NodeHost();
  host.putFixture('10-flannel.conflist');
  mkdirSync(host.disk('/var/lib/cni-a'), { recursive: true });
  host.put(host.disk('/var/lib/cni-a/net.conflist'), fixture('10-aws.conflist'));
  const port = await freePort();
  const daemon = host.start({ HEALTH_PORT: String(port) }, ['run'], ['unshare', '-Ur', 'sh', '-c', 'echo 6 > /proc/sys/user/max_inotify_watches && exec "$@"', 'sh']);
  await daemon.ready();
  symlinkSync('/var/lib/cni-a/net.conflist', host.net('05-a.conflist'));
  await waitFor(async () => (await probe(port, '/readyz')).body.includes('fs.inotify.max_user_watches'), 'not ready, naming the sysctl');
  return { host, daemon, port };
}

describe('hangs and crashes', () => {
  it('FIFOs at the owner file, the kubeconfig, the plugin binary and a config name block nothing', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    mkfifo(host.net('.cni-chainer.owner'));
    mkfifo(host.net('ZZZ-linkerd-cni-kubeconfig'));
    mkdirSync(host.binDir, { recursive: true });
    mkfifo(path.join(host.binDir, 'linkerd-cni'));
    mkfifo(host.net('20-fifo.conflist'));
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    // The FIFOs at fixed names were replaced by our files; the FIFO config name is no config at all.
    expect(readFileSync(host.net('ZZZ-linkerd-cni-kubeconfig'), 'utf8')).toContain('token-1');
    expect(readFileSync(path.join(host.binDir, 'linkerd-cni'), 'utf8')).toContain('linkerd-cni');
    expect((await probe(port, '/healthz')).status).toBe(200);
    await daemon.ready(); // ready: a FIFO is not a config
    expect((await daemon.stop()).code).toBe(0);
  });

  it('a config swapped for a FIFO after it was listed does not block a pass', async () => {
    const host = new NodeHost();
    const daemon = await host.started();
    for (let i = 0; i < 20; i++) {
      host.putFixture('10-flannel.conflist', `1${i}-x.conflist`);
      rmSync(host.net(`1${i}-x.conflist`));
      mkfifo(host.net(`1${i}-x.conflist`));
    }
    host.putFixture('10-aws.conflist', '99-control.conflist');
    await waitFor(() => host.isChained('99-control.conflist'), 'a later config still chained');
    expect((await daemon.stop()).code).toBe(0);
  });

  it('the owner file and the kubeconfig as links to /dev/zero: bounded reads, memory stays flat', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    symlinkSync('/dev/zero', host.net('.cni-chainer.owner'));
    symlinkSync('/dev/zero', host.net('ZZZ-linkerd-cni-kubeconfig'));
    const daemon = await host.started();
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    expect(readFileSync(host.net('ZZZ-linkerd-cni-kubeconfig'), 'utf8')).toContain('token-1');
    expect(peakRssMiB(daemon.child.pid!)).toBeLessThan(150);
    expect((await daemon.stop()).code).toBe(0);
  });

  itWith(canUnshare, 'user namespaces (unshare -Ur)')('3. the watch limit hit for a symlink target directory is a status, not a crash', async () => {
    const { host, daemon } = await symlinkPastTheWatchLimit();
    await waitFor(() => host.isChained(host.disk('/var/lib/cni-a/net.conflist')), 'the target is still chained');
    expect(daemon.child.exitCode).toBe(null);
    // The link is re-created under a temp name and renamed over the old one right after the target's
    // write: a listing may land between the two syscalls, but nothing may stay.
    await waitFor(() => temps(host.netDir).length === 0, 'no temp file left in net.d');
    expect((await daemon.stop()).code).toBe(0);
  });

  itWith(canUnshare, 'user namespaces (unshare -Ur)')('3. that status clears once no link leads into the directory', async () => {
    const { host, daemon, port } = await symlinkPastTheWatchLimit();
    rmSync(host.net('05-a.conflist'));
    let last = '';
    await waitFor(async () => {
      const r = await probe(port, '/readyz');
      last = r.body;
      return r.status === 200;
    }, 'ready once the link is gone').catch((err: Error) => {
      throw new Error(`${err.message}; /readyz said: ${last}`);
    });
    expect((await daemon.stop()).code).toBe(0);
  });

  it('RLIMIT_NOFILE 256 and 3,000 configs: every config chained, no temp file left', async () => {
    const host = new NodeHost();
    for (let i = 0; i < 3000; i++) writeFileSync(host.net(`c${String(i).padStart(4, '0')}.conflist`), fixture('10-flannel.conflist'));
    const daemon = host.start({ RESYNC_INTERVAL_S: '1', LOG_LEVEL: 'warn' }, ['run'], ['prlimit', '--nofile=256:256', '--']);
    await waitFor(() => {
      for (let i = 0; i < 3000; i += 1) if (!host.read(`c${String(i).padStart(4, '0')}.conflist`).includes('linkerd-cni')) return false;
      return true;
    }, 'all 3,000 chained', 60_000);
    expect(daemon.child.exitCode).toBe(null);
    expect(temps(host.netDir)).toEqual([]);
    expect((await daemon.stop()).code).toBe(0);
  }, 120_000);

  // Version 0.1 peaked at 140 MB here, above the manifest's limit of then (128Mi; 160Mi now). Now
  // 94.7-95.7 MiB (VmHWM, of which ~50 MiB are the node binary's own mapped pages); the bound asserted
  // leaves room for this machine's noise and for the test runner's load.
  it('10,000 configs and a 20 MB config: peak RSS under the pod limit (160Mi), the others chained', async () => {
    const host = new NodeHost();
    const big = JSON.stringify({ cniVersion: '0.3.1', name: 'big', plugins: [{ type: 'bridge', pad: 'x'.repeat(20 << 20) }] });
    writeFileSync(host.net('00-big.conflist'), big);
    for (let i = 0; i < 10_000; i++) writeFileSync(host.net(`c${String(i).padStart(5, '0')}.conflist`), fixture('10-flannel.conflist'));
    // MALLOC_ARENA_MAX=2 as the image sets it (glibc would give each libuv pool thread its own arena).
    const port = await freePort();
    const daemon = host.start({ LOG_LEVEL: 'warn', MALLOC_ARENA_MAX: '2', HEALTH_PORT: String(port) });
    await waitFor(() => host.read('c09999.conflist').includes('linkerd-cni') && host.read('c00000.conflist').includes('linkerd-cni'), 'chained', 90_000);
    await readyzLists(port, '00-big.conflist', 'too-large');
    expect(host.read('00-big.conflist')).toBe(big);
    expect(peakRssMiB(daemon.child.pid!)).toBeLessThan(110);
    await daemon.stop();
  }, 180_000);

  // 128 passes may run at once (coalescing-queue.ts); with configs near MAX_CONFIG_BYTES they could
  // hold ~0.25 GiB, so what they hold is bounded (daemon/keepers/bytes-in-flight.ts). Measured: 200 such
  // configs peaked at 256 MiB before (32 passes at once, each job's bytes copied into the addon), and
  // 100 at 258 MiB with 128 passes and no bound; 127-135 MiB now, most of it Buffers V8 has not
  // collected yet.
  it('configs of 1 MB each are read a few at a time: passes hold at most 4 MiB of config between them', async () => {
    const host = new NodeHost();
    const names = putMegabyteConfigs(host, 40);
    // The kernel queues IN_OPEN before open(2) returns and IN_CREATE before the temp file exists, so
    // the queue's order is the order of the agent's reads and of its first write.
    const events: RawInotifyEvent[] = [];
    const watcher = new InotifyWatcher(host.netDir, IN.IN_OPEN | IN.IN_CREATE, (batch) => events.push(...batch));
    try {
      // Not read from here until the end: this process's reads would be IN_OPEN events too.
      const daemon = host.start({ HEALTH_PORT: String(await freePort()) });
      await daemon.ready(60_000);
      expect(names.every((name) => host.read(name).includes('linkerd-cni'))).toBe(true);
      await daemon.stop();
      const firstWrite = events.findIndex((e) => (e.mask & IN.IN_CREATE) !== 0 && names.some((name) => e.name.startsWith(`.${name}.cni-chainer-`)));
      expect(firstWrite).toBeGreaterThan(-1);
      const readBefore = new Set(events.slice(0, firstWrite).filter((e) => (e.mask & IN.IN_OPEN) !== 0 && names.includes(e.name)).map((e) => e.name));
      // Each pass counts its content and its patched copy (2 MB): the third finds 4 MB held and waits.
      // Without the bound, all 40 were read before the first write began.
      expect(readBefore.size).toBeGreaterThan(0);
      expect(readBefore.size).toBeLessThanOrEqual(3);
    } finally {
      watcher.close();
    }
  }, 120_000);

  it('100 configs of 1 MB each: passes hold at most a few MiB at once, peak RSS stays bounded', async () => {
    const host = new NodeHost();
    const names = putMegabyteConfigs(host, 100);
    const daemon = host.start({ LOG_LEVEL: 'warn', MALLOC_ARENA_MAX: '2' });
    await waitFor(() => names.every((name) => host.read(name).includes('linkerd-cni')), 'all chained', 60_000);
    expect(peakRssMiB(daemon.child.pid!)).toBeLessThan(160); // deploy/base/daemonset.yaml's limit
    await daemon.stop();
  }, 120_000);

  it('exits after SIGTERM while V8 still compiles in the background (no hang in process teardown)', async () => {
    // Unpatching 1 MB configs at SIGTERM makes V8 compile the scanner concurrently. process.exit()
    // joined V8's threads while one of them waited for a main-thread GC, and the process hung in
    // pthread_join for good (nodejs/node#54918); it hung in 1 of 6 runs of the test above. The agent
    // now ends with _exit(2) once its cleanup is done. Several stops, so that the race gets its chances.
    for (let round = 0; round < 8; round++) {
      const host = new NodeHost();
      const names = putMegabyteConfigs(host, 100);
      const daemon = host.start({ LOG_LEVEL: 'warn' });
      await waitFor(() => names.every((name) => host.read(name).includes('linkerd-cni')), 'all chained', 60_000);
      const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref());
      const exit = await Promise.race([daemon.stop(), hung]);
      if (exit === 'hung') daemon.child.kill('SIGKILL');
      expect(exit, `round ${round}`).toEqual({ code: 0, signal: null });
      expect(host.read(names[0]!)).not.toContain('linkerd-cni');
    }
  }, 300_000);
});
