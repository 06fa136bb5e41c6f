// Readiness that never lies, whatever the node does: /readyz is 200 only when every config the
// runtime may load is chained and the watch is live. The real CLI, the real kernel.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { addon, SYSCALL } from '../../../src/native/addon.js';
import { itWith } from '../../helpers/capability.js';
import { fixture } from '../../helpers/fixtures.js';
import { canChattr, canMount, canUnshare, temps } from '../../helpers/hostile.js';
import { freePort, metricSum, NodeHost, probe, readyzLists, untilMetric } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

/** An agent on a node with one primary, probes on, ready. */
async function readyNode(env: Record<string, string>): Promise<{ host: NodeHost; port: number; daemon: Awaited<ReturnType<NodeHost['started']>> }> {
  const host = new NodeHost();
  host.putFixture('10-flannel.conflist');
  const port = await freePort();
  const daemon = await host.started({ HEALTH_PORT: String(port), ...env });
  await daemon.ready();
  return { host, port, daemon };
}

/** Config `name`, written now, is not chained: not ready, naming it and the changed binary. */
async function waitsForTheBinary(host: NodeHost, port: number, name: string, what = ''): Promise<void> {
  writeFileSync(host.net(name), fixture('10-calico.conflist'));
  const r = await waitFor(async () => {
    const got = await probe(port, '/readyz');
    return got.status === 503 && got.body.includes(name) && got;
  }, `${what}not ready, ${name} waiting for the binary`);
  expect(r.body).toContain('changed since it was installed');
  expect(host.holdsPlugin(name), what).toBe(false);
}

/**
 * A config chained (so the binary was looked at and is trusted until the bin dir's next event), then
 * the binary chmod-ed and another config written: that one waits, naming the changed binary.
 */
async function chmodOfTrustedBinaryIsSeen(host: NodeHost, port: number, binary: string): Promise<void> {
  writeFileSync(host.net('20-before.conflist'), fixture('10-calico.conflist'));
  await waitFor(() => host.isChained('20-before.conflist'), '20-before.conflist chained');
  chmodSync(binary, 0o644);
  await waitsForTheBinary(host, port, '20-after.conflist');
}

