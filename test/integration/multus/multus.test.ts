// Multus thick and thin as they really behave (test/helpers/primaries.ts): the primary they name is
// chained, never Multus itself. The real CLI on real files and inotify.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../helpers/fixtures.js';
import { freePort, metric, NodeHost, probe } from '../../helpers/node-host.js';
import { multusThick, multusThin, writeInPlace, writeRenamedIn } from '../../helpers/primaries.js';
import { waitFor } from '../../helpers/wait.js';

const CALICO = '10-calico.conflist';

/** How often the plugin's type appears in a file (once per chain that runs it). */
function pluginEntries(host: NodeHost, file: string): number {
  return host.read(file).split(`"type": "${String(host.plugin.type)}"`).length - 1;
}

describe('Multus thick: clusterNetwork names the primary by path', () => {
  it.each(['all', 'primary'])('chains the primary it reads, never Multus itself (scope %s); both byte-identical after stop', async (scope) => {
    const host = new NodeHost();
    writeInPlace(host.net(CALICO), fixture(CALICO));
    const multus = multusThick(`/etc/cni/net.d/${CALICO}`);
    writeInPlace(host.net('00-multus.conf'), multus);
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port), CNI_PATCH_SCOPE: scope });
    await waitFor(() => host.isChained(CALICO), 'the primary Multus reads is chained');
    await daemon.ready();
    expect(host.read('00-multus.conf')).toBe(multus);
    expect(existsSync(host.net('00-multus.conflist'))).toBe(false);
    expect(pluginEntries(host, CALICO)).toBe(1);
    const check = await host.cli(['check']);
    expect(check.code).toBe(0);
    expect(check.stdout).toContain('* 00-multus.conf  chained');
    expect(check.stdout).toContain(`delegates to /etc/cni/net.d/${CALICO}`);
    // Multus rewrites its file in place (its daemon restarts): still never touched.
    writeInPlace(host.net('00-multus.conf'), multus.replace('"portMappings": true', '"portMappings": false'));
    // Calico rewrites the primary in place: chained again.
    writeInPlace(host.net(CALICO), fixture(CALICO).replace('"mtu": 0', '"mtu": 1400'));
    await waitFor(() => host.isChained(CALICO) && host.read(CALICO).includes('"mtu": 1400'), 're-chained after the in-place rewrite');
    expect(host.read('00-multus.conf')).toContain('"portMappings": false');
    expect(pluginEntries(host, '00-multus.conf')).toBe(0);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read(CALICO)).toBe(fixture(CALICO).replace('"mtu": 0', '"mtu": 1400'));
    expect((statSync(host.net(CALICO)).mode & 0o777).toString(8)).toBe('600');
  });

  it("never converts a single-plugin .conf that Multus reads by path (Multus would find it gone)", async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conf');
    writeInPlace(host.net('00-multus.conf'), multusThick('/etc/cni/net.d/10-calico.conf'));
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(async () => (await probe(port, '/readyz')).body.includes('reads this single-plugin config by path'), 'not ready, saying why');
    expect(host.read('10-calico.conf')).toBe(fixture('10-calico.conf'));
    expect(existsSync(host.net('10-calico.conflist'))).toBe(false);
    expect((await probe(port, '/readyz')).status).toBe(503);
    await daemon.stop();
  });

  it('follows a delegate outside net.d and gives it back at stop', async () => {
    const host = new NodeHost();
    const elsewhere = path.join(host.hostRoot, 'var', 'lib', 'primary');
    (await import('node:fs')).mkdirSync(elsewhere, { recursive: true });
    writeInPlace(path.join(elsewhere, CALICO), fixture(CALICO));
    writeInPlace(host.net('00-multus.conf'), multusThick(`/var/lib/primary/${CALICO}`));
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => host.isChained(path.join(elsewhere, CALICO)), 'the delegate outside net.d is chained');
    await daemon.ready();
    // The primary rewrites it: the delegate's directory is watched, so it is chained again.
    writeInPlace(path.join(elsewhere, CALICO), fixture(CALICO).replace('"mtu": 0', '"mtu": 1300'));
    await waitFor(() => host.isChained(path.join(elsewhere, CALICO)) && host.read(path.join(elsewhere, CALICO)).includes('1300'), 'chained again');
    expect((await daemon.stop()).code).toBe(0);
    expect(readFileSync(path.join(elsewhere, CALICO), 'utf8')).toBe(fixture(CALICO).replace('"mtu": 0', '"mtu": 1300'));
  });

  it('owned mode: not ready while Multus reads the unchained primary, ready once it reads the copy', async () => {
    const host = new NodeHost();
    writeInPlace(host.net(CALICO), fixture(CALICO));
    writeInPlace(host.net('00-multus.conf'), multusThick(`/etc/cni/net.d/${CALICO}`));
    const port = await freePort();
    const env = { HEALTH_PORT: String(port), CNI_PATCH_MODE: 'owned' };
    const daemon = await host.started(env);
    const copy = '10-calico-linkerd-cni.conflist';
    await waitFor(() => host.isChained(copy), 'the owned copy');
    await waitFor(async () => (await probe(port, '/readyz')).body.includes(`set Multus' clusterNetwork to /etc/cni/net.d/${copy}`), 'not ready, naming the fix');
    expect((await host.cli(['check'], env)).code).toBe(1);
    writeInPlace(host.net('00-multus.conf'), multusThick(`/etc/cni/net.d/${copy}`));
    await daemon.ready(); // once Multus reads the copy
    expect((await host.cli(['check'], env)).code).toBe(0);
    expect(host.read(CALICO)).toBe(fixture(CALICO));
    await daemon.stop();
    expect(existsSync(host.net(copy))).toBe(false);
  });
});

