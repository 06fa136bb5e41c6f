// Names that used to break a node: a stale parked link beside the primary's own conflist, and
// CNI_OWNED_CONFIG_NAME naming an existing config. Each runs the cycle a node sees (start, SIGKILL,
// restart, stop or uninstall) and looks at the files after it.
import { lstatSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../helpers/fixtures.js';
import { freePort, NodeHost, probe } from '../../helpers/node-host.js';
import { writeInPlace } from '../../helpers/primaries.js';
import { waitFor } from '../../helpers/wait.js';

/** True when the entry exists, as itself: a link to a host path is no file on this machine. */
const present = (file: string) => lstatSync(file, { throwIfNoEntry: false }) !== undefined;

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
    await daemon.ready();
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
