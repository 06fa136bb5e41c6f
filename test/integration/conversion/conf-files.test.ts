// Single-plugin .conf files: which are converted into a chained .conflist, and which are left as they
// are because the runtime, Multus or linkerd's own installer reads them by that name.
import { existsSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../helpers/fixtures.js';
import { freePort, NodeHost, probe } from '../../helpers/node-host.js';
import { writeInPlace } from '../../helpers/primaries.js';
import { waitFor } from '../../helpers/wait.js';

const CALICO = '10-calico.conflist';

describe("linkerd-cni's interface mode: 01-linkerd-cni.conf, the plugin alone", () => {
  const leftover = (type: string) => `{"cniVersion":"0.3.1","name":"linkerd-cni","type":${JSON.stringify(type)},"log_level":"info","kubernetes":{"kubeconfig":"/etc/cni/net.d/ZZZ-linkerd-cni-kubeconfig"}}\n`;

  it("goes, as linkerd's installer deleted it: never converted into a conflist that sorts first; ready, and check agrees", async () => {
    const host = new NodeHost();
    host.putFixture(CALICO);
    host.put('01-linkerd-cni.conf', leftover(String(host.plugin.type)));
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => !existsSync(host.net('01-linkerd-cni.conf')), 'the leftover removed');
    await waitFor(() => host.isChained(CALICO), 'the primary chained');
    expect(existsSync(host.net('01-linkerd-cni.conflist'))).toBe(false);
    await daemon.ready();
    expect((await host.cli(['check'])).code).toBe(0);
    expect((await daemon.stop()).code).toBe(0);
  });

  it('under any other name, or of another content, is left as it is: not ready, saying why', async () => {
    const host = new NodeHost();
    host.putFixture(CALICO);
    host.put('05-linkerd-only.conf', leftover(String(host.plugin.type)));
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(async () => (await probe(port, '/readyz')).body.includes('05-linkerd-only.conf: error (a config of the chained plugin alone is no network'), 'not ready, naming it');
    expect(host.read('05-linkerd-only.conf')).toBe(leftover(String(host.plugin.type)));
    expect(existsSync(host.net('05-linkerd-only.conflist'))).toBe(false);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read('05-linkerd-only.conf')).toBe(leftover(String(host.plugin.type)));
  });
});

describe('extensions the runtime matches case-sensitively', () => {
  it('leaves a single-plugin 00-old-bridge.CONF as it is: no .conflist the runtime would load first', async () => {
    const host = new NodeHost();
    const bridge = fixture('99-bridge.conf');
    writeInPlace(host.net('00-old-bridge.CONF'), bridge);
    host.putFixture('10-flannel.conflist');
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => host.isChained('10-flannel.conflist'), 'the loaded config is chained');
    await daemon.ready();
    expect(readdirSync(host.netDir).filter((n) => n.toLowerCase().startsWith('00-old-bridge'))).toEqual(['00-old-bridge.CONF']);
    expect(host.read('00-old-bridge.CONF')).toBe(bridge);
    const check = JSON.parse((await host.cli(['check', '--json'])).stdout) as { loaded?: string; chained: boolean };
    expect(check.chained).toBe(true);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read('00-old-bridge.CONF')).toBe(bridge);
    expect(host.read('10-flannel.conflist')).toBe(fixture('10-flannel.conflist'));
  });
});