describe('readiness that never lies', () => {
  itWith(canUnshare, 'user namespaces (unshare -Ur)')('6. a net.d watch the kernel refuses at start: exit 1 naming the sysctl, never "ready"', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const daemon = host.start({}, ['run'], ['unshare', '-Ur', 'sh', '-c', 'echo 2 > /proc/sys/user/max_inotify_watches && exec "$@"', 'sh']);
    const { code } = await daemon.exited;
    expect(code).toBe(1);
    // What the CLI says as it exits (the container's last words in `kubectl logs --previous`).
    expect(daemon.stderr).toContain('raise the sysctl fs.inotify.max_user_watches');
    expect(host.holdsPlugin('10-flannel.conflist')).toBe(false);
  });

  it('net.d that cannot be listed at a resync (EACCES): not ready with that reason, no crash, ready again once it can', async () => {
    // Root passes any permission check while it holds CAP_DAC_OVERRIDE: without it (and without
    // CAP_DAC_READ_SEARCH, which the deployment does not keep either), a mode-000 net.d is EACCES.
    const asRoot = process.getuid?.() === 0;
    const dropDac = asRoot ? ['setpriv', '--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search'] : [];
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const port = await freePort();
    const daemon = host.start({ HEALTH_PORT: String(port), RESYNC_INTERVAL_S: '1' }, ['run'], dropDac);
    await daemon.ready();
    expect(host.isChained('10-flannel.conflist')).toBe(true);
    chmodSync(host.netDir, 0o000);
    try {
      const r = await waitFor(async () => {
        const got = await probe(port, '/readyz');
        return got.body.includes('cannot list the config directory: EACCES') && got;
      }, '/readyz: cannot list net.d', 10_000);
      expect(r.status).toBe(503);
      expect(daemon.child.exitCode).toBe(null);
    } finally {
      chmodSync(host.netDir, 0o755);
    }
    await daemon.ready(); // ready again
    // One error line for the cause, not one per retry.
    expect(daemon.count('cannot list the config directory: trying again')).toBe(1);
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
    expect(host.holdsPlugin('10-flannel.conflist')).toBe(false);
  });

  it('a config whose name is not UTF-8 (05-\\xff.conflist): not ready and check says NOT chained, since libcni loads it first', async () => {
    // Names reach JavaScript decoded, \xff as U+FFFD, so the agent cannot open this file by the name it
    // has; containerd's libcni reads names as bytes, sorts this one first and loads it, unchained.
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const raw = Buffer.concat([Buffer.from(`${host.netDir}/05-`), Buffer.from([0xff]), Buffer.from('.conflist')]);
    const rawTemp = Buffer.concat([raw, Buffer.from('.tmp')]);
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await daemon.ready();
    // Written as a primary does: a temp file renamed into place.
    writeFileSync(rawTemp, fixture('10-flannel.conflist'));
    renameSync(rawTemp, raw);
    const r = await waitFor(async () => {
      const got = await probe(port, '/readyz');
      return got.status === 503 && got;
    }, 'not ready once the file is there');
    expect(r.body).toContain('05-\uFFFD.conflist: error (its name is not valid UTF-8');
    const check = await host.cli(['check']);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('NOT chained: the runtime loads 05-\uFFFD.conflist');
    expect(readFileSync(raw, 'utf8')).toBe(fixture('10-flannel.conflist'));
    rmSync(raw);
    await daemon.ready(); // ready once it is gone
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
    // Found by the first scan as well.
    writeFileSync(raw, fixture('10-flannel.conflist'));
    const again = await host.started({ HEALTH_PORT: String(port) });
    expect((await probe(port, '/readyz')).body).toContain('05-\uFFFD.conflist: error');
    expect(await again.stop()).toEqual({ code: 0, signal: null });
  });

  it('CNI_PATCH_SCOPE=primary and a name that is not UTF-8: not ready when it is the primary, out of scope otherwise', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const named = (prefix: string) => Buffer.concat([Buffer.from(`${host.netDir}/${prefix}`), Buffer.from([0xff]), Buffer.from('.conflist')]);
    writeFileSync(named('99-'), fixture('10-flannel.conflist'));
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port), CNI_PATCH_SCOPE: 'primary' });
    await waitFor(() => host.isChained('10-calico.conflist'), 'the primary chained');
    expect((await probe(port, '/readyz')).status).toBe(200);
    writeFileSync(named('05-'), fixture('10-flannel.conflist'));
    const r = await waitFor(async () => {
      const got = await probe(port, '/readyz');
      return got.status === 503 && got;
    }, 'not ready once the primary is a file it cannot open');
    expect(r.body).toContain('05-\uFFFD.conflist: error (its name is not valid UTF-8');
    expect(r.body).not.toContain('99-');
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });

  it('a plugin binary that lost its execute bits is put back by the resync', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const daemon = await host.started({ RESYNC_INTERVAL_S: '1' });
    const binary = path.join(host.binDir, 'linkerd-cni');
    chmodSync(binary, 0o644);
    expect((await host.cli(['check'])).code).toBe(1);
    await waitFor(() => (statSync(binary).mode & 0o777) === 0o755, 'the binary executable again');
    expect((await host.cli(['check'])).code).toBe(0);
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });

  it('the plugin binary chmod-ed or touched after a chain: the next config waits for its reinstall (the bin dir is watched with IN_ATTRIB, not looked at for every write)', async () => {
    // No resync: only the bin dir's events can tell the agent.
    const { host, port, daemon } = await readyNode({ RESYNC_INTERVAL_S: '0' });
    const binary = path.join(host.binDir, 'linkerd-cni');
    const changes: Array<[string, () => void]> = [
      ['chmod 644', () => chmodSync(binary, 0o644)],
      ['touch', () => utimesSync(binary, new Date(2_000_000_000), new Date(2_000_000_000))],
    ];
    for (const [label, change] of changes) {
      const name = `20-${label.replace(' ', '-')}.conflist`;
      change();
      await waitsForTheBinary(host, port, name, `${label}: `);
      // Removed: the agent puts its copy back, and the config that waited is chained.
      rmSync(binary);
      await waitFor(() => host.isChained(name), `${label}: ${name} chained once the binary is back`);
      expect(statSync(binary).mode & 0o777).toBe(0o755);
    }
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });

  it('the bin dir moved away and made anew: the binary is put into the new one, and a chmod there is seen', async () => {
    const { host, port, daemon } = await readyNode({ RESYNC_INTERVAL_S: '0' });
    // A watch follows the inode: the one on the old bin dir would hear nothing of the new one. The new
    // one takes the path in one step (RENAME_EXCHANGE), so there is always a bin dir to install into.
    mkdirSync(`${host.binDir}.new`);
    addon.renameat2(SYSCALL.AT_FDCWD, `${host.binDir}.new`, SYSCALL.AT_FDCWD, host.binDir, SYSCALL.RENAME_EXCHANGE);
    const binary = path.join(host.binDir, 'linkerd-cni');
    await waitFor(() => existsSync(binary), 'the binary put into the new bin dir');
    await daemon.ready(); // ready again
    await chmodOfTrustedBinaryIsSeen(host, port, binary);
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });

  it('a parent of the bin dir swapped for a link elsewhere: the resync watches the new bin dir before the binary is trusted there', async () => {
    const { host, port, daemon } = await readyNode({ RESYNC_INTERVAL_S: '2' });
    // The bin dir's inode does not move (its parent does): no event, only the resync can tell.
    const cni = path.dirname(host.binDir);
    renameSync(cni, `${cni}-old`);
    mkdirSync(`${cni}-new/bin`, { recursive: true });
    symlinkSync('cni-new', cni);
    const binary = path.join(`${cni}-new/bin`, 'linkerd-cni');
    // Put there by a resync tick, right after the tick renewed the watch: the next is 2 s away.
    await waitFor(() => existsSync(binary), 'the binary put into the new bin dir', 10_000);
    await chmodOfTrustedBinaryIsSeen(host, port, binary);
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });

  it('a kubeconfig made world-readable gets its mode back at the resync', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const daemon = await host.started({ RESYNC_INTERVAL_S: '1' });
    const kubeconfig = host.net('ZZZ-linkerd-cni-kubeconfig');
    expect(statSync(kubeconfig).mode & 0o777).toBe(0o600);
    chmodSync(kubeconfig, 0o644);
    await waitFor(() => (statSync(kubeconfig).mode & 0o777) === 0o600, 'mode 0600 again', 10_000);
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });

  it('the plugin binary or the kubeconfig that cannot be put back: not ready naming it, ready once it can', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port), RESYNC_INTERVAL_S: '1' });
    await daemon.ready();
    // A directory swapped in for each, in one step (RENAME_EXCHANGE): the agent sees it moved away,
    // and putting the file back fails with EISDIR for as long as the directory is there.
    const cases = [
      { file: path.join(host.binDir, 'linkerd-cni'), reason: 'cannot install the plugin binaries: EISDIR' },
      { file: host.net('ZZZ-linkerd-cni-kubeconfig'), reason: 'cannot write the kubeconfig: EISDIR' },
    ];
    for (const { file, reason } of cases) {
      const aside = `${file}.aside`;
      mkdirSync(aside);
      addon.renameat2(SYSCALL.AT_FDCWD, aside, SYSCALL.AT_FDCWD, file, SYSCALL.RENAME_EXCHANGE);
      const r = await waitFor(async () => {
        const got = await probe(port, '/readyz');
        return got.status === 503 && got;
      }, `not ready: ${reason}`);
      expect(r.body).toContain(reason);
      if (file.endsWith('linkerd-cni')) expect((await host.cli(['check'])).code).toBe(1);
      rmSync(file, { recursive: true });
      rmSync(aside);
      await daemon.ready(); // ready once it is put back
      expect(existsSync(file) && !readdirSync(path.dirname(file)).includes(path.basename(aside))).toBe(true);
    }
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });

  it('the parcel backend with net.d missing: not ready, watching the path, chained once net.d exists', async () => {
    const host = new NodeHost({ netDir: false });
    const port = await freePort();
    const daemon = await host.started({ WATCH_BACKEND: 'parcel', HEALTH_PORT: String(port) });
    const r = await probe(port, '/readyz');
    expect(r.status).toBe(503);
    expect(r.body).toContain('does not resolve inside the host root');
    expect((await probe(port, '/healthz')).status).toBe(200);
    mkdirSync(host.netDir, { recursive: true });
    host.putFixture('10-flannel.conflist');
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained once net.d exists', 15_000);
    await daemon.ready();
  });

  it('net.d a symlink loop: not ready with that reason, and chained once it is fixed', async () => {
    const host = new NodeHost({ netDir: false });
    mkdirSync(path.dirname(host.netDir), { recursive: true });
    symlinkSync('net.d', host.netDir);
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    const r = await probe(port, '/readyz');
    expect(r.status).toBe(503);
    expect(r.body).toContain('ELOOP');
    expect((await probe(port, '/healthz')).status).toBe(200); // the path to it is watched
    rmSync(host.netDir);
    mkdirSync(host.netDir);
    host.putFixture('10-flannel.conflist');
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained once net.d is a directory');
    await daemon.ready();
  });

  itWith(canChattr, 'chattr +i')('7. net.d read-only at start: not ready, naming the reason; chained once writable', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    expect(spawnSync('chattr', ['+i', host.netDir]).status).toBe(0);
    const port = await freePort();
    try {
      await host.started({ HEALTH_PORT: String(port), RESYNC_INTERVAL_S: '1' });
      const r = await probe(port, '/readyz');
      expect(r.status).toBe(503);
      expect(r.body).toMatch(/owner file: EPERM|10-flannel.conflist: error/);
    } finally {
      spawnSync('chattr', ['-i', host.netDir]);
    }
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained by the resync once writable');
    await waitFor(async () => (await probe(port, '/readyz')).status === 200, 'ready');
  });

  itWith(canMount, 'mount -t tmpfs')('7. net.d on a full filesystem: the config untouched, no temp left, not ready naming ENOSPC; chained once there is room', async () => {
    const host = new NodeHost();
    expect(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', host.netDir]).status).toBe(0);
    try {
      host.putFixture('10-flannel.conflist');
      // Fill the rest: tmpfs counts whole pages, so the config keeps its one and nothing else fits.
      const filler = host.net('.filler');
      expect(spawnSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=4k', 'count=100']).status).not.toBe(0);
      const port = await freePort();
      const daemon = await host.started({ HEALTH_PORT: String(port), RESYNC_INTERVAL_S: '1' });
      await readyzLists(port, '10-flannel.conflist', 'error (ENOSPC');
      expect((await probe(port, '/readyz')).status).toBe(503);
      // A resync or two later: still the primary's bytes, and no temp file of ours left behind.
      const resyncs = await metricSum(port, 'cni_chainer_resyncs_total');
      await untilMetric(port, 'cni_chainer_resyncs_total', resyncs + 2);
      expect(host.read('10-flannel.conflist')).toBe(fixture('10-flannel.conflist'));
      expect(temps(host.netDir)).toEqual([]);
      expect(daemon.child.exitCode).toBe(null);
      rmSync(filler);
      await waitFor(() => host.isChained('10-flannel.conflist'), 'chained by the resync once there is room');
      await daemon.ready();
      expect(await daemon.stop()).toEqual({ code: 0, signal: null });
      expect(host.read('10-flannel.conflist')).toBe(fixture('10-flannel.conflist'));
    } finally {
      spawnSync('umount', ['-l', host.netDir]);
    }
  });

  it('an ancestor of net.d replaced (mv /etc/cni /etc/cni.old; mkdir -p /etc/cni/net.d): re-armed at once', async () => {
    const host = new NodeHost();
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port), RESYNC_INTERVAL_S: '0' });
    renameSync(host.disk('/etc/cni'), host.disk('/etc/cni.old'));
    mkdirSync(host.netDir, { recursive: true });
    host.putFixture('10-flannel.conflist');
    // No resync runs: only the ancestor watch can see this.
    await waitFor(() => host.isChained('10-flannel.conflist'), 'a config in the new net.d chained', 5_000);
    await daemon.ready();
    expect(daemon.child.exitCode).toBe(null);
  });

  it('a symlink target directory replaced while events are queued is watched again', async () => {
    const host = new NodeHost();
    const target = host.disk('/var/lib/cni-t');
    mkdirSync(target, { recursive: true });
    host.put(path.join(target, 'net.conflist'), fixture('10-flannel.conflist'));
    symlinkSync('/var/lib/cni-t/net.conflist', host.net('05-t.conflist'));
    const daemon = await host.started();
    await waitFor(() => host.isChained(path.join(target, 'net.conflist')), 'target chained');
    daemon.child.kill('SIGSTOP');
    try {
      renameSync(target, `${target}.old`);
      mkdirSync(target);
      host.put(path.join(target, 'net.conflist'), fixture('10-aws.conflist'));
    } finally {
      daemon.child.kill('SIGCONT');
    }
    await waitFor(() => host.isChained(path.join(target, 'net.conflist')), 'the new target chained');
    // And the new directory is watched: a later rewrite of the target is seen without a resync.
    host.put(path.join(target, 'net.conflist'), fixture('10-calico.conflist'));
    await waitFor(() => host.isChained(path.join(target, 'net.conflist')) && host.read(path.join(target, 'net.conflist')).includes('calico'), 'rewrite re-chained');
  });

  it('readiness agrees with the runtime: .json counts, a directory named y.conflist does not', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    mkdirSync(host.net('y.conflist'));
    host.putFixture('10-aws.conflist', '20-extra.json');
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    const r = await probe(port, '/readyz');
    expect(r.status).toBe(503);
    expect(r.body).toContain('20-extra.json: unmanaged');
    expect(r.body).not.toContain('y.conflist');
    rmSync(host.net('20-extra.json'));
    await daemon.ready(); // without the .json
  });

  it('CNI_PATCH_SCOPE=primary with 3,000 configs: the first scan is not quadratic', async () => {
    // Each pass asked for the primary, and each answer listed net.d and lstat'ed every name: 3,000
    // configs held the first scan for 19 s on the bench machine (0.12 s with one listing per turn).
    const host = new NodeHost();
    const text = fixture('10-calico.conflist');
    for (let i = 0; i < 3000; i++) writeFileSync(host.net(`${String(i).padStart(4, '0')}-c.conflist`), text);
    const daemon = host.start({ CNI_PATCH_SCOPE: 'primary' });
    await waitFor(() => host.isChained('0000-c.conflist'), 'the primary chained', 8_000);
    expect(host.holdsPlugin('0001-c.conflist')).toBe(false);
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
  });

  it('CNI_PATCH_SCOPE=primary never takes a directory for the primary', async () => {
    const host = new NodeHost();
    mkdirSync(host.net('00-dir.conflist'));
    host.putFixture('10-flannel.conflist');
    await host.started({ CNI_PATCH_SCOPE: 'primary' });
    await waitFor(() => host.isChained('10-flannel.conflist'), 'the first regular config is the primary');
  });
});
