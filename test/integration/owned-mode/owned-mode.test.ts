// CNI_PATCH_MODE=owned: the primary's file is never touched; the agent's own file, loaded first by the
// runtime, holds the primary's config with the plugin appended.
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { addon } from '../../../src/native/addon.js';
import { fixture } from '../../helpers/fixtures.js';
import { freePort, NodeHost, probe } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

// The copy is named after the primary it follows (names.ts ownedNameFor).
const OWNED = '10-calico-linkerd-cni.conflist';

/** The owned copy is chained and holds `marker` (it may come and go while the agent follows the primary). */
function ownedHolds(host: NodeHost, marker: string, owned = OWNED): boolean {
  try {
    return host.isChained(owned) && host.read(owned).includes(marker);
  } catch {
    return false;
  }
}

describe('owned mode', () => {
  it('keeps its own chained copy of the primary, follows it, never touches it, and removes the copy', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const port = await freePort();
    const daemon = await host.started({ CNI_PATCH_MODE: 'owned', HEALTH_PORT: String(port) });
    await waitFor(() => ownedHolds(host, '"calico"'), 'owned copy of calico');
    expect(host.read('10-calico.conflist')).toBe(fixture('10-calico.conflist'));
    expect((await probe(port, '/readyz')).status).toBe(200);
    const check = await host.cli(['check'], { CNI_PATCH_MODE: 'owned' });
    expect(check.code).toBe(0);
    expect(check.stdout).toContain(`* ${OWNED}  chained`);
    // The primary rewrites its file: the copy follows; the primary stays untouched.
    host.put('10-calico.conflist', fixture('10-calico.conflist').replace('"mtu": 0', '"mtu": 1450'));
    await waitFor(() => ownedHolds(host, '"mtu": 1450'), 'the copy follows the rewrite');
    expect(host.holdsPlugin('10-calico.conflist')).toBe(false);
    // The primary's config is gone: so is the copy, at once.
    rmSync(host.net('10-calico.conflist'));
    await waitFor(() => !existsSync(host.net(OWNED)), 'the copy removed with the primary');
    host.putFixture('10-flannel.conflist');
    await waitFor(() => ownedHolds(host, '"flannel"', '10-flannel-linkerd-cni.conflist'), 'a new primary is copied');
    expect((await daemon.stop()).code).toBe(0);
    expect(existsSync(host.net('10-flannel-linkerd-cni.conflist'))).toBe(false);
    expect(host.read('10-flannel.conflist')).toBe(fixture('10-flannel.conflist'));
  });

  it('follows a symlinked primary and a .conf primary, byte-exact', async () => {
    const host = new NodeHost();
    host.putFixture('05-cilium.conflist', '05-cilium.conflist-current');
    symlinkSync('05-cilium.conflist-current', host.net('05-cilium.conflist'));
    const daemon = await host.started({ CNI_PATCH_MODE: 'owned' });
    const ciliumCopy = '05-cilium-linkerd-cni.conflist';
    await waitFor(() => ownedHolds(host, '"cilium-cni"', ciliumCopy), 'copy of the link target');
    host.put('05-cilium.conflist-current', fixture('05-cilium.conflist').replace('"cilium-cni"', '"cilium-cni", "x": 1'));
    await waitFor(() => ownedHolds(host, '"x": 1', ciliumCopy), 'the copy follows the target');
    rmSync(host.net('05-cilium.conflist'));
    host.putFixture('10-calico.conf');
    await waitFor(() => ownedHolds(host, '"calico"'), 'copy of a .conf primary, as a conflist');
    expect(existsSync(host.net(ciliumCopy))).toBe(false);
    expect(host.read('10-calico.conf')).toBe(fixture('10-calico.conf'));
    expect(host.read(OWNED)).toContain(fixture('10-calico.conf').trim());
    await daemon.stop();
  });

  it('removes a stale copy whose primary is gone, first thing at start (the name of earlier versions too)', async () => {
    const host = new NodeHost();
    const chained = (text: string) => text.replace(/\]\s*\}\s*$/, `, ${JSON.stringify(host.plugin)}]}`);
    writeFileSync(host.net(OWNED), chained(fixture('10-flannel.conflist')));
    writeFileSync(host.net('01-linkerd-cni.conflist'), chained(fixture('10-flannel.conflist')));
    const daemon = await host.started({ CNI_PATCH_MODE: 'owned' });
    await waitFor(() => !existsSync(host.net(OWNED)) && !existsSync(host.net('01-linkerd-cni.conflist')), 'stale copies removed');
    expect(readdirSync(host.netDir).filter((n) => n.endsWith('.conflist'))).toEqual([]);
    await daemon.stop();
  });

  it('is not ready when a config sorts before the owned name the operator set (the runtime would not load it first)', async () => {
    const host = new NodeHost();
    host.putFixture('10-flannel.conflist', '00-calico.conflist');
    const port = await freePort();
    await host.started({ CNI_PATCH_MODE: 'owned', HEALTH_PORT: String(port), CNI_OWNED_CONFIG_NAME: '01-linkerd-cni.conflist' });
    const r = await probe(port, '/readyz');
    expect(r.status).toBe(503);
    expect(r.body).toContain('00-calico.conflist sorts before 01-linkerd-cni.conflist');
  });

  it('uninstall removes the owned copy and leaves the primary alone', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const daemon = await host.started({ CNI_PATCH_MODE: 'owned' });
    await waitFor(() => ownedHolds(host, '"calico"'), 'copy');
    await daemon.stop('SIGKILL');
    expect((await host.cli(['uninstall'], { CNI_PATCH_MODE: 'owned' })).code).toBe(0);
    expect(existsSync(host.net(OWNED))).toBe(false);
    expect(readFileSync(host.net('10-calico.conflist'), 'utf8')).toBe(fixture('10-calico.conflist'));
  });
});

