// Reacting to what the primary CNI does while the daemon runs.
import { spawnSync } from 'node:child_process';
import { closeSync, chmodSync, chownSync, existsSync, mkdirSync, openSync, readdirSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { itWith } from '../../helpers/capability.js';
import { fixture } from '../../helpers/fixtures.js';
import { freePort, NodeHost, probe, readyzLists, untilMetric } from '../../helpers/node-host.js';
import { tempDir } from '../../helpers/tmp.js';
import { waitFor } from '../../helpers/wait.js';

/** Waits until /readyz says net.d is gone: its path no longer resolves to a directory. */
const netDirGone = (port: number) =>
  waitFor(async () => /\/etc\/cni\/net\.d (does not resolve|is not a directory|disappeared)|config directory missing/.test((await probe(port, '/readyz')).body), '/readyz: net.d gone');

describe('events', () => {
  it('chains a config created by rename, and one rewritten in place', async () => {
    const host = new NodeHost();
    await host.started();
    host.putFixture('10-calico.conflist');
    await waitFor(() => host.isChained('10-calico.conflist'), 'renamed-in config chained');
    const chainedOnce = host.read('10-calico.conflist');
    writeFileSync(host.net('10-calico.conflist'), fixture('10-calico.conflist')); // O_TRUNC in place, like `cat >`
    await waitFor(() => host.isChained('10-calico.conflist'), 'in-place rewrite chained again');
    // The same bytes as the first patch: only the plugin was added, once, and nothing else changed.
    expect(host.read('10-calico.conflist')).toBe(chainedOnce);
  });

  it('upgrades a .conf written while running to a .conflist and removes the .conf', async () => {
    const host = new NodeHost();
    await host.started();
    host.putFixture('99-bridge.conf');
    await waitFor(() => host.isChained('99-bridge.conflist') && !existsSync(host.net('99-bridge.conf')), 'upgraded');
    const doc = JSON.parse(host.read('99-bridge.conflist')) as { name: string; cniVersion: string; plugins: Array<{ type: string }> };
    expect([doc.name, doc.cniVersion, doc.plugins.map((p) => p.type)]).toEqual(['bridge-net', '0.4.0', ['bridge', 'linkerd-cni']]);
  });

  it('leaves invalid JSON untouched (logged once) and chains it when it becomes valid', async () => {
    const host = new NodeHost();
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    const junk = `${fixture('10-flannel.conflist')}garbage`;
    host.put('10-flannel.conflist', junk);
    await readyzLists(port, '10-flannel.conflist', 'invalid');
    host.put('10-other.conflist', fixture('10-aws.conflist')); // a later event proves the first was handled
    await waitFor(() => host.isChained('10-other.conflist'), 'the other config');
    expect(host.read('10-flannel.conflist')).toBe(junk);
    writeFileSync(host.net('10-flannel.conflist'), junk); // the same content again: no second warning
    host.put('10-third.conflist', fixture('10-aws.conflist'));
    await waitFor(() => host.isChained('10-third.conflist'), 'the third config');
    expect(daemon.logs.items.filter((l) => l.file === '10-flannel.conflist' && l.msg === 'config left unchanged')).toHaveLength(1);
    host.putFixture('10-flannel.conflist');
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained once valid');
  });

  it('does not touch a file while its writer still has it open half-written', async () => {
    const host = new NodeHost();
    const port = await freePort();
    await host.started({ HEALTH_PORT: String(port) });
    const text = fixture('10-containerd-net.conflist');
    const fd = openSync(host.net('10-containerd-net.conflist'), 'w', 0o644);
    writeSync(fd, text.slice(0, 100));
    // After the quiet period the daemon looks, finds half a file, and leaves it.
    await readyzLists(port, '10-containerd-net.conflist', 'invalid');
    expect(host.read('10-containerd-net.conflist')).toBe(text.slice(0, 100));
    writeSync(fd, text.slice(100));
    closeSync(fd);
    await waitFor(() => host.isChained('10-containerd-net.conflist'), 'chained after close');
  });

  it('keeps mode 0600 and the owner of the file it patches', async () => {
    const host = new NodeHost();
    await host.started();
    const tmp = host.net('.calico-tmp');
    writeFileSync(tmp, fixture('10-calico.conflist'));
    chmodSync(tmp, 0o600);
    chownSync(tmp, 65534, 65534);
    renameSync(tmp, host.net('10-calico.conflist'));
    await waitFor(() => host.isChained('10-calico.conflist'), 'chained');
    const st = statSync(host.net('10-calico.conflist'));
    expect([st.mode & 0o7777, st.uid, st.gid]).toEqual([0o600, 65534, 65534]);
  });

  it('watches net.d again after it is deleted and re-created', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const port = await freePort();
    await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    host.removeNetDir();
    await netDirGone(port);
    mkdirSync(host.netDir);
    host.putFixture('10-calico.conflist');
    await waitFor(() => host.isChained('10-calico.conflist'), 'chained in the new net.d');
    await waitFor(() => existsSync(host.net('ZZZ-linkerd-cni-kubeconfig')), 'kubeconfig back');
  });

  it('follows net.d when its parent reports the removal first (net.d held open: no IN_DELETE_SELF yet)', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const port = await freePort();
    await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    // An open fd keeps the removed directory's dentry busy: the kernel sends IN_DELETE_SELF only at its
    // close, after the parent's IN_DELETE. A pass that has net.d open at the rmdir does the same.
    const held = openSync(host.netDir, 'r');
    try {
      host.removeNetDir();
      await netDirGone(port);
      mkdirSync(host.netDir);
      host.putFixture('10-calico.conflist');
      await waitFor(() => host.isChained('10-calico.conflist'), 'chained in the new net.d');
    } finally {
      closeSync(held);
    }
  });

  it('rescans after an inotify queue overflow', async () => {
    const host = new NodeHost();
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    daemon.child.kill('SIGSTOP'); // nothing is read while stopped: the kernel queue fills up
    try {
      const limit = Number(await import('node:fs').then((fs) => fs.readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8')));
      const noise = host.net('noise.txt');
      for (let i = 0; i < limit / 2 + 100; i++) writeFileSync(noise, String(i)); // IN_MODIFY + IN_CLOSE_WRITE each
      host.putFixture('10-flannel.conflist'); // its events are dropped: only the rescan can find it
      host.putFixture('10-aws.conflist');
    } finally {
      daemon.child.kill('SIGCONT');
    }
    await untilMetric(port, 'cni_chainer_overflows_total', 1);
    await waitFor(() => host.isChained('10-flannel.conflist') && host.isChained('10-aws.conflist'), 'both chained by the rescan');
  });

  it('ignores temp files, hidden files and non-config names', async () => {
    const host = new NodeHost();
    await host.started();
    for (const name of ['.hidden.conflist', '10-x.conflist.tmp', '10-x.conflist~', '10-x.conflist.bak', 'calico-kubeconfig', '10-x.conflist.swp']) {
      host.put(name, fixture('10-flannel.conflist'));
    }
    host.putFixture('10-flannel.conflist', '10-marker.conflist');
    await waitFor(() => host.isChained('10-marker.conflist'), 'the marker');
    for (const name of readdirSync(host.netDir).filter((n) => n !== '10-marker.conflist' && !n.startsWith('.cni-chainer') && n !== 'ZZZ-linkerd-cni-kubeconfig')) {
      expect(host.holdsPlugin(name), name).toBe(false);
    }
  });

  it('chains only the file the runtime loads with CNI_PATCH_SCOPE=primary', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    host.putFixture('10-calico.conflist', '20-calico.conflist');
    await host.started({ CNI_PATCH_SCOPE: 'primary' });
    await waitFor(() => host.isChained('10-flannel.conflist'), 'the primary chained');
    expect(host.holdsPlugin('20-calico.conflist')).toBe(false);
    host.putFixture('05-cilium.conflist');
    await waitFor(() => host.isChained('05-cilium.conflist'), 'the new primary chained');
    expect(host.holdsPlugin('20-calico.conflist')).toBe(false);
  });

  it('works the same with the parcel backend', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const daemon = await host.started({ WATCH_BACKEND: 'parcel' });
    await waitFor(() => host.isChained('10-flannel.conflist'), 'pre-existing chained');
    host.putFixture('99-bridge.conf');
    await waitFor(() => host.isChained('99-bridge.conflist'), 'new .conf upgraded and chained');
    expect(await daemon.stop()).toEqual({ code: 0, signal: null });
    expect(host.holdsPlugin('10-flannel.conflist')).toBe(false);
  });
});

describe('write failures', () => {
  const canChattr = (() => {
    const dir = tempDir();
    const ok = spawnSync('chattr', ['+i', dir]).status === 0;
    spawnSync('chattr', ['-i', dir]);
    return ok;
  })();

  itWith(canChattr, 'chattr +i')('leaves the old file and no temp file, logs path and code, and retries on the resync', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist');
    const daemon = await host.started({ RESYNC_INTERVAL_S: '1' });
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained');
    // An immutable directory refuses new entries (our temp file) but lets the file be rewritten.
    expect(spawnSync('chattr', ['+i', host.netDir]).status).toBe(0);
    try {
      writeFileSync(host.net('10-flannel.conflist'), fixture('10-flannel.conflist'));
      const failure = await daemon.waitLog('patching config failed');
      expect(failure).toMatchObject({ file: '10-flannel.conflist', code: 'EPERM' });
      expect(String(failure.path)).toContain(host.netDir);
      expect(host.read('10-flannel.conflist')).toBe(fixture('10-flannel.conflist'));
      expect(readdirSync(host.netDir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    } finally {
      spawnSync('chattr', ['-i', host.netDir]);
    }
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained by the resync once writable');
  });
});
