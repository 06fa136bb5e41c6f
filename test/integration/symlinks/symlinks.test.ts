// Symlinked configs: patch the target, keep the link, stay inside the host root.
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NativeWatcher } from '../../../src/watch/native.js';
import type { WatchEvent } from '../../../src/watch/watcher.js';
import { fixture } from '../../helpers/fixtures.js';
import { freePort, NodeHost, readyzLists } from '../../helpers/node-host.js';
import { tempDir } from '../../helpers/tmp.js';
import { Inbox, waitFor } from '../../helpers/wait.js';

function expectLink(host: NodeHost, name: string, text: string): void {
  expect(lstatSync(host.net(name)).isSymbolicLink()).toBe(true);
  expect(readlinkSync(host.net(name))).toBe(text);
}

describe('symlinked configs', () => {
  it('Cilium style, created before start: patches 05-cilium.conflist-current and keeps the link', async () => {
    const host = new NodeHost();
    host.putFixture('05-cilium.conflist', '05-cilium.conflist-current');
    symlinkSync('05-cilium.conflist-current', host.net('05-cilium.conflist'));
    await host.started();
    await waitFor(() => host.isChained('05-cilium.conflist-current'), 'target chained');
    expectLink(host, '05-cilium.conflist', '05-cilium.conflist-current');
  });

  it('Cilium style, created after start, then the target rewritten by the primary CNI', async () => {
    const host = new NodeHost();
    await host.started();
    host.putFixture('05-cilium.conflist', '05-cilium.conflist-current');
    symlinkSync('05-cilium.conflist-current', host.net('05-cilium.conflist'));
    await waitFor(() => host.isChained('05-cilium.conflist-current'), 'target chained');
    host.putFixture('05-cilium.conflist', '05-cilium.conflist-current'); // by rename
    await waitFor(() => host.isChained('05-cilium.conflist-current'), 'chained after rename over the target');
    writeFileSync(host.net('05-cilium.conflist-current'), fixture('05-cilium.conflist')); // in place
    await waitFor(() => host.isChained('05-cilium.conflist-current'), 'chained after in-place rewrite');
    expectLink(host, '05-cilium.conflist', '05-cilium.conflist-current');
  });

  it('absolute target in another directory (OKE style): resolved inside the host root, watched, link re-created', async () => {
    const host = new NodeHost();
    const targetDir = host.disk('/var/lib/oke/cni');
    mkdirSync(targetDir, { recursive: true });
    host.put(path.join(targetDir, 'net.conflist'), fixture('10-flannel.conflist'));
    await host.started();
    symlinkSync('/var/lib/oke/cni/net.conflist', host.net('10-oke.conflist'));
    await waitFor(() => host.isChained(path.join(targetDir, 'net.conflist')), 'target chained');
    // The runtime watches net.d only: after the re-patch it must see an event there (the link is
    // re-created by rename), which this watcher, standing in for containerd, records.
    const runtime = new Inbox<WatchEvent>();
    const watcher = new NativeWatcher((events) => runtime.push(...events));
    watcher.watchSync(host.netDir);
    host.put(path.join(targetDir, 'net.conflist'), fixture('10-flannel.conflist'));
    await waitFor(() => host.isChained(path.join(targetDir, 'net.conflist')), 're-chained after the target was rewritten');
    await runtime.until((e) => e.kind === 'moved-in' && e.name === '10-oke.conflist', 'an event for the link in net.d');
    await watcher.close();
    expectLink(host, '10-oke.conflist', '/var/lib/oke/cni/net.conflist');
    expect(readdirSync(targetDir)).toEqual(['net.conflist']);
  });

  it('follows a retargeted link (ln -sfn)', async () => {
    const host = new NodeHost();
    await host.started();
    host.putFixture('10-flannel.conflist', 'a.conflist-v1');
    host.putFixture('10-aws.conflist', 'a.conflist-v2');
    symlinkSync('a.conflist-v1', host.net('10-a.conflist'));
    await waitFor(() => host.isChained('a.conflist-v1'), 'v1 chained');
    symlinkSync('a.conflist-v2', host.net('.10-a.conflist.new'));
    renameSync(host.net('.10-a.conflist.new'), host.net('10-a.conflist'));
    await waitFor(() => host.isChained('a.conflist-v2'), 'v2 chained');
    // v1 is no longer a config: rewriting it must not be patched.
    host.putFixture('10-flannel.conflist', 'a.conflist-v1');
    host.putFixture('10-flannel.conflist', '10-marker.conflist');
    await waitFor(() => host.isChained('10-marker.conflist'), 'marker');
    expect(host.holdsPlugin('a.conflist-v1')).toBe(false);
  });

  it('follows a dangling link down as its missing directories and then its target are created', async () => {
    const host = new NodeHost();
    symlinkSync('/run/cni/ready/05-cilium.conflist', host.net('05-cilium.conflist'));
    // No resync: the first missing component's directory is watched, level by level.
    const port = await freePort();
    await host.started({ RESYNC_INTERVAL_S: '0', HEALTH_PORT: String(port) });
    await readyzLists(port, '05-cilium.conflist', 'dangling');
    mkdirSync(host.disk('/run/cni/ready'), { recursive: true });
    host.put(host.disk('/run/cni/ready/05-cilium.conflist'), fixture('05-cilium.conflist'));
    await waitFor(() => host.isChained(host.disk('/run/cni/ready/05-cilium.conflist')), 'target chained');
  });

  it('patches a dangling target as soon as it appears in a directory that exists', async () => {
    const host = new NodeHost();
    mkdirSync(host.disk('/run/cni'), { recursive: true });
    symlinkSync('../../../run/cni/05-cilium.conflist', host.net('05-cilium.conflist'));
    const port = await freePort();
    await host.started({ HEALTH_PORT: String(port) });
    await readyzLists(port, '05-cilium.conflist', 'dangling');
    host.put(host.disk('/run/cni/05-cilium.conflist'), fixture('05-cilium.conflist'));
    await waitFor(() => host.isChained(host.disk('/run/cni/05-cilium.conflist')), 'target chained');
  });

  it('never writes outside the host root: absolute and .. escapes land inside it, loops are skipped', async () => {
    const host = new NodeHost();
    // Sentinels outside the host root, where a naive resolver would go.
    const outside = tempDir('cni-chainer-outside-');
    const sentinel = path.join(outside, 'x.conflist');
    writeFileSync(sentinel, fixture('10-flannel.conflist'));
    symlinkSync(sentinel, host.net('10-abs.conflist')); // absolute: means <root><outside>/x.conflist
    symlinkSync(`../../../../../../../../../..${sentinel}`, host.net('10-dots.conflist'));
    symlinkSync('20-loop-b.conflist', host.net('20-loop-a.conflist'));
    symlinkSync('20-loop-a.conflist', host.net('20-loop-b.conflist'));
    const inside = host.disk(sentinel);
    mkdirSync(path.dirname(inside), { recursive: true });
    writeFileSync(inside, fixture('10-flannel.conflist'));
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => host.isChained(inside), 'the in-root copy chained');
    await readyzLists(port, '20-loop-a.conflist', 'loop');
    expect(readFileSync(sentinel, 'utf8')).toBe(fixture('10-flannel.conflist'));
    expect(readdirSync(outside)).toEqual(['x.conflist']);
    expect(readlinkSync(host.net('20-loop-a.conflist'))).toBe('20-loop-b.conflist');
    // Still alive and working.
    host.putFixture('10-aws.conflist');
    await waitFor(() => host.isChained('10-aws.conflist'), 'later config chained');
    await daemon.stop();
    expect(readFileSync(sentinel, 'utf8')).toBe(fixture('10-flannel.conflist'));
  });

  it('skips a link to a directory', async () => {
    const host = new NodeHost();
    mkdirSync(host.disk('/some/dir'), { recursive: true });
    symlinkSync('/some/dir', host.net('10-dir.conflist'));
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    const line = await readyzLists(port, '10-dir.conflist', 'not-regular');
    expect(line).toContain('symlink target /some/dir is not a regular file');
    expect(readlinkSync(host.net('10-dir.conflist'))).toBe('/some/dir');
    expect(readdirSync(host.disk('/some/dir'))).toEqual([]);
    await daemon.stop();
  });

  it('unpatches targets of links on SIGTERM and keeps the links', async () => {
    const host = new NodeHost();
    host.putFixture('05-cilium.conflist', '05-cilium.conflist-current');
    symlinkSync('05-cilium.conflist-current', host.net('05-cilium.conflist'));
    const daemon = await host.started();
    await waitFor(() => host.isChained('05-cilium.conflist-current'), 'chained');
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
    expect(JSON.parse(host.read('05-cilium.conflist-current'))).toEqual(JSON.parse(fixture('05-cilium.conflist')));
    expectLink(host, '05-cilium.conflist', '05-cilium.conflist-current');
    rmSync(host.net('05-cilium.conflist'));
  });
});