describe('owned mode keeps what the primary set', () => {
  it("copies the primary's mode, owner, ACL and xattrs: a 0600 config is never copied world-readable", async () => {
    const host = new NodeHost();
    const primary = host.net('10-calico.conflist');
    writeFileSync(primary, fixture('10-calico.conflist'), { mode: 0o600 });
    chownSync(primary, 1234, 5678);
    execFileSync('setfacl', ['-m', 'u:4321:r', primary]);
    const fd = openSync(primary, 'r');
    addon.fsetxattr(fd, 'user.cni-test', Buffer.from('label'));
    closeSync(fd);
    const daemon = await host.started({ CNI_PATCH_MODE: 'owned' });
    await waitFor(() => ownedHolds(host, '"calico"'), 'copy');
    const st = statSync(host.net(OWNED));
    expect([st.mode & 0o7777, st.uid, st.gid]).toEqual([statSync(primary).mode & 0o7777, 1234, 5678]);
    expect(execFileSync('getfacl', ['-c', host.net(OWNED)], { encoding: 'utf8' })).toContain('user:4321:r--');
    const copyFd = openSync(host.net(OWNED), 'r');
    expect(addon.xattrs(copyFd).find(([k]) => k === 'user.cni-test')?.[1].toString()).toBe('label');
    closeSync(copyFd);
    // The primary is tightened later: the copy follows at the next sync.
    chmodSync(primary, 0o400);
    host.put('10-calico.conflist.unrelated.conflist', fixture('10-flannel.conflist'));
    await waitFor(() => (statSync(host.net(OWNED)).mode & 0o777) === 0o400, 'the mode follows');
    await daemon.stop();
  });
});

describe('check in owned mode', () => {
  it('reports a stale copy: the agent was killed, then the primary changed (exit 1, naming what differs)', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const env = { CNI_PATCH_MODE: 'owned' };
    const daemon = await host.started(env);
    await waitFor(() => ownedHolds(host, '"calico"'), 'copy');
    expect((await host.cli(['check'], env)).code).toBe(0);
    await daemon.stop('SIGKILL');
    host.put('10-calico.conflist', fixture('10-calico.conflist').replace('"mtu": 0', '"mtu": 1450'));
    const check = await host.cli(['check'], env);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(`* ${OWNED}  stale-copy  (differs from 10-calico.conflist plus the plugin`);
  });
});

describe('the owned name sorts right, without configuration', () => {
  it.each(['01-kube-ovn.conflist', '00-aaa.conflist'])('a primary named %s beside Multus: the copy is loaded first, ready, check agrees', async (primary) => {
    const host = new NodeHost();
    host.put(primary, fixture('10-flannel.conflist'));
    // Multus thin, embedding the primary: it sorts after 00-aaa, before 01-kube-ovn.
    host.put('00-multus.conf', JSON.stringify({ cniVersion: '0.3.1', name: 'multus-cni-network', type: 'multus', delegates: [JSON.parse(fixture('10-flannel.conflist'))] }, null, 2));
    const port = await freePort();
    const env = { CNI_PATCH_MODE: 'owned', HEALTH_PORT: String(port) };
    const daemon = await host.started(env);
    const copy = primary.replace('.conflist', '-linkerd-cni.conflist');
    await waitFor(() => host.isChained(copy), 'the copy, named after the primary');
    await daemon.ready();
    const check = await host.cli(['check'], env);
    expect(check.code).toBe(0);
    // The runtime loads the first name: Multus when it sorts first (its delegate chained inside), else our copy.
    const first = [copy, '00-multus.conf', primary].sort()[0];
    expect(check.stdout).toContain(`* ${first}  chained`);
    expect(host.read(primary)).toBe(fixture('10-flannel.conflist'));
    await daemon.stop();
  });
});
