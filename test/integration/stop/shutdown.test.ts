// Shutdown, crashes mid-storm, uninstall and check, through the real CLI.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../helpers/fixtures.js';
import { NodeHost } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

describe('shutdown', () => {
  it('SIGTERM removes the plugin from every config, the kubeconfig and the binaries, and exits 0', async () => {
    const host = new NodeHost();
    for (const name of ['10-calico.conflist', '10-aws.conflist', '99-bridge.conf']) host.putFixture(name);
    const daemon = await host.started();
    await waitFor(() => ['10-calico.conflist', '10-aws.conflist', '99-bridge.conflist'].every((n) => host.isChained(n)), 'all chained');
    const started = performance.now();
    expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(JSON.parse(host.read('10-calico.conflist'))).toEqual(JSON.parse(fixture('10-calico.conflist')));
    expect(JSON.parse(host.read('10-aws.conflist'))).toEqual(JSON.parse(fixture('10-aws.conflist')));
    expect(JSON.parse(host.read('99-bridge.conflist')).plugins).toEqual([JSON.parse(fixture('99-bridge.conf'))]);
    expect(readdirSync(host.netDir).sort()).toEqual(['10-aws.conflist', '10-calico.conflist', '99-bridge.conflist']);
    expect(readdirSync(host.binDir)).toEqual([]);
  });

  it('SIGINT does the same', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const daemon = await host.started();
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    expect(await daemon.stop('SIGINT')).toEqual({ code: 0, signal: null });
    expect(host.read('10-flannel.conflist')).not.toContain('linkerd-cni');
  });

  it('an old instance stopping during an upgrade leaves the new instance its configuration', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const oldPod = await host.startedWithProbes();
    await waitFor(() => host.isChained('10-calico.conflist'), 'chained by the old pod');
    const newPod = await host.started();
    await oldPod.stoodDown();
    const chained = statSync(host.net('10-calico.conflist')).ino;
    expect(await oldPod.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    // Never unchained and chained again: the very file (writes are renames of new inodes).
    expect(statSync(host.net('10-calico.conflist')).ino).toBe(chained);
    expect(host.isChained('10-calico.conflist')).toBe(true);
    expect(existsSync(host.net('ZZZ-linkerd-cni-kubeconfig'))).toBe(true);
    expect(existsSync(path.join(host.binDir, 'linkerd-cni'))).toBe(true);
    host.putFixture('10-flannel.conflist');
    await waitFor(() => host.isChained('10-flannel.conflist'), 'the new pod keeps working');
    expect(await newPod.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(host.holdsPlugin('10-calico.conflist')).toBe(false);
  });

  it('puts back a plugin binary that someone removed: from its spare hard link at once, and a new copy when the spare went too', async () => {
    const host = new NodeHost();
    const daemon = await host.started();
    const binary = path.join(host.binDir, 'linkerd-cni');
    const spare = path.join(host.binDir, '.linkerd-cni.cni-chainer-spare');
    const installed = statSync(binary).ino;
    expect(statSync(spare).ino).toBe(installed);
    rmSync(binary);
    await waitFor(() => existsSync(binary), 'the binary back');
    // The very file installed, renamed back; then a new spare of it.
    expect(statSync(binary).ino).toBe(installed);
    await waitFor(() => existsSync(spare) && statSync(spare).ino === installed, 'a new spare');
    rmSync(spare);
    rmSync(binary);
    // No spare to rename back: installed again from the image, a new file.
    await waitFor(() => existsSync(binary), 'the binary installed again');
    // A stop that uninstalls takes the spares too.
    expect((await daemon.stop()).code).toBe(0);
    expect(readdirSync(host.binDir)).toEqual([]);
  });

  it('SIGKILL in the middle of a storm leaves only complete files: every config parses', async () => {
    const host = new NodeHost();
    const daemon = await host.started();
    // A separate process writes 300 configs and rewrites them, as fast as it can.
    const writer = spawn(process.execPath, [
      '-e',
      `const fs = require('fs'); const dir = ${JSON.stringify(host.netDir)}; const text = ${JSON.stringify(fixture('10-calico.conflist'))};
       for (let round = 0; round < 3; round++) for (let i = 0; i < 300; i++) {
         fs.writeFileSync(dir + '/.w' + i, text); fs.renameSync(dir + '/.w' + i, dir + '/' + String(i).padStart(3, '0') + '-x.conflist');
       }`,
    ]);
    const written = new Promise((resolve) => writer.on('close', resolve));
    await waitFor(() => readdirSync(host.netDir).some((n) => n.endsWith('.conflist') && host.isChained(n)), 'a first config chained');
    await new Promise((resolve) => setTimeout(resolve, 30));
    await daemon.stop('SIGKILL');
    await written;
    const configs = readdirSync(host.netDir).filter((n) => n.endsWith('.conflist'));
    expect(configs).toHaveLength(300);
    // Every file is exactly the writer's version or exactly our patch of it: nothing in between.
    const original = JSON.parse(fixture('10-calico.conflist')) as { plugins: unknown[] };
    const patched = { ...original, plugins: [...original.plugins, host.plugin] };
    for (const name of configs) {
      const doc = JSON.parse(host.read(name)) as unknown;
      expect([original, patched]).toContainEqual(doc);
    }
    // A restart chains whatever the killed instance had not reached yet.
    await host.started();
    await waitFor(() => configs.every((n) => host.isChained(n)), 'all chained after restart');
  });
});