describe('a symlinked net.d', () => {
  it('follows /etc/cni/net.d -> /var/lib/cni/net.d inside the host root, never into the container', async () => {
    const host = new NodeHost({ netDir: false });
    const real = host.disk('/var/lib/cni/net.d');
    mkdirSync(real, { recursive: true });
    mkdirSync(path.dirname(host.netDir), { recursive: true });
    symlinkSync('/var/lib/cni/net.d', host.netDir); // absolute: the host's /var/lib, under the prefix
    host.put(path.join(real, '10-flannel.conflist'), fixture('10-flannel.conflist'));
    const daemon = await host.started();
    await waitFor(() => host.isChained(path.join(real, '10-flannel.conflist')), 'chained in the real directory');
    host.put(path.join(real, '10-aws.conflist'), fixture('10-aws.conflist'));
    await waitFor(() => host.isChained(path.join(real, '10-aws.conflist')), 'a new config chained');
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
    expect(host.holdsPlugin(path.join(real, '10-flannel.conflist'))).toBe(false);
  });
});

describe('a symlinked single-plugin .conf', () => {
  it('follows changes to its target, and stop puts the link back exactly as it was', async () => {
    const host = new NodeHost();
    mkdirSync(host.disk('/var/lib/p'), { recursive: true });
    const target = host.disk('/var/lib/p/10-p.conf');
    host.put(target, fixture('10-calico.conf'));
    symlinkSync('/var/lib/p/10-p.conf', host.net('10-p.conf'));
    const daemon = await host.started();
    await waitFor(() => host.isChained('10-p.conflist'), 'the conflist made from the target');
    expect(existsSync(host.net('10-p.conf'))).toBe(false); // the runtime loads the chained conflist
    // The primary rewrites its target (rename-in): the conflist follows it.
    const updated = fixture('10-calico.conf').replace('"mtu": 0', '"mtu": 1410');
    host.put(target, updated);
    await waitFor(() => host.isChained('10-p.conflist') && host.read('10-p.conflist').includes('"mtu": 1410'), 'the conflist follows the target');
    expect(host.read(target)).toBe(updated);
    expect((await daemon.stop()).code).toBe(0);
    expect(lstatSync(host.net('10-p.conf')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(host.net('10-p.conf'))).toBe('/var/lib/p/10-p.conf');
    expect(readdirSync(host.netDir).sort()).toEqual(['10-p.conf']);
    expect(host.read(target)).toBe(updated);
  });

  it('after a crash, the next start still follows the target, and uninstall puts the link back', async () => {
    const host = new NodeHost();
    mkdirSync(host.disk('/var/lib/p'), { recursive: true });
    const target = host.disk('/var/lib/p/10-p.conf');
    host.put(target, fixture('99-bridge.conf'));
    symlinkSync('../../../var/lib/p/10-p.conf', host.net('10-p.conf'));
    const first = await host.started();
    await waitFor(() => host.isChained('10-p.conflist'), 'converted');
    await first.stop('SIGKILL');
    const updated = fixture('99-bridge.conf').replace('"bridge": "cni0"', '"bridge": "cni1"');
    host.put(target, updated);
    const second = await host.started();
    await waitFor(() => host.isChained('10-p.conflist') && host.read('10-p.conflist').includes('cni1'), 'the conflist follows after a restart');
    await second.stop('SIGKILL');
    expect((await host.cli(['uninstall'])).code).toBe(0);
    expect(readlinkSync(host.net('10-p.conf'))).toBe('../../../var/lib/p/10-p.conf');
    expect(readdirSync(host.netDir).filter((n) => n !== 'ZZZ-linkerd-cni-kubeconfig' && n !== '.cni-chainer.owner').sort()).toEqual(['10-p.conf']);
    expect(host.read(target)).toBe(updated);
  });
});
