// A Multus delegate outside net.d: chained where it lives, and unchained after a SIGKILL even once
// Multus names another network.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../helpers/fixtures.js';
import { NodeHost } from '../../helpers/node-host.js';
import { multusThick, writeInPlace } from '../../helpers/primaries.js';
import { waitFor } from '../../helpers/wait.js';

const OVN = '10-ovn-kubernetes.conflist';
const binary = (host: NodeHost) => path.join(host.binDir, 'linkerd-cni');

/** A Multus thick node whose cluster network lives in Multus' own dir, outside net.d. */
function multusOutsideNetDir(host: NodeHost): string {
  const dir = host.disk('/run/multus/cni/net.d');
  mkdirSync(dir, { recursive: true });
  writeInPlace(path.join(dir, OVN), fixture('10-calico.conflist'));
  // (multusThick writes the path as Multus' own pod sees it: /host/run/multus/...)
  writeInPlace(host.net('00-multus.conf'), multusThick(`/run/multus/cni/net.d/${OVN}`));
  return path.join(dir, OVN);
}

describe('a Multus delegate outside net.d', () => {
  it.each(['stop', 'uninstall'] as const)('is unchained after run, SIGKILL, then %s, before its binary goes', async (end) => {
    const host = new NodeHost();
    const delegate = multusOutsideNetDir(host);
    const first = await host.started();
    await waitFor(() => host.isChained(delegate), 'the delegate is chained');
    await first.stop('SIGKILL');
    if (end === 'stop') {
      const second = await host.started();
      await waitFor(() => host.isChained(delegate), 'chained by the restarted agent');
      expect((await second.stop()).code).toBe(0);
    } else {
      expect((await host.cli(['uninstall'])).code).toBe(0);
    }
    expect(readFileSync(delegate, 'utf8')).toBe(fixture('10-calico.conflist'));
    expect(existsSync(binary(host))).toBe(false);
    expect(readdirSync(host.netDir).sort()).toEqual(['00-multus.conf']);
  });

  it('is unchained by uninstall after a SIGKILL even once Multus names another network', async () => {
    const host = new NodeHost();
    const delegate = multusOutsideNetDir(host);
    host.putFixture('10-flannel.conflist');
    const daemon = await host.started();
    await waitFor(() => host.isChained(delegate), 'the delegate is chained');
    await daemon.stop('SIGKILL');
    // Multus is reconfigured while no agent runs: net.d no longer leads to the old delegate.
    writeInPlace(host.net('00-multus.conf'), multusThick('/etc/cni/net.d/10-flannel.conflist'));
    expect((await host.cli(['uninstall'])).code).toBe(0);
    expect(readFileSync(delegate, 'utf8')).toBe(fixture('10-calico.conflist'));
    expect(host.read('10-flannel.conflist')).toBe(fixture('10-flannel.conflist'));
    expect(existsSync(binary(host))).toBe(false);
  });
});