describe('uninstall and check', () => {
  it('check reports each config and exits 1 until the loaded one is chained', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    host.putFixture('05-cilium.conflist', '05-cilium.conflist-current');
    symlinkSync('05-cilium.conflist-current', host.net('05-cilium.conflist'));
    host.put('20-broken.conflist', '{');
    const before = await host.cli(['check', '--json']);
    expect(before.code).toBe(1);
    const report = JSON.parse(before.stdout);
    expect(report).toMatchObject({ netDirExists: true, loaded: '05-cilium.conflist', chained: false });
    expect(report.configs.map((c: { name: string; state: string }) => [c.name, c.state])).toEqual([
      ['05-cilium.conflist', 'not-chained'],
      ['10-calico.conflist', 'not-chained'],
      ['20-broken.conflist', 'invalid'],
    ]);
    expect(report.configs[0].symlink).toEqual({ text: '05-cilium.conflist-current', target: '/etc/cni/net.d/05-cilium.conflist-current' });
    const daemon = await host.started();
    await waitFor(() => host.isChained('05-cilium.conflist-current') && host.isChained('10-calico.conflist'), 'chained');
    await daemon.stop('SIGKILL');
    const after = await host.cli(['check']);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain('chained: the runtime loads 05-cilium.conflist');
    expect(readdirSync(host.netDir)).toContain('20-broken.conflist');
  });

  it('uninstall removes everything run installed (after a crash left it behind)', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    host.putFixture('05-cilium.conflist', '05-cilium.conflist-current');
    symlinkSync('05-cilium.conflist-current', host.net('05-cilium.conflist'));
    const daemon = await host.started();
    await waitFor(() => host.isChained('10-calico.conflist') && host.isChained('05-cilium.conflist-current'), 'chained');
    await daemon.stop('SIGKILL');
    const result = await host.cli(['uninstall']);
    expect(result.code).toBe(0);
    expect(JSON.parse(host.read('10-calico.conflist'))).toEqual(JSON.parse(fixture('10-calico.conflist')));
    expect(JSON.parse(host.read('05-cilium.conflist-current'))).toEqual(JSON.parse(fixture('05-cilium.conflist')));
    expect(readdirSync(host.netDir).sort()).toEqual(['05-cilium.conflist', '05-cilium.conflist-current', '10-calico.conflist']);
    expect(readdirSync(host.binDir)).toEqual([]);
    expect((await host.cli(['check'])).code).toBe(1);
    expect((await host.cli(['uninstall'])).code).toBe(0); // idempotent
  });

  it('check says so when net.d does not exist', async () => {
    const host = new NodeHost({ netDir: false });
    const result = await host.cli(['check']);
    expect(result).toMatchObject({ code: 1, stdout: expect.stringContaining('does not exist') });
  });
});