describe('Multus thin: the primary embedded in delegates', () => {
  it.each([
    ['0.3.1', '00-multus.conf'],
    ['1.0.0', '00-multus.conflist'],
  ])('chains the embedded delegate in place (cniVersion %s, %s), byte-exact both ways', async (version, name) => {
    const host = new NodeHost();
    host.putFixture(CALICO);
    const thin = multusThin(fixture(CALICO), version);
    writeRenamedIn(host.netDir, name, thin);
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => pluginEntries(host, name) === 1 && host.isChained(CALICO), 'delegate and primary chained');
    await daemon.ready();
    const doc = JSON.parse(host.read(name)) as Record<string, unknown>;
    const multus = (version === '1.0.0' ? (doc.plugins as Array<Record<string, unknown>>)[0] : doc)!;
    expect(multus.type).toBe('multus');
    const delegate = (multus.delegates as Array<{ plugins: Array<Record<string, unknown>> }>)[0]!;
    expect(delegate.plugins.at(-1)).toEqual(host.plugin);
    // Multus regenerates its file from the (now chained) primary: already chained, nothing to write.
    const writes = await metric(port, 'cni_chainer_patches_total');
    writeRenamedIn(host.netDir, name, multusThin(host.read(CALICO), version));
    await waitFor(() => pluginEntries(host, name) === 1, 'regenerated');
    expect((await host.cli(['check'])).code).toBe(0);
    expect(await metric(port, 'cni_chainer_patches_total')).toBe(writes);
    // Multus regenerates from an unchained primary (a restart raced ours): chained inside again.
    writeRenamedIn(host.netDir, name, thin);
    await waitFor(() => pluginEntries(host, name) === 1, 'chained inside again');
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read(name)).toBe(thin);
    expect(host.read(CALICO)).toBe(fixture(CALICO));
  });

  it('owned mode chains the embedded delegate in place too, and the copy follows the primary', async () => {
    const host = new NodeHost();
    host.putFixture(CALICO);
    const thin = multusThin(fixture(CALICO));
    writeRenamedIn(host.netDir, '00-multus.conf', thin);
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port), CNI_PATCH_MODE: 'owned' });
    await waitFor(() => pluginEntries(host, '00-multus.conf') === 1 && host.isChained('10-calico-linkerd-cni.conflist'), 'delegate and copy chained');
    await daemon.ready();
    expect(host.read(CALICO)).toBe(fixture(CALICO));
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read('00-multus.conf')).toBe(thin);
  });
});
