// Sequences that used to leave a node broken: a Multus delegate outside net.d left chained after its
// binary went, a stale parked link that overwrote and then deleted the primary's own conflist, and a
// `.CONF` the runtime ignored turned into the `.conflist` it loads first. Each runs the whole cycle a
// node sees (start, SIGKILL, restart, stop or uninstall) and looks at the files after it.
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../helpers/fixtures.js';
import { freePort, NodeHost, probe } from '../../helpers/node-host.js';
import { multusThick, writeInPlace } from '../../helpers/primaries.js';
import { waitFor } from '../../helpers/wait.js';

const OVN = '10-ovn-kubernetes.conflist';
const binary = (host: NodeHost) => path.join(host.binDir, 'linkerd-cni');
/** True when the entry exists, as itself: a link to a host path is no file on this machine. */
const present = (file: string) => lstatSync(file, { throwIfNoEntry: false }) !== undefined;

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

/** A single-plugin `.conf` outside net.d, linked into it as `link` (the host path of the target). */
function linkedConf(host: NodeHost, link: string): string {
  const old = host.disk('/etc/cni/old');
  mkdirSync(old, { recursive: true });
  writeInPlace(path.join(old, '10-calico.conf'), fixture('10-calico.conf'));
  symlinkSync('/etc/cni/old/10-calico.conf', host.net(link));
  return path.join(old, '10-calico.conf');
}

describe('a stale parked link beside the primary own conflist', () => {
  it("chains the primary's conflist in place, reports ready, and gives it back byte-identical", async () => {
    const host = new NodeHost();
    // What a SIGKILL right after converting a symlinked `10-calico.conf` leaves, once the primary
    // has written a conflist of its own.
    const target = linkedConf(host, '.10-calico.conf.cni-chainer-link');
    const primary = fixture('10-calico.conflist').replace('"mtu": 0', '"mtu": 1410');
    writeInPlace(host.net('10-calico.conflist'), primary);
    const port = await freePort();
    const daemon = await host.started({ HEALTH_PORT: String(port) });
    await waitFor(() => host.isChained('10-calico.conflist'), 'the primary conflist is chained');
    await waitFor(async () => (await probe(port, '/readyz')).status === 200, 'ready');
    expect(host.read('10-calico.conflist')).toContain('"mtu": 1410');
    expect(present(host.net('10-calico.conf'))).toBe(false);
    expect(present(host.net('.10-calico.conf.cni-chainer-link'))).toBe(false);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read('10-calico.conflist')).toBe(primary);
    expect(present(host.net('10-calico.conf'))).toBe(false);
    expect(readFileSync(target, 'utf8')).toBe(fixture('10-calico.conf'));
  });

  it('uninstall after a SIGKILL leaves a primary conflist written beside a stale link in place', async () => {
    const host = new NodeHost();
    linkedConf(host, '10-calico.conf');
    const daemon = await host.started();
    await waitFor(() => host.isChained('10-calico.conflist') && present(host.net('.10-calico.conf.cni-chainer-link')), 'converted, the link parked');
    await daemon.stop('SIGKILL');
    // The primary writes its own conflist while no agent runs.
    const primary = fixture('10-calico.conflist');
    writeInPlace(host.net('10-calico.conflist'), primary);
    expect((await host.cli(['uninstall'])).code).toBe(0);
    expect(host.read('10-calico.conflist')).toBe(primary);
    // Put back, the old link would sort before the conflist and be loaded instead of it.
    expect(present(host.net('10-calico.conf'))).toBe(false);
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
    await waitFor(async () => (await probe(port, '/readyz')).status === 200, 'ready');
    expect(readdirSync(host.netDir).filter((n) => n.toLowerCase().startsWith('00-old-bridge'))).toEqual(['00-old-bridge.CONF']);
    expect(host.read('00-old-bridge.CONF')).toBe(bridge);
    const check = JSON.parse((await host.cli(['check', '--json'])).stdout) as { loaded?: string; chained: boolean };
    expect(check.chained).toBe(true);
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read('00-old-bridge.CONF')).toBe(bridge);
    expect(host.read('10-flannel.conflist')).toBe(fixture('10-flannel.conflist'));
  });
});

describe('CNI_OWNED_CONFIG_NAME naming an existing config', () => {
  it('never writes over it nor removes it; not ready, naming it', async () => {
    const host = new NodeHost();
    host.putFixture('10-calico.conflist');
    const port = await freePort();
    const env = { HEALTH_PORT: String(port), CNI_PATCH_MODE: 'owned', CNI_OWNED_CONFIG_NAME: '10-calico.conflist' };
    const daemon = await host.started(env);
    await waitFor(async () => (await probe(port, '/readyz')).body.includes('CNI_OWNED_CONFIG_NAME names 10-calico.conflist'), 'not ready, naming the file');
    expect((await probe(port, '/readyz')).status).toBe(503);
    expect(host.read('10-calico.conflist')).toBe(fixture('10-calico.conflist'));
    expect((await daemon.stop()).code).toBe(0);
    expect(host.read('10-calico.conflist')).toBe(fixture('10-calico.conflist'));
    expect((await host.cli(['uninstall'], env)).code).toBe(0);
    expect(host.read('10-calico.conflist')).toBe(fixture('10-calico.conflist'));
  });
});
