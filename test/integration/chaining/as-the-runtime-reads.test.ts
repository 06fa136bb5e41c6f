// Configs as the runtime reads them, not as they usually look (test/cni/as-containerd-loads.test.ts
// holds the planner to containerd's own reading): a `.conf` whose `type` is spelt in capitals is a
// network the runtime runs, so it is converted and chained; a list of no plugins the runtime refuses,
// so it is left byte for byte, not ready, until the primary writes a network into it; a list of the
// chained plugin alone is no network.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { expectedPlugin, fixture } from '../../helpers/fixtures.js';
import { freePort, NodeHost, probe } from '../../helpers/node-host.js';
import { waitFor } from '../../helpers/wait.js';

describe('configs as the runtime reads them', () => {
  it('a .conf with "Type" in capitals (Go matches it) is converted and chained; the stop unchains it', async () => {
    const host = new NodeHost();
    const calico = fixture('10-calico.conf').replace('\n  "type": "calico"', '\n  "Type": "calico"');
    expect(calico).not.toBe(fixture('10-calico.conf'));
    host.put('10-calico.conf', calico);
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => host.isChained('10-calico.conflist'), 'converted and chained');
    expect(existsSync(host.net('10-calico.conf'))).toBe(false);
    await daemon.ready();
    expect((await host.cli(['check'])).code).toBe(0);
    expect((await daemon.stop()).code).toBe(0);
    // As every conversion: the network stays a conflist, the primary's text in it to the byte.
    expect(host.holdsPlugin('10-calico.conflist')).toBe(false);
    expect(host.read('10-calico.conflist')).toContain(calico.trimEnd());
  });

  /** The agent started on a node whose only config is `text`: not ready naming `reason`, the file untouched, `check` failing. */
  async function leftAlone(text: string, reason: string) {
    const host = new NodeHost();
    host.put('10-flannel.conflist', text);
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(async () => (await probe(port, '/readyz')).body.includes(`10-flannel.conflist: ${reason}`), 'not ready, naming it');
    expect(host.read('10-flannel.conflist')).toBe(text);
    const check = await host.cli(['check']);
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(/10-flannel\.conflist {2}invalid/);
    return { host, daemon };
  }

  it('a list of no plugins is left byte for byte and not ready, then chained once the primary fills it', async () => {
    const { host, daemon } = await leftAlone('{\n  "cniVersion": "0.4.0",\n  "name": "k8s-pod-network",\n  "plugins": []\n}\n', 'invalid (its "plugins" list is empty');
    host.putFixture('10-flannel.conflist');
    await waitFor(() => host.isChained('10-flannel.conflist'), 'chained once it is a network');
    await daemon.ready();
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read('10-flannel.conflist')).toBe(fixture('10-flannel.conflist'));
  });

  it('a list of the chained plugin alone is no network: left as it is, not ready, and check says so', async () => {
    const alone = `{\n  "cniVersion": "0.4.0",\n  "name": "k8s-pod-network",\n  "plugins": [${JSON.stringify(expectedPlugin())}]\n}\n`;
    const { daemon } = await leftAlone(alone, 'error (a config of the chained plugin alone is no network');
    expect((await daemon.stop()).code).toBe(0);
  });
});
