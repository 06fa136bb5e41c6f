// Multus configs as Multus reads them, not only as they are usually written: keys in any case or
// escaped (Go's encoding/json matches both), the thick plugin's shim with no network named, and a
// clusterNetwork that is relative or holds a NUL. None may break a config beside it.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../helpers/fixtures.js';
import { freePort, NodeHost, probe } from '../../helpers/node-host.js';
import { writeInPlace } from '../../helpers/primaries.js';
import { waitFor } from '../../helpers/wait.js';

const CALICO = '10-calico.conflist';

function multusWith(members: string, type = '"multus"', name = 'multus-cni-network'): string {
  return `{\n  "cniVersion": "0.3.1",\n  "name": "${name}",\n  "type": ${type},\n${members}\n}\n`;
}

/**
 * A node with Calico's conflist and `meta` as 00-multus.conf: the agent started on it, Calico chained
 * and /readyz 200, and Multus' file neither touched nor converted.
 */
async function chainedBehind(meta: string) {
  const host = new NodeHost();
  host.putFixture(CALICO);
  writeInPlace(host.net('00-multus.conf'), meta);
  const port = await freePort();
  const daemon = await host.started({ HEALTH_PORT: String(port) });
  await waitFor(() => host.isChained(CALICO), 'Calico chained');
  await daemon.ready();
  expect(host.read('00-multus.conf')).toBe(meta);
  expect(existsSync(host.net('00-multus.conflist'))).toBe(false);
  return { host, daemon };
}

describe('Multus as Go reads it', () => {
  it.each([
    ['a capitalised key', '"ClusterNetwork": "/host/etc/cni/net.d/10-calico.conflist"', '"multus"'],
    // No byte of the file spells a Multus key or type as such.
    ['escaped keys and type', '"clusterNetw\\u006frk": "/host/etc/cni/net.d/10-calico.conflist"', '"m\\u0075ltus"'],
  ])('follows %s to its delegate', async (_, member, type) => {
    const { host, daemon } = await chainedBehind(multusWith(`  ${member}`, type, 'meta-network'));
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read(CALICO)).toBe(fixture(CALICO));
  });

  it("never converts thick Multus' shim, which names no network: its daemon runs the next config", async () => {
    const { host, daemon } = await chainedBehind('{\n  "cniVersion": "0.3.1",\n  "name": "multus-cni-network",\n  "type": "multus-shim",\n  "logLevel": "verbose"\n}\n');
    const check = await host.cli(['check']);
    expect(check.code).toBe(0);
    expect((await daemon.stop()).code).toBe(0);
  });

  it.each([
    ['relative', 'etc/cni/net.d/10-calico.conflist'],
    ['holding a NUL', '/etc/cni/net.d/10-calico.conflist\\u0000x'],
  ])('a clusterNetwork %s is named, and the config beside it is still converted', async (_, network) => {
    const host = new NodeHost();
    writeInPlace(host.net('00-multus.conf'), multusWith(`  "clusterNetwork": "${network}"`));
    host.putFixture('99-bridge.conf', '05-single.conf');
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => host.isChained('05-single.conflist'), 'the single-plugin config beside it converted');
    await waitFor(async () => (await probe(port, '/readyz')).body.includes('00-multus.conf'), 'not ready, naming the Multus config');
    expect((await daemon.stop()).code).toBe(0);
  });
});
